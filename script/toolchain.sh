# shellcheck shell=bash
# Shared locations of the provisioned toolchain. Sourced by bin/setup and the binstubs.
#
# Everything that is built once per machine lives in a cache directory outside the clone, so that a second
# `bin/setup`, a later CI run and a fresh clone on the same machine reuse it; a cold machine builds it.

# The CRuby minor the gem is developed against, and the Debian source package it is built from. Versions are tried
# newest first: the archive's index can list versions whose files are already gone.
LM_RUBY_MINOR_DEFAULT=3.4
LM_CACHE="${LEASE_MACHINES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lease_machines}"

# lm_ruby_prefix MINOR: where that CRuby is installed.
lm_ruby_prefix() { printf '%s/rubies/ruby-%s\n' "$LM_CACHE" "$1"; }

# lm_ruby_bin MINOR: the `ruby` executable of that CRuby, or nothing when it has not been provisioned.
lm_ruby_bin() {
  local bin
  bin="$(lm_ruby_prefix "$1")/bin/ruby"
  if [ -x "$bin" ] && [ -f "$(lm_ruby_prefix "$1")/.provisioned" ]; then printf '%s\n' "$bin"; fi
}

# The precompiled platform gems (see rakelib/platform.rake): the CRuby minors each fat gem carries, the aarch64
# CRubies cross-built for them, the arm64 sysroot they run in under qemu, and the tools (zig, cargo-zigbuild,
# actionlint).
LM_PLATFORM_MINORS=(3.3 3.4)
LM_ARM64_SYSROOT="$LM_CACHE/sysroots/aarch64-linux"
LM_TOOLS="$LM_CACHE/tools"

# lm_cross_prefix MINOR: where the aarch64-linux CRuby of that minor is installed.
lm_cross_prefix() { printf '%s/rubies/aarch64-linux/ruby-%s\n' "$LM_CACHE" "$1"; }

# lm_cross_ruby_bin MINOR: that aarch64 `ruby`, or nothing when it has not been provisioned.
lm_cross_ruby_bin() {
  local prefix
  prefix="$(lm_cross_prefix "$1")"
  if [ -x "$prefix/bin/ruby" ] && [ -f "$prefix/.provisioned" ]; then printf '%s\n' "$prefix/bin/ruby"; fi
}
