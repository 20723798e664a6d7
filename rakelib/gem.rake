# frozen_string_literal: true

require "json"
require "open3"
require "rbconfig"
require "tmpdir"

namespace :gem do
  desc "Build the source gem, install it into a fresh GEM_HOME (it compiles there) and run its lease_machines command"
  task :smoke do
    # Outside this checkout's bundle: what a user who ran `gem install` has.
    Bundler.with_unbundled_env { smoke_test_installed_gem }
  end

  def smoke_test_installed_gem
    Dir.mktmpdir("lease_machines-smoke") do |dir|
      sh "gem", "build", GEMSPEC.loaded_from, "--output", File.join(dir, "#{GEMSPEC.full_name}.gem"), "--quiet"
      home = File.join(dir, "home")
      # Dependencies (rb_sys, ruby-progressbar) come from the Ruby's own gems; nothing is fetched.
      env = { "GEM_HOME" => home, "GEM_PATH" => [home, *Gem.path].join(File::PATH_SEPARATOR) }
      sh env, "gem", "install", "--local", "--no-document", File.join(dir, "#{GEMSPEC.full_name}.gem")
      exe = File.join(home, "bin", "lease_machines")
      run = lambda do |*args, expect:|
        out, err, status = Dir.chdir(dir) { Open3.capture3(env, exe, *args) }
        abort "gem:smoke: lease_machines #{args.join(" ")} exited #{status.exitstatus}, not #{expect}:\n#{out}#{err}" \
          unless status.exitstatus == expect
        puts "$ lease_machines #{args.join(" ")}   # exit #{status.exitstatus}", out
        out
      end

      loaded = JSON.parse(run.call("simulate", "--cycles", "2000", "--json", expect: 0))
      abort "gem:smoke: the simulation found violations" unless loaded["violations"].zero? && loaded["audit_valid"]
      run.call("simulate", expect: 0)
      run.call("simulate", "--preset", "failover", expect: 0)
      run.call("simulate", "--cycles", "2000", "--without-fence", expect: 1)

      log = File.join(dir, "events.json")
      script = <<~RUBY
        table = LeaseMachines::Table.new
        table.acquire(resource: "nightly-report", owner: 1, now: 0.0, ttl: 5.0)
        table.acquire(resource: "nightly-report", owner: 2, now: 6.0, ttl: 5.0)
        File.write(ARGV[0], LeaseMachines.events_to_json(table.events))
        File.write(ARGV[0] + ".reversed", LeaseMachines.events_to_json(table.events.reverse))
        # The extension must be the installed gem's, not this checkout's.
        abort "loaded from \#{$LOADED_FEATURES.grep(/lease_machines_native/)}" unless
          $LOADED_FEATURES.grep(/lease_machines_native/).all? { _1.start_with?(ENV["GEM_HOME"]) }
      RUBY
      Dir.chdir(dir) { sh env, RbConfig.ruby, "-rlease_machines", "-e", script, log, verbose: false }
      run.call("audit", log, expect: 0)
      run.call("audit", "#{log}.reversed", expect: 1)
    end
  end
end
