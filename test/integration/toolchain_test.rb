# frozen_string_literal: true

require "test_helper"
require "open3"

# script/toolchain.sh's freshness rule for the checkout's extension, which every entry point (bin/ruby,
# bin/worker-seven, bin/lease_machines, bin/setup) applies before it loads the gem: missing or older than any file
# it is built from means stale. And which Ruby the binstubs run.
class ToolchainTest < Minitest::Test
  TOOLCHAIN = File.expand_path("../../script/toolchain.sh", __dir__)
  SOURCES = %w[Cargo.toml Cargo.lock Gemfile.lock core/Cargo.toml core/src/lib.rs sim/Cargo.toml sim/src/lib.rs
               ffi/Cargo.toml ffi/src/lib.rs ext/lease_machines_native/extconf.rb rakelib/compile.rake].freeze

  def setup
    checkout_only!("tests this checkout's scripts")
    plain_suite_only!("runs bash in child processes")
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

  # A variable of script/toolchain.sh.
  def toolchain(name)
    out, status = Open3.capture2("/bin/bash", "-c", '. "$1"; printf %s "${!2}"', "-", TOOLCHAIN, name)
    assert status.success?
    out
  end

  def test_the_development_ruby_is_3_3_and_the_source_gem_is_proved_with_3_4
    assert_equal "3.3", toolchain("LM_RUBY_MINOR_DEFAULT"), "the one minor Debian's binary pg gem is built for"
    assert_equal "3.4", toolchain("LM_RUBY_MINOR_SMOKE")
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
