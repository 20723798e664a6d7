# shellcheck shell=bash
# Shared locations of the provisioned toolchain. Sourced by bin/setup, script/provision/ and the binstubs.
#
# Everything that is built once per machine lives in a cache directory outside the clone, so that a second
# `bin/setup`, a later CI run and a fresh clone on the same machine reuse it; a cold machine builds it.

# lm_load_constants FILE: sets a shell variable for each KEY=VALUE line of FILE, taking the value as it is written
# (nothing in it is run or expanded); fails on a line that is neither that, a # comment nor empty.
lm_load_constants() {
  local line key
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in '' | '#'*) continue ;; esac
    key="${line%%=*}"
    if [[ "$line" != *=* || ! "$key" =~ ^LM_[A-Z0-9_]+$ ]]; then
      printf '%s: not a KEY=VALUE line: %s\n' "$1" "$line" >&2
      return 1
    fi
    printf -v "$key" '%s' "${line#*=}"
  done <"$1"
}

# The constants Rake reads too (script/toolchain.env says what each one is, and the file's format): the CRuby minors
# LM_RUBY_MINOR_DEFAULT and LM_RUBY_MINOR_SMOKE, the platform gems' LM_PLATFORM_MINORS (an array here), and the
# folders of the cache below. rakelib/toolchain.rb computes LM_CACHE and the folders in it the same way. The file is
# found beside this one without dirname: lm_dev_ruby must work with nothing on the PATH.
case "${BASH_SOURCE[0]}" in */*) LM_CONSTANTS="${BASH_SOURCE[0]%/*}/toolchain.env" ;; *) LM_CONSTANTS=toolchain.env ;; esac
lm_load_constants "$LM_CONSTANTS" || return
IFS=' ' read -r -a LM_PLATFORM_MINORS <<<"$LM_PLATFORM_MINORS"
LM_CACHE="${LEASE_MACHINES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lease_machines}"
LM_ARM64_SYSROOT="$LM_CACHE/$LM_ARM64_SYSROOT_DIR"
LM_TOOLS="$LM_CACHE/$LM_TOOLS_DIR"
LM_GEMS="$LM_CACHE/$LM_GEMS_DIR"

# lm_ruby_prefix MINOR: where that CRuby is installed.
lm_ruby_prefix() { printf '%s/rubies/ruby-%s\n' "$LM_CACHE" "$1"; }

# lm_ruby_bin MINOR: the `ruby` executable of that CRuby, or nothing when it has not been provisioned.
lm_ruby_bin() {
  local bin
  bin="$(lm_ruby_prefix "$1")/bin/ruby"
  if [ -x "$bin" ] && [ -f "$(lm_ruby_prefix "$1")/.provisioned" ]; then printf '%s\n' "$bin"; fi
}

# lm_dev_ruby: the `ruby` the binstubs run. LEASE_MACHINES_RUBY=MINOR names a provisioned CRuby; without it, the
# provisioned default minor when script/provision/debian built one, else the `ruby` on PATH when it is 3.2 or newer
# and has Bundler (bin/setup's path where rubygems.org is reachable). Nothing when there is none.
lm_dev_ruby() {
  if [ -n "${LEASE_MACHINES_RUBY:-}" ]; then
    lm_ruby_bin "$LEASE_MACHINES_RUBY"
  elif [ -n "$(lm_ruby_bin "$LM_RUBY_MINOR_DEFAULT")" ]; then
    lm_ruby_bin "$LM_RUBY_MINOR_DEFAULT"
  elif command -v ruby >/dev/null && ruby -e 'exit Gem::Version.new(RUBY_VERSION) >= Gem::Version.new("3.2") &&
      !Gem::Specification.find_all_by_name("bundler").empty?' 2>/dev/null; then
    command -v ruby
  fi
}

# lm_ruby_minor RUBY: that Ruby's minor ("3.3"), without starting it when it is a provisioned CRuby.
lm_ruby_minor() {
  case "$1" in
    "$LM_CACHE"/rubies/ruby-*/bin/ruby) local minor="${1#"$LM_CACHE"/rubies/ruby-}" && printf '%s\n' "${minor%/bin/ruby}" ;;
    *) "$1" -e 'print RUBY_VERSION[/\A\d+\.\d+/]' ;;
  esac
}

# lm_registry_reachable RUBY: that Ruby gets an answer from rubygems.org's API within 10 seconds (a proxy's refusal
# or a captive portal's page does not count).
lm_registry_reachable() {
  "$1" -rnet/http -e 'uri = URI("https://rubygems.org/api/v1/versions/rake/latest.json")
    answer = Net::HTTP.start(uri.host, uri.port, use_ssl: true, open_timeout: 10, read_timeout: 10) { _1.head(uri.path) }
    exit answer.is_a?(Net::HTTPSuccess)' >/dev/null 2>&1
}

# lm_debian_12: this machine runs Debian 12, where script/provision/debian can build what bin/setup needs.
lm_debian_12() { grep -qsx 'ID=debian' /etc/os-release && grep -qsx 'VERSION_ID="12"' /etc/os-release; }

# lm_bundle_install ROOT RUBY [ARGS...]: `bundle install ARGS` with RUBY's Bundler for each of ROOT's Rails lanes: its
# Gemfile (Rails 8.1's), then each gemfiles/*.gemfile (Rails 7.2's). Bundler rewrites a lock even when nothing in it
# changes; an unchanged one keeps its date, so that the extension (which counts Gemfile.lock among its sources) is not
# rebuilt for nothing.
lm_bundle_install() {
  local root="$1" ruby="$2" gemfile lock kept status=0
  shift 2
  for gemfile in "$root/Gemfile" "$root"/gemfiles/*.gemfile; do
    [ -f "$gemfile" ] || continue
    lock="$gemfile.lock"
    [ "$gemfile" != "$root/Gemfile" ] || lock="$root/Gemfile.lock"
    kept="$(mktemp)"
    [ ! -f "$lock" ] || cp -p "$lock" "$kept"
    (cd "$root" && PATH="$(dirname "$ruby"):$PATH" BUNDLE_GEMFILE="$gemfile" BUNDLE_SILENCE_ROOT_WARNING=1 \
      "$ruby" -S bundle install "$@") || status=$?
    if [ -f "$lock" ] && cmp -s "$lock" "$kept"; then touch -r "$kept" "$lock"; fi
    rm -f "$kept"
    [ "$status" -eq 0 ] || return "$status"
  done
}

# lm_gemfile ROOT: the Gemfile of the Rails lane the binstubs run: $BUNDLE_GEMFILE when it names ROOT's Gemfile or one
# of its gemfiles/*.gemfile (BUNDLE_GEMFILE=gemfiles/rails_7_2.gemfile bin/rake ...; a relative path is from the
# working directory, and symbolic links are resolved on both sides), else ROOT/Gemfile (Rails 8.1's). A BUNDLE_GEMFILE
# that names no such file is said on stderr, not run.
lm_gemfile() {
  local root gemfile="${BUNDLE_GEMFILE:-}" dir
  root="$(cd -P "$1" && pwd)"
  if [ -n "$gemfile" ]; then
    dir="$(cd -P "$(dirname "$gemfile")" 2>/dev/null && pwd)" || dir=""
    gemfile="$dir/$(basename "$gemfile")"
    case "$gemfile" in
      "$root/Gemfile" | "$root"/gemfiles/*.gemfile)
        if [ -n "$dir" ] && [ -f "$gemfile" ]; then
          printf '%s\n' "$gemfile"
          return
        fi
        ;;
    esac
    printf '%s: BUNDLE_GEMFILE=%s is not %s/Gemfile nor one of its gemfiles/*.gemfile: running the Gemfile'"'"'s bundle\n' \
      "bin/${0##*/}" "$BUNDLE_GEMFILE" "$root" >&2
  fi
  printf '%s/Gemfile\n' "$root"
}

# The precompiled platform gems (see rakelib/platform.rake) are built for the aarch64 CRubies too: Debian's builds,
# in LM_ARM64_SYSROOT, run by qemu-aarch64-static.

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

# The files the extension is built from (cargo's, rb_sys's and the rake task's).
LM_EXTENSION_SOURCES=(Cargo.toml Cargo.lock Gemfile.lock core/Cargo.toml core/src sim/Cargo.toml sim/src ffi/Cargo.toml
  ffi/src ext rakelib/compile.rake)

# lm_extension_stale ROOT [MINOR]: true when ROOT's extension is missing, older than a file it is built from, or
# (given MINOR) built for another CRuby minor than MINOR (ROOT/tmp/extension.ruby records the one it was built for).
lm_extension_stale() {
  local so source sources=()
  so="$(lm_extension "$1")"
  [ -f "$so" ] || return 0
  if [ -n "${2:-}" ] && [ "$(cat "$1/tmp/extension.ruby" 2>/dev/null)" != "$2" ]; then return 0; fi
  for source in "${LM_EXTENSION_SOURCES[@]}"; do sources+=("$1/$source"); done
  [ -n "$(find "${sources[@]}" -type f -newer "$so" -print -quit 2>/dev/null)" ]
}

# lm_ensure_extension ROOT: (re)builds ROOT's extension with `bin/rake compile` for the Ruby the binstubs run
# (lm_dev_ruby) when it is missing or stale, saying so in one line on stderr;
# cargo builds incrementally. The build's output goes to ROOT/tmp/compile.log and is shown only when it fails. A
# lock (given up after 10 minutes) keeps two entry points started at once from building side by side.
lm_ensure_extension() {
  local root="$1" ruby minor log="$1/tmp/compile.log" why
  ruby="$(lm_dev_ruby)"
  [ -n "$ruby" ] || { echo "lease_machines: no Ruby to build the extension for; run bin/setup first" >&2; return 1; }
  minor="$(lm_ruby_minor "$ruby")"
  lm_extension_stale "$root" "$minor" || return 0
  mkdir -p "$root/tmp"
  exec 9>"$root/tmp/compile.lock"
  if ! flock -w 600 9; then
    echo "lease_machines: another build of the extension has held $root/tmp/compile.lock for 10 minutes" >&2
    return 1
  fi
  if lm_extension_stale "$root" "$minor"; then
    if [ ! -f "$(lm_extension "$root")" ]; then
      why="not built yet"
    elif [ "$(cat "$root/tmp/extension.ruby" 2>/dev/null)" != "$minor" ]; then
      why="not known to be built for Ruby $minor"
    else
      why="changed since it was built"
    fi
    printf '==> Compiling the native extension (%s; cargo, incremental): %s\n' "$why" \
      lib/lease_machines/lease_machines_native.so >&2
    # The build starts now: a source edited while it runs must still count as newer than what it produces.
    touch "$root/tmp/compile.started"
    if ! "$root/bin/rake" compile 9>&- >"$log" 2>&1 || [ ! -f "$(lm_extension "$root")" ]; then
      tail -n 60 "$log" >&2
      printf 'lease_machines: compiling the extension failed; the whole log is in %s\n' "$log" >&2
      exec 9>&-
      return 1
    fi
    # cargo and rake leave an up-to-date extension untouched: date it from the build's start.
    touch -r "$root/tmp/compile.started" "$(lm_extension "$root")"
    printf '%s\n' "$minor" >"$root/tmp/extension.ruby"
  fi
  exec 9>&-
}
