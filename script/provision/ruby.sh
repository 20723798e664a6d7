# shellcheck shell=bash
# CRuby built from Debian's source package into a prefix under the cache directory (Debian 12's own Ruby is 3.1,
# which has no `Data`), with Ruby's own build dependencies. Sourced by script/provision/debian.

# CRuby minor -> Debian source package (its versions are tried newest first).
declare -A RUBY_SOURCE=([3.4]=ruby3.4 [3.3]=ruby3.3)

# What Ruby's configure needs on the host, and libclang for rb-sys's bindgen.
RUBY_BUILD_PACKAGES=(
  build-essential autoconf bison pkg-config dpkg-dev xz-utils ca-certificates
  libssl-dev libyaml-dev zlib1g-dev libffi-dev libgmp-dev libreadline-dev
  libclang-dev libsqlite3-dev
)

# provision_ruby MINOR: that CRuby, unless the cache already has it.
provision_ruby() {
  local minor="$1" package="${RUBY_SOURCE[$1]:-}"
  [ -n "$package" ] || { echo "provision: no Debian source package known for Ruby $minor" >&2; exit 2; }
  if [ -n "$(lm_ruby_bin "$minor")" ]; then
    say "Ruby $minor: $("$(lm_ruby_bin "$minor")" -v) (cached in $(lm_ruby_prefix "$minor"))"
    return
  fi

  local src="$LM_CACHE/src/$package" prefix found fetched tarball
  prefix="$(lm_ruby_prefix "$minor")"
  found="$(fetch_source "$package" "$src")"
  read -r fetched tarball <<<"$found"

  local tree="$src/tree-$fetched"
  say "Building CRuby from $package $fetched (upstream sources, about 4 minutes on 2 cores)"
  unpack "$tarball" "$tree"
  (
    cd "$tree"
    ./configure --prefix="$prefix" --enable-shared --disable-install-doc \
      --with-opt-dir=/usr >"$src/configure.log" 2>&1 || { tail -40 "$src/configure.log"; exit 1; }
    make -j"$(nproc)" >"$src/make.log" 2>&1 || { tail -60 "$src/make.log"; exit 1; }
    make install >"$src/install.log" 2>&1 || { tail -40 "$src/install.log"; exit 1; }
  )
  "$prefix/bin/ruby" -e 'Data.define(:a); require "minitest"; require "rake"; require "rbs"' \
    || { echo "provision: the Ruby built in $prefix is incomplete" >&2; exit 1; }
  printf '%s %s\n' "$package" "$fetched" >"$prefix/.provisioned"
  rm -rf "$tree"
}
