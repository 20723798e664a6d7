# shellcheck shell=bash
# The gems the build and the suite need, for one provisioned CRuby, without rubygems.org: pure-Ruby gems from
# Debian's arch:all packages repacked as .gem files (script/provision/deb2gem.rb), gems with C extensions built from
# Debian's source packages, the pure-Ruby gems that need those, then `bundle install --local` against the committed
# Gemfile.lock. Ruby's bundled gems (minitest, racc, rake, rbs, test-unit) come with Ruby. Sourced by
# script/provision/debian.

# Pure-Ruby gems from Debian's archive (arch:all binary packages), in dependency order.
DEBIAN_GEMS=(ruby-rake-compiler-dock ruby-rb-sys rake-compiler ruby-benchmark-ips ruby-progressbar ruby-mini-portile2
  # ActiveJob and ActiveRecord 7.2 for `lease_machines/jobs` on the second Rails lane (gemfiles/rails_7_2.gemfile;
  # Rails 8.1, the main lane's, comes from local_gems.sh; development only). Their other dependencies
  # (base64, benchmark, bigdecimal, drb, logger, minitest, securerandom, timeout) are default or bundled gems of
  # CRuby 3.3 and 3.4.
  ruby-concurrent ruby-i18n ruby-tzinfo ruby-connection-pool ruby-activesupport ruby-globalid ruby-activemodel
  ruby-activerecord ruby-activejob)

# Pure-Ruby gems installed after DEBIAN_SOURCE_GEMS, because they need one of those, in dependency order: Rails'
# railties 7.2 for the Railtie, the install generator and the dummy app of lease_machines/jobs (development
# only), with the ActionPack and ActionView it loads (`require "rails"` loads action_dispatch/railtie); loofah,
# rails-html-sanitizer, rails-dom-testing, actionview, actionpack and railties need nokogiri. Their other
# dependencies (base64, cgi, irb, minitest, racc, rake, tsort) are default or bundled gems of CRuby 3.3 and 3.4.
# Rails 8.1 (local_gems.sh) needs nothing beyond these either. Then, for the benchmarks of the lease stores against
# PostgreSQL and Redis (the Gemfile's :bench group), trixie's with_advisory_lock 5.1.0 (it needs activerecord and
# zeitwerk) and redis-client 0.22.2 (it needs connection_pool); and Sidekiq 7.3.2 for the Sidekiq tests of the Redis
# store (it needs redis-client, connection_pool, rack, logger): trixie's, with trixie's connection_pool 2.4.1 beside
# sid's 3.0 (Sidekiq 7.3's scheduler calls ConnectionPool::TimedStack#pop as 2.x has it; the Gemfile pins 2.x). Sid's
# Sidekiq 8.1 cannot be installed here: it needs json 2.16 or newer, a C extension whose Debian source package (sid's
# ruby-json 3.1.0, or trixie's 2.9.1) no longer downloads, and CRuby 3.3 and 3.4 carry json 2.7 and 2.9.
DEBIAN_GEMS_AFTER_SOURCE_GEMS=(ruby-method-source ruby-thor ruby-zeitwerk ruby-rack ruby-rackup ruby-rack-session
  ruby-rack-test ruby-useragent ruby-builder ruby-erubi ruby-crass ruby-loofah ruby-rails-html-sanitizer
  ruby-rails-dom-testing ruby-actionview ruby-actionpack ruby-railties
  ruby-with-advisory-lock/trixie ruby-redis-client/trixie ruby-connection-pool/trixie
  ruby-sidekiq/trixie)

# What those gems need on the host, as Debian 12 packages: tzinfo reads the zone files of tzdata (Debian's
# ruby-tzinfo depends on it), which a minimal Debian 12 image may not have; nokogiri is built against Debian 12's
# own libxml2 and libxslt (found with pkg-config), which need zlib; the benchmark of redis-client a Redis server.
GEM_HOST_PACKAGES=(tzdata libxml2-dev libxslt1-dev zlib1g-dev pkg-config redis-server)

# Gems with C extensions, built from Debian's source packages against Debian 12's libraries: "source-package
# gem-name [-- build options]". nokogiri (for railties' rails-html-sanitizer and rails-dom-testing, see
# DEBIAN_GEMS_AFTER_SOURCE_GEMS; development only) needs mini_portile2 (DEBIAN_GEMS) for its bundled gumbo
# parser and racc (a bundled gem).
DEBIAN_SOURCE_GEMS=("ruby-sqlite3 sqlite3 -- --enable-system-libraries"
  "ruby-nokogiri nokogiri -- --use-system-libraries")

# gem_version DEBIAN_VERSION: the gem version of a Debian package version, without its epoch, its Debian revision
# and the suffix of a repacked upstream tarball (2:7.2.4+dfsg-2 -> 7.2.4, 1.19.4+dfsg-1 -> 1.19.4).
gem_version() { sed 's/^[0-9]*://; s/-[^-]*$//; s/[+~]\(dfsg\|ds\)[0-9]*$//' <<<"$1"; }

# suite_version PACKAGE SUITE: the newest version of the binary package PACKAGE that SUITE lists.
suite_version() {
  apt_private_cache madison "$1" 2>/dev/null |
    awk -F' *[|] *' -v suite="$2" 'index($3, " " suite "/") { print $2 }' | sort -urV | head -n1
}

# debian_deb PACKAGE VERSION ARCH: the path of that .deb in the cache, downloaded first when it is not there yet.
debian_deb() {
  local debs="$LM_CACHE/debs" deb
  # apt-get download names the file after the version, an epoch's colon written as %3a (ruby-activesupport's 2:).
  deb="$debs/${1}_${2//:/%3a}_$3.deb"
  mkdir -p "$debs"
  [ -f "$deb" ] || (cd "$debs" && apt_private download "$1=$2" >/dev/null) || return 1
  printf '%s\n' "$deb"
}

# install_gem_files MINOR PACKAGE GEM_FILE...: those .gem files (made from Debian's PACKAGE) installed into that
# CRuby, each unless its version is installed already.
install_gem_files() {
  local minor="$1" pkg="$2" gem_cmd gem_file gem_name gem_version
  shift 2
  gem_cmd=("$(dirname "$(lm_ruby_bin "$minor")")/gem")
  for gem_file in "$@"; do
    gem_name="$(basename "$gem_file" .gem)"
    gem_version="${gem_name##*-}"
    gem_name="${gem_name%-*}"
    if "${gem_cmd[@]}" list -i "^${gem_name}\$" -v "$gem_version" >/dev/null; then continue; fi
    say "Ruby $minor: installing $gem_name $gem_version (from Debian's $pkg)"
    # From the gems' folder, where --local finds the .gem files of their dependencies.
    (cd "$(dirname "$gem_file")" && "${gem_cmd[@]}" install --local --no-document "$gem_file" >/dev/null)
  done
}

# install_debian_gems MINOR PACKAGE...: those Debian packages' gems, in that order: the newest version any suite
# lists, or for PACKAGE/SUITE the newest that SUITE lists (trixie's, where sid has moved on).
install_debian_gems() {
  local minor="$1" ruby gems="$LM_GEMS" entry
  shift
  ruby="$(lm_ruby_bin "$minor")"
  mkdir -p "$gems"
  # "PACKAGE VERSION" for every version of those packages the index lists, from one look at it (each look reads all
  # of sid's index: about 2 seconds). apt-cache fails when one of them is missing; the loop says which.
  local index
  index="$(apt_private_cache show "${@%/*}" 2>/dev/null |
    awk '/^Package: / { name = $2 } /^Version: / { print name, $2 }' || true)"
  for entry in "$@"; do
    local pkg="${entry%/*}" version deb
    if [[ "$entry" == */* ]]; then
      version="$(suite_version "$pkg" "${entry#*/}")"
    else
      version="$(awk -v pkg="$pkg" '$1 == pkg { print $2 }' <<<"$index" | sort -urV | head -n1)"
    fi
    [ -n "$version" ] || { echo "provision: Debian has no package $entry" >&2; exit 1; }
    deb="$(debian_deb "$pkg" "$version" all)"
    # The .deb is repacked once for every CRuby: $built lists the .gem files deb2gem.rb wrote from it, and is used
    # while it is newer than the .deb and deb2gem.rb and every file it lists is there.
    local built="$gems/${deb##*/}.gems" gem_file fresh=false
    if [ "$built" -nt "$deb" ] && [ "$built" -nt "$LM_PROVISION/deb2gem.rb" ]; then
      fresh=true
      while read -r gem_file; do [ -f "$gem_file" ] || fresh=false; done <"$built"
    fi
    if ! $fresh; then
      "$ruby" "$LM_PROVISION/deb2gem.rb" "$deb" "$gems" >"$built.new"
      mv "$built.new" "$built"
    fi
    # shellcheck disable=SC2046 # one .gem path per line, without spaces
    install_gem_files "$minor" "$pkg" $(cat "$built")
  done
}

# install_debian_source_gems MINOR
install_debian_source_gems() {
  local minor="$1" ruby gem_cmd entry
  ruby="$(lm_ruby_bin "$minor")"
  gem_cmd=("$(dirname "$ruby")/gem")
  for entry in "${DEBIAN_SOURCE_GEMS[@]}"; do
    local package gem_name build_args=() version tree upstream
    read -r package gem_name _ <<<"$entry"
    [[ "$entry" == *" -- "* ]] && read -r -a build_args <<<"${entry#* -- }"
    local found tarball listed installed
    # Already built from one of the versions the index lists: nothing to download.
    listed="$(apt_private_cache showsrc "$package" | sed -n 's/^Version: //p' |
      while read -r v; do gem_version "$v"; done | sort -u)"
    installed="$("${gem_cmd[@]}" list -e "$gem_name" 2>/dev/null | sed -n 's/^[^ ]* (\(.*\))$/\1/p' | tr -d ' ' | tr ',' '\n' | sed 's/^default://')"
    if [ -n "$installed" ] && grep -qxF -f <(printf '%s\n' "$installed") <(printf '%s\n' "$listed"); then continue; fi
    found="$(fetch_source "$package" "$LM_CACHE/src/$package")"
    read -r version tarball <<<"$found"
    upstream="$(gem_version "$version")"
    if "${gem_cmd[@]}" list -i "^${gem_name}\$" -v "$upstream" >/dev/null; then continue; fi
    say "Ruby $minor: building $gem_name $upstream from Debian's $package source package"
    tree="$LM_CACHE/src/$package/tree-$version"
    unpack "$tarball" "$tree"
    (
      cd "$tree"
      "${gem_cmd[@]}" build "$gem_name.gemspec" >/dev/null 2>&1
      "${gem_cmd[@]}" install --local --no-document "$gem_name-$upstream.gem" -- "${build_args[@]}" >/dev/null
    )
    rm -rf "$tree"
  done
}

# bundle_local MINOR: the bundle of Gemfile.lock for that CRuby (the default minor: the lock pins its bundled gems),
# from the gems installed above (no registry).
bundle_local() {
  say "Ruby $1: bundle install --local"
  lm_bundle_install "$LM_ROOT" "$(lm_ruby_bin "$1")" --local --quiet
}
