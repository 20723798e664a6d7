# frozen_string_literal: true

# The checkout's Gemfile (bin/ruby sets BUNDLE_GEMFILE to it).
require "bundler/setup"
