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

# The precompiled platform gems (see rakelib/platform.rake): the CRuby minors each fat gem carries, the sysroot of
# Debian's aarch64 builds of those CRubies that qemu-aarch64-static runs them in, and the tools (zig,
# cargo-zigbuild, actionlint).
LM_PLATFORM_MINORS=(3.3 3.4)
LM_ARM64_SYSROOT="$LM_CACHE/sysroots/aarch64-linux-debian"
LM_TOOLS="$LM_CACHE/tools"

# lm_cross_ruby_bin MINOR: that aarch64 `ruby` (a path in the sysroot), or nothing when it has not been provisioned.
lm_cross_ruby_bin() {
  local bin="$LM_ARM64_SYSROOT/usr/bin/ruby$1"
  if [ -x "$bin" ] && [ -f "$LM_ARM64_SYSROOT/.provisioned" ]; then printf '%s\n' "$bin"; fi
}

# lm_cross_ruby_run MINOR ARGS...: runs that aarch64 Ruby under qemu-aarch64-static in the sysroot.
lm_cross_ruby_run() {
  local minor="$1"
  shift
  qemu-aarch64-static -L "$LM_ARM64_SYSROOT" "$LM_ARM64_SYSROOT/usr/bin/ruby$minor" "$@"
}

# The extension a source build leaves in the checkout (`rake compile`), and what it is built from. Every entry point
# that loads the gem from the checkout (bin/ruby and the binstubs on it, bin/setup's last step) calls
# lm_ensure_extension first, so nobody runs a missing or stale extension by accident.
lm_extension() { printf '%s/lib/lease_machines/lease_machines_native.so\n' "$1"; }

# lm_extension_stale ROOT: true when ROOT's extension is missing or older than a file it is built from.
lm_extension_stale() {
  local so
  so="$(lm_extension "$1")"
  [ -f "$so" ] || return 0
  [ -n "$(find "$1/Cargo.toml" "$1/Cargo.lock" "$1/core/Cargo.toml" "$1/core/src" "$1/ffi/Cargo.toml" "$1/ffi/src" \
    "$1/ext" -type f -newer "$so" -print -quit 2>/dev/null)" ]
}

# lm_ensure_extension ROOT: (re)builds ROOT's extension with `bin/rake compile` when it is missing or stale, saying
# so in one line on stderr; cargo builds incrementally. The build's output goes to ROOT/tmp/compile.log and is shown
# only when it fails. A lock keeps two entry points started at once from building side by side.
lm_ensure_extension() {
  local root="$1" log="$1/tmp/compile.log" why
  lm_extension_stale "$root" || return 0
  mkdir -p "$root/tmp"
  exec 9>"$root/tmp/compile.lock"
  flock 9
  if lm_extension_stale "$root"; then
    why="changed since it was built"
    [ -f "$(lm_extension "$root")" ] || why="not built yet"
    printf '==> Compiling the native extension (%s; cargo, incremental): lib/lease_machines/lease_machines_native.so\n' \
      "$why" >&2
    if ! "$root/bin/rake" compile >"$log" 2>&1; then
      tail -n 60 "$log" >&2
      printf 'lease_machines: compiling the extension failed; the whole log is in %s\n' "$log" >&2
      exec 9>&-
      return 1
    fi
    # cargo and rake leave an up-to-date extension untouched: mark it as built from today's sources.
    touch "$(lm_extension "$root")"
  fi
  exec 9>&-
}
