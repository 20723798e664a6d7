# frozen_string_literal: true

require "fileutils"
require "rbconfig"
require "tmpdir"
require_relative "installed_gem"

namespace :gem do
  desc "Build the source gem, install it into a fresh GEM_HOME (it compiles there), run its command and the suite"
  task :smoke do
    # Outside this checkout's bundle: what a user who ran `gem install` has. Dependencies (rb_sys,
    # ruby-progressbar) come from the Ruby's own gems; nothing is fetched.
    Bundler.with_unbundled_env do
      ruby = [RbConfig.ruby]
      key = InstalledGem.digest(ruby, GEMSPEC.files)
      if InstalledGem.proved?(key)
        puts "==> the source gem of exactly these files was already installed and proved with #{RUBY_DESCRIPTION} " \
             "(rake platform:prove; tmp/proved/#{key[0, 12]}): not again"
        next
      end
      Dir.mktmpdir("lease_machines-smoke") do |dir|
        gem = File.join(dir, "#{GEMSPEC.full_name}.gem")
        sh "gem", "build", GEMSPEC.loaded_from, "--output", gem, "--quiet"
        InstalledGem.prove("the source gem, Ruby #{RUBY_VERSION}", ruby, gem, env: InstalledGem.source_gem_env,
                                                                           gem_path: Gem.path)
      end
      InstalledGem.proved!(key)
    end
  end
end
