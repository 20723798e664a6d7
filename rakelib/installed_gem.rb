# frozen_string_literal: true

require "digest"
require "fileutils"
require "json"
require "open3"
require "rbconfig"
require "tempfile"
require "tmpdir"
require_relative "toolchain"

# One proof for every gem the project builds (rake gem:smoke for the source gem, rake platform:prove for the
# precompiled ones): install the .gem into a fresh GEM_HOME, as a user's `gem install` would, then run its
# `lease_machines` command and the whole test suite against the installed copy.
module InstalledGem
  ROOT = File.expand_path("..", __dir__)
  TEST_FILES = -> { Dir[File.join(ROOT, "test", "*", "*_test.rb")].sort } # test/<area>/, as rake test runs them
  # The event log of core/FORMAT.md (an acquire, then a transfer), also the README's `lease_machines audit` example.
  EVENT_LOG = File.join(ROOT, "examples", "events.json")
  # Proofs already passed, by the digest of what was proved (see .proved?): tmp/ is the checkout's own.
  PROVED = File.join(ROOT, "tmp", "proved")

  module_function

  # The Ruby the source gem is proved with (rake gem:smoke; rake platform:prove too): the provisioned CRuby of
  # script/toolchain.env's LM_RUBY_MINOR_SMOKE (3.4, the newest minor, while the development Ruby is 3.3) when
  # bin/setup built one, else the Ruby running rake (where rubygems.org gave the Ruby its gems, as on GitHub).
  def smoke_ruby
    provisioned = Toolchain.call("lm_ruby_bin", Toolchain.fetch("LM_RUBY_MINOR_SMOKE"))
    provisioned.empty? ? RbConfig.ruby : provisioned
  end

  # Cargo's target directory: the workspace's, or CARGO_TARGET_DIR (script/readme-check keeps one across CI runs).
  def cargo_target = File.expand_path(ENV.fetch("CARGO_TARGET_DIR", File.join(ROOT, "target")), ROOT)

  # The environment a source gem compiles in on install: rb_sys's build puts cargo's output in the gem's own
  # directory unless RB_SYS_CARGO_TARGET_DIR names another; one shared place lets the crates the extension depends
  # on be built once (the gem's own crates, in a new directory each time, are always compiled).
  def source_gem_env = { "RB_SYS_CARGO_TARGET_DIR" => File.join(cargo_target, "installed-gem") }

  # `gem` for any RUBY, whatever its executables are called (Debian's is gem3.4).
  GEM = ["-e", 'require "rubygems/gem_runner"; Gem::GemRunner.new.run(ARGV)', "--"].freeze

  # Installs GEM with RUBY (a command Array: a Ruby, or qemu and an aarch64 Ruby), after DEPENDENCIES (.gem files),
  # then proves it. LABEL names the proof in the output, which goes to OUT; ENV adds to the proof's environment.
  # Under qemu every Ruby started costs seconds (rubygems alone loads for 5 s), so the proof starts few: one
  # install, one per command, one suite.
  # GEM_PATH, when given, is where else the gem's dependencies are installed (a bundle's path, on GitHub); without
  # it, rubygems searches GEM_HOME and then the Ruby's own default path (its bundled gems, and what bin/setup
  # installed), which needs no Ruby started to find out.
  def prove(label, ruby, gem, env: {}, dependencies: [], gem_path: nil, out: $stdout)
    Dir.mktmpdir("lease_machines-prove") do |home|
      out.puts "==> #{label}: #{File.basename(gem)} installed into a fresh GEM_HOME"
      env = env.merge("GEM_HOME" => home, "GEM_PATH" => gem_path && [home, *gem_path].join(File::PATH_SEPARATOR),
                      "LEASE_MACHINES_TEST_INSTALLED" => "1", "RUBYLIB" => nil, "RUBYOPT" => nil)
      system(env, *ruby, *GEM, "install", "--local", "--no-document", "--quiet", *dependencies, gem,
             out: out, err: out, exception: true)
      run_commands(label, ruby, env, home, out)
      runner = "ARGV.each { |file| require file }"
      system(env, *ruby, "-I", File.join(ROOT, "test"), "-e", runner, *TEST_FILES.call, chdir: home, out: out, err: out,
                                                                                          exception: true)
    end
  end

  # Runs JOBS (blocks that take the IO their output goes to) side by side, one thread each: most are one process at
  # a time (a suite, a Ruby under qemu, a link), so two cores finish them sooner together. Prints each one's output
  # whole, in order, and raises the first failure once all have ended.
  def side_by_side(jobs)
    runs = jobs.map do |job|
      log = Tempfile.create("lease_machines-job")
      log.sync = true
      thread = Thread.new { job.call(log) }
      thread.report_on_exception = false
      [log, thread]
    end
    failure = nil
    runs.each do |log, thread|
      begin
        thread.join
      rescue StandardError => e
        failure ||= e
      end
      print File.read(log.path)
      log.close
      File.unlink(log.path)
    end
    raise failure if failure
  end

  # The installed `lease_machines` command, run by RUBY directly (under qemu no Ruby can start a child Ruby, so
  # test/cli/cli_test.rb skips itself there): each command and the exit status it must end with. The audit with a
  # finding reads the example log in reverse order (time and tokens run backwards).
  def run_commands(label, ruby, env, home, out)
    command = [*ruby, File.join(home, "bin", "lease_machines")]
    reversed = File.join(home, "reversed.json")
    File.write(reversed, JSON.parse(File.read(EVENT_LOG)).tap { _1["events"].reverse! }.to_json)
    [[%w[simulate --cycles 2000 --json], 0], [%w[simulate --preset failover], 0],
     [%w[simulate --cycles 2000 --without-fence], 1], [["audit", EVENT_LOG], 0], [["audit", reversed], 1]]
      .each do |args, expected|
        said, status = Open3.capture2e(env, *command, *args, chdir: home)
        raise "#{label}: lease_machines #{args.join(" ")} exited #{status.exitstatus}, not #{expected}:\n#{said}" \
          unless status.exitstatus == expected

        if args.include?("--json")
          report = JSON.parse(said)
          safe = report["violations"].zero? && report["audit_valid"]
          raise "#{label}: the simulation found violations:\n#{said}" unless safe
        end
        out.puts "    lease_machines #{args.join(" ")}: exit #{expected}, #{said.lines.last.strip[0, 100]}"
      end
  end

  # Runs RUBY (a command Array) with ARGS outside this process's bundle: RUBY may be another CRuby, which must not
  # load this one's Gemfile.lock (Bundler's RUBYOPT and BUNDLE_GEMFILE are dropped).
  def capture(ruby, env, *args, chdir: ROOT)
    run = -> { Open3.capture2e(env, *ruby, *args, chdir: chdir) }
    out, status = defined?(Bundler) ? Bundler.with_unbundled_env(&run) : run.call
    raise "#{ruby.last} #{args.first(2).join(" ")} failed:\n#{out}" unless status.success?

    out
  end

  # RUBY_VERSION of RUBY (a command Array).
  def ruby_version(ruby) = ruby == [RbConfig.ruby] ? RUBY_VERSION : capture(ruby, {}, "-e", "print RUBY_VERSION")

  # A proof is named by the digest of everything it depends on: the files the gem is built from (FILES, and the
  # gemspec), the test files, the example log, this helper, the Ruby and the Rust toolchain. A proof that passed is
  # not run again for the same digest (rake platform proves the source gem, and bin/test need not prove it a second
  # time). rake platform:gems records the digest of the files it packaged (.digest beside the gem), so that what
  # platform:prove stamps is what it installed, not what the work tree holds now.
  def digest(ruby, files)
    sha = Digest::SHA256.new
    inputs = files + ["lease_machines.gemspec", EVENT_LOG, __FILE__] + Dir[File.join(ROOT, "test", "{*,*/*}.rb")]
    inputs.map { File.expand_path(_1, ROOT) }.sort.uniq.each do |file|
      sha << file << "\0" << File.binread(file) << "\0"
    end
    sha << ruby.join(" ") << capture(ruby, {}, "-e", "print RUBY_DESCRIPTION")
    sha << Open3.capture2e("rustc", "-V").first << Open3.capture2e("cargo", "-V").first
    sha.hexdigest
  end

  def proved?(key) = File.exist?(File.join(PROVED, key))

  def proved!(key)
    FileUtils.mkdir_p(PROVED)
    FileUtils.touch(File.join(PROVED, key))
  end
end
