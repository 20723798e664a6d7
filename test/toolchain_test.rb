# frozen_string_literal: true

require "test_helper"
require "fileutils"
require "open3"
require "tmpdir"

# script/toolchain.sh's freshness rule for the checkout's extension, which every entry point (bin/ruby,
# bin/worker-seven, bin/lease_machines, bin/setup) applies before it loads the gem: missing or older than any file
# it is built from means stale.
class ToolchainTest < Minitest::Test
  TOOLCHAIN = File.expand_path("../script/toolchain.sh", __dir__)
  SOURCES = %w[Cargo.toml Cargo.lock Gemfile.lock core/Cargo.toml core/src/lib.rs ffi/Cargo.toml ffi/src/lib.rs
               ext/lease_machines_native/extconf.rb rakelib/compile.rake].freeze

  def setup
    skip "tests this checkout's scripts, not the installed gem" if INSTALLED
    skip "runs bash in child processes; the plain suite covers it" if GC_STRESS || RBS_TEST
    @root = Dir.mktmpdir("lease_machines-toolchain")
    SOURCES.each { write(_1, at: Time.now - 60) }
  end

  def teardown
    FileUtils.remove_entry(@root) if @root
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
end
