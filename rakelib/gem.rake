# frozen_string_literal: true

require "fileutils"
require "rbconfig"
require "tmpdir"
require_relative "installed_gem"

namespace :gem do
  desc "Build the source gem, install it into a fresh GEM_HOME (it compiles there), run its command and the suite " \
       "(with CRuby 3.4 where bin/setup built it)"
  task :smoke do
    # Outside this checkout's bundle: what a user who ran `gem install` has. Dependencies (rb_sys,
    # ruby-progressbar) come from the Ruby's own gems; nothing is fetched. The Ruby is CRuby 3.4 where bin/setup
    # provisioned it (InstalledGem.smoke_ruby), so that the newest minor runs the suite too; its gems are its own.
    Bundler.with_unbundled_env do
      ruby = [InstalledGem.smoke_ruby]
      version = InstalledGem.ruby_version(ruby)
      key = InstalledGem.digest(ruby, GEMSPEC.files)
      if InstalledGem.proved?(key)
        puts "==> the source gem of exactly these files was already installed and proved with Ruby #{version} " \
             "(rake platform:prove; tmp/proved/#{key[0, 12]}): not again"
        next
      end
      Dir.mktmpdir("lease_machines-smoke") do |dir|
        gem = File.join(dir, "#{GEMSPEC.full_name}.gem")
        sh "gem", "build", GEMSPEC.loaded_from, "--output", gem, "--quiet"
        InstalledGem.prove("the source gem, Ruby #{version}", ruby, gem, env: InstalledGem.source_gem_env,
                                                                     gem_path: ruby == [RbConfig.ruby] ? Gem.path : nil)
      end
      InstalledGem.proved!(key)
    end
  end
end
