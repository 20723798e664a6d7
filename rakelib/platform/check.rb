# frozen_string_literal: true

require_relative "support"

namespace :platform do
  desc "Check the gems in pkg/ as a gem-build test would (contents, platform, Ruby versions, glibc floor)"
  task :check do
    Platform.checked_platforms.each { Platform.check_native_gem(_1) }
    Platform.check_source_gem
  end
end
