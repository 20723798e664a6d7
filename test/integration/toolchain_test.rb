# frozen_string_literal: true

require "test_helper"
require "open3"

# script/toolchain.sh's freshness rule for the checkout's extension, which every entry point (bin/ruby,
# bin/worker-seven, bin/lease_machines, bin/setup) applies before it loads the gem: missing or older than any file
# it is built from means stale. Which Ruby the binstubs run. And script/toolchain.env, the constants the shell and
# Rake (rakelib/toolchain.rb) both read: the same values on both sides.
class ToolchainTest < Minitest::Test
  TOOLCHAIN = File.expand_path("../../script/toolchain.sh", __dir__)
  SOURCES = %w[Cargo.toml Cargo.lock Gemfile.lock core/Cargo.toml core/src/lib.rs sim/Cargo.toml sim/src/lib.rs
               ffi/Cargo.toml ffi/src/lib.rs ext/lease_machines_native/extconf.rb rakelib/compile.rake].freeze

  def setup
    checkout_only!("tests this checkout's scripts")
    plain_suite_only!("runs bash in child processes")
    require_relative "../../rakelib/toolchain"
    @root = scratch_dir("lease_machines-toolchain")
    SOURCES.each { write(_1, at: Time.now - 60) }
  end

  def write(path, at:)
    file = File.join(@root, path)
    FileUtils.mkdir_p(File.dirname(file))
    File.write(file, path)
    File.utime(at, at, file)
  end

  def stale?(minor = "")
    _, status = Open3.capture2e("bash", "-c", '. "$1"; lm_extension_stale "$2" "$3"', "-", TOOLCHAIN, @root, minor)
    status.success?
  end

  def test_a_missing_extension_is_stale
    assert stale?
  end

  def test_an_extension_newer_than_every_source_is_fresh
    write("lib/lease_machines/lease_machines_native.so", at: Time.now)
    refute stale?
  end

  def test_any_source_changed_after_the_build_makes_it_stale
    SOURCES.each do |source|
      write("lib/lease_machines/lease_machines_native.so", at: Time.now - 30)
      refute stale?, "fresh before #{source} changed"
      write(source, at: Time.now)
      assert stale?, "stale after #{source} changed"
      write(source, at: Time.now - 60)
    end
  end

  def test_an_extension_built_for_another_ruby_minor_is_stale_for_this_one
    write("lib/lease_machines/lease_machines_native.so", at: Time.now)
    assert stale?("3.4"), "no record of the Ruby it was built for"
    write("tmp/extension.ruby", at: Time.now)
    File.write(File.join(@root, "tmp/extension.ruby"), "3.3\n")
    assert stale?("3.4")
    refute stale?("3.3")
    refute stale?, "without a minor, only the sources count"
  end

  def test_files_that_do_not_build_the_extension_leave_it_fresh
    write("lib/lease_machines/lease_machines_native.so", at: Time.now - 30)
    %w[core/tests/rules.rs core/benches/table.rs README.md lib/lease_machines/cli.rb].each { write(_1, at: Time.now) }
    refute stale?
  end

  # lm_dev_ruby with LEASE_MACHINES_CACHE under the scratch root and only +path+ on the PATH.
  def dev_ruby(path: File.join(@root, "nothing"), minor: nil)
    env = { "LEASE_MACHINES_CACHE" => File.join(@root, "cache"), "PATH" => path, "LEASE_MACHINES_RUBY" => minor }
    out, status = Open3.capture2(env, "/bin/bash", "-c", '. "$1"; lm_dev_ruby', "-", TOOLCHAIN)
    assert status.success?
    out.chomp
  end

  # An executable named +name+ under the scratch root that exits with +status+ whatever it is asked.
  def fake(name, status: 0)
    write(name, at: Time.now)
    file = File.join(@root, name)
    File.write(file, "#!/bin/sh\nexit #{status}\n")
    File.chmod(0o755, file)
    file
  end

  def provisioned(minor)
    ruby = fake("cache/rubies/ruby-#{minor}/bin/ruby")
    write("cache/rubies/ruby-#{minor}/.provisioned", at: Time.now)
    ruby
  end

  def test_without_a_provisioned_ruby_the_path_ruby_serves_when_it_is_new_enough
    assert_equal "", dev_ruby, "no Ruby at all"
    fake("old/ruby", status: 1)
    assert_equal "", dev_ruby(path: File.join(@root, "old")), "a Ruby older than 3.2 or without Bundler"
    assert_equal fake("new/ruby"), dev_ruby(path: File.join(@root, "new"))
  end

  # The values of variables of script/toolchain.sh (an array's joined by spaces), one a name, with ENV added to its
  # environment; of SCRIPT when given (a copy of it beside another toolchain.env).
  PRINT = '. "$1" || exit; shift; for name; do declare -n value="$name"; printf "%s\n" "${value[*]}"; unset -n value; done'
  def toolchain(*names, env: {}, script: TOOLCHAIN)
    out, status = Open3.capture2(env, "/bin/bash", "-c", PRINT, "-", script, *names)
    assert status.success?
    out.lines(chomp: true)
  end

  def test_the_development_ruby_is_3_3_and_the_source_gem_is_proved_with_3_4
    assert_equal %w[3.3], toolchain("LM_RUBY_MINOR_DEFAULT"), "the one minor Debian's binary pg gem is built for"
    assert_equal %w[3.4], toolchain("LM_RUBY_MINOR_SMOKE")
  end

  def test_rake_reads_every_constant_the_shell_has
    constants = Toolchain.constants
    assert_includes constants.keys, "LM_PLATFORM_MINORS"
    assert_equal constants.values, toolchain(*constants.keys)
  end

  def test_rake_finds_the_cache_and_its_folders_where_the_shell_does
    [{ "LEASE_MACHINES_CACHE" => File.join(@root, "cache") },
     { "LEASE_MACHINES_CACHE" => "", "XDG_CACHE_HOME" => File.join(@root, "xdg") },
     { "LEASE_MACHINES_CACHE" => nil, "XDG_CACHE_HOME" => "", "HOME" => File.join(@root, "home") }].each do |env|
      assert_equal toolchain("LM_CACHE", env: env), [Toolchain.cache(ENV.to_h.merge(env))], env.inspect
    end
    assert_equal toolchain("LM_ARM64_SYSROOT", "LM_TOOLS", "LM_GEMS"),
                 [Toolchain.arm64_sysroot, Toolchain.tools, Toolchain.gems]
  end

  # Both sides read a copy of toolchain.sh's with another toolchain.env beside it.
  def test_a_value_is_taken_as_written_and_any_other_line_is_refused
    script = File.join(@root, "script", "toolchain.sh")
    FileUtils.mkdir_p(File.dirname(script))
    FileUtils.cp(TOOLCHAIN, script)
    constants = File.join(@root, "script", "toolchain.env")
    ran = File.join(@root, "ran")
    expected = { "LM_CODE" => "$(touch #{ran}) `touch #{ran}` ${HOME} \"quoted\" a=b=", "LM_EMPTY" => "",
                 "LM_LAST" => "without a newline" }
    File.write(constants, "# a comment\n\n#{expected.map { "#{_1}=#{_2}" }.join("\n")}")
    assert_equal expected, Toolchain.read(constants)
    assert_equal expected.values, toolchain(*expected.keys, script: script)
    refute File.exist?(ran), "nothing in a value is run"
    ["export LM_X=1", " LM_X=1", "LM_X =1", "LM_X", "lm_x=1", "OTHER=1"].each do |line|
      File.write(constants, "LM_A=1\n#{line}\n")
      assert_raises(RuntimeError, line) { Toolchain.read(constants) }
      _, status = Open3.capture2e("/bin/bash", "-c", '. "$1"', "-", script)
      refute status.success?, "the shell refuses #{line.inspect}"
    end
  end

  def test_a_provisioned_ruby_comes_before_the_path_ruby
    fake("new/ruby")
    assert_equal provisioned("3.3"), dev_ruby(path: File.join(@root, "new"))
  end

  def test_another_provisioned_minor_serves_only_when_named
    fake("new/ruby")
    provisioned("3.4")
    assert_equal File.join(@root, "new/ruby"), dev_ruby(path: File.join(@root, "new")), "3.4 is not the default"
  end

  def test_lease_machines_ruby_names_a_provisioned_minor_and_nothing_else
    fake("new/ruby")
    provisioned("3.3")
    assert_equal "", dev_ruby(path: File.join(@root, "new"), minor: "3.4")
    assert_equal provisioned("3.4"), dev_ruby(path: File.join(@root, "new"), minor: "3.4")
  end

  def test_the_minor_of_a_provisioned_ruby_is_read_from_its_path
    ruby = provisioned("3.3")
    out, status = Open3.capture2({ "LEASE_MACHINES_CACHE" => File.join(@root, "cache") }, "/bin/bash", "-c",
                                 '. "$1"; lm_ruby_minor "$2"', "-", TOOLCHAIN, ruby)
    assert status.success?
    assert_equal "3.3", out.chomp
  end
end
