# frozen_string_literal: true

require "open3"

# The toolchain as Rake sees it: script/toolchain.env's constants, read here as script/toolchain.sh reads them (the
# file says how), and the cache directory they name folders of. What needs one of toolchain.sh's functions (whether
# a CRuby has been provisioned: lm_ruby_bin, lm_cross_ruby_bin) calls it (.call), so that the rule stays in one place.
module Toolchain
  ROOT = File.expand_path("..", __dir__)
  CONSTANTS = File.join(ROOT, "script", "toolchain.env")
  SCRIPT = File.join(ROOT, "script", "toolchain.sh")
  KEY = /\ALM_[A-Z0-9_]+\z/

  module_function

  # KEY => VALUE for each line of FILE, each value as written; raises on a line that is neither KEY=VALUE, a #
  # comment nor empty.
  def read(file)
    File.readlines(file, chomp: true).each_with_index.filter_map do |line, index|
      next if line.empty? || line.start_with?("#")

      key, equals, value = line.partition("=")
      raise "#{file}:#{index + 1}: not a KEY=VALUE line: #{line}" unless equals == "=" && KEY.match?(key)

      [key, value]
    end.to_h
  end

  def constants = @constants ||= read(CONSTANTS).freeze
  def fetch(key) = constants.fetch(key)

  # script/toolchain.sh's LM_CACHE: LEASE_MACHINES_CACHE, else lease_machines under XDG_CACHE_HOME, else under
  # ~/.cache; as with the shell's ${NAME:-default}, a variable set to nothing counts as unset.
  def cache(env = ENV)
    given = ->(name) { env[name] unless env[name].to_s.empty? }
    given["LEASE_MACHINES_CACHE"] || "#{given["XDG_CACHE_HOME"] || "#{env.fetch("HOME", "")}/.cache"}/lease_machines"
  end

  # The folder of the cache a _DIR constant names, as toolchain.sh names it without the _DIR.
  def in_cache(key) = "#{cache}/#{fetch(key)}"
  def arm64_sysroot = in_cache("LM_ARM64_SYSROOT_DIR")
  def tools = in_cache("LM_TOOLS_DIR")
  def gems = in_cache("LM_GEMS_DIR")

  # What toolchain.sh's FUNCTION prints for ARGS, stripped (nothing for a CRuby that has not been provisioned).
  def call(function, *args)
    out, status = Open3.capture2("bash", "-c", '. "$1" && "${@:2}"', "-", SCRIPT, function, *args)
    raise "script/toolchain.sh: #{function} #{args.join(" ")} failed" unless status.success?

    out.strip
  end
end
