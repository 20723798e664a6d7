# shellcheck shell=bash
# PostgreSQL for the project's PostgreSQL work (development only: the gem depends on neither pg nor a server): Debian
# 12's own server, which examples/support/postgres_cluster.rb starts throwaway clusters of, and the pg gem for CRuby
# 3.3. Debian's ruby-pg source package no longer downloads, and no binary of it exists for Ruby 3.4: the gem is
# Debian trixie's binary build for its libruby3.3, checked, pointed at our CRuby 3.3's libruby and repacked
# (deb2gem.rb). x86_64 only. Sourced by script/provision/debian.

# The server (initdb, pg_ctl, postgres in /usr/lib/postgresql/15/bin) and patchelf, as Debian 12 packages; faketime
# (libfaketime) and iproute2 (ip netns) for bin/worker-seven --postgres's skewed clocks and simulated hosts.
POSTGRES_HOST_PACKAGES=(postgresql patchelf faketime iproute2)

# Debian's binary ruby-pg: the suite it is taken from, the upstream version it must be, the CRuby minor it is built
# for (the Ruby ABI directory it ships, X.Y.0), what its package may depend on, what its pg_ext.so may link.
RUBY_PG_SUITE=trixie
RUBY_PG_VERSION=1.5.6
RUBY_PG_MINOR=3.3
RUBY_PG_DEPENDS="libc6 libpq5 libruby libruby3.3"
RUBY_PG_NEEDED="libc.so.6 libm.so.6 libpq.so.5 libruby-3.3.so.3.3"
RUBY_PG_LIBRUBY=libruby-3.3.so.3.3

# pg_loads RUBY: that Ruby loads the pg gem of RUBY_PG_VERSION and its extension links against a libpq.
pg_loads() {
  "$1" -e 'gem "pg", ARGV[0]; require "pg"; exit PG.library_version >= 150_000' "$RUBY_PG_VERSION" 2>/dev/null
}

# provision_pg MINOR: the pg gem in that CRuby, unless it loads already; said and skipped where there is none.
provision_pg() {
  local minor="$1" ruby
  ruby="$(lm_ruby_bin "$minor")"
  if [ "$(uname -m)" != x86_64 ]; then
    say "Ruby $minor: no pg gem (Debian's binary ruby-pg is used on x86_64 only; this is $(uname -m)): skipped"
    return
  fi
  if [ "$minor" != "$RUBY_PG_MINOR" ]; then
    say "Ruby $minor: no pg gem (Debian builds ruby-pg $RUBY_PG_VERSION for CRuby $RUBY_PG_MINOR only): skipped"
    return
  fi
  if pg_loads "$ruby"; then return; fi

  local version deb tree="$LM_GEMS/ruby-pg.tree" gem
  version="$(suite_version ruby-pg "$RUBY_PG_SUITE")"
  [[ "$version" == "$RUBY_PG_VERSION"-* ]] ||
    { echo "provision: Debian $RUBY_PG_SUITE has ruby-pg '$version', not $RUBY_PG_VERSION" >&2; exit 1; }
  deb="$(debian_deb ruby-pg "$version" amd64)"
  say "Ruby $minor: pg $RUBY_PG_VERSION from Debian $RUBY_PG_SUITE's binary ruby-pg $version (checked, relinked)"
  rm -rf "$tree"
  dpkg-deb -x "$deb" "$tree"
  local so="$tree/usr/lib/x86_64-linux-gnu/ruby/vendor_ruby/$RUBY_PG_MINOR.0/pg_ext.so"
  check_ruby_pg "$deb" "$version" "$so"
  relink_ruby_pg "$ruby" "$so"
  gem="$("$ruby" "$LM_PROVISION/deb2gem.rb" "$tree" "$LM_GEMS")"
  rm -rf "$tree"
  install_gem_files "$minor" ruby-pg "$gem"
  pg_loads "$ruby" || { echo "provision: pg was installed into Ruby $minor but does not load" >&2; exit 1; }
  say "Ruby $minor: pg $("$ruby" -rpg -e 'print PG::VERSION, ", libpq ", PG.library_version')"
}

# check_ruby_pg DEB VERSION SO: the package is what it must be: that version for amd64, depending on nothing but
# RUBY_PG_DEPENDS, its extension an x86_64 shared object that links nothing but RUBY_PG_NEEDED.
check_ruby_pg() {
  local deb="$1" version="$2" so="$3" field depends needed
  for field in "Package ruby-pg" "Version $version" "Architecture amd64"; do
    [ "$(dpkg-deb -f "$deb" "${field%% *}")" = "${field#* }" ] ||
      { echo "provision: $deb: ${field%% *} is not ${field#* }" >&2; exit 1; }
  done
  depends="$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/^ *//; s/[ (].*//' | sort -u | xargs)"
  [ "$depends" = "$RUBY_PG_DEPENDS" ] ||
    { echo "provision: $deb depends on $depends, not only on $RUBY_PG_DEPENDS" >&2; exit 1; }
  [ -f "$so" ] || { echo "provision: $deb has no ${so##*/} for Ruby $RUBY_PG_MINOR" >&2; exit 1; }
  readelf -h "$so" | grep -q 'Machine: *Advanced Micro Devices X86-64' ||
    { echo "provision: $so is not an x86_64 object" >&2; exit 1; }
  needed="$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | xargs)"
  [ "$needed" = "$RUBY_PG_NEEDED" ] ||
    { echo "provision: $so links $needed, not $RUBY_PG_NEEDED" >&2; exit 1; }
}

# relink_ruby_pg RUBY SO: the extension needs Debian's libruby (libruby-3.3.so.3.3); our CRuby's is named after its
# soname (libruby.so.3.3), so the copy in the gem is made to need that one. Every library it needs must then resolve:
# libruby in that CRuby's lib/, the others on the host (Debian 12's libpq5 15 and libc).
relink_ruby_pg() {
  local ruby="$1" so="$2" soname libdir unresolved
  soname="$("$ruby" -e 'print RbConfig::CONFIG["ENABLE_SHARED"] == "yes" ? RbConfig::CONFIG["LIBRUBY_SONAME"] : ""')"
  libdir="$("$ruby" -e 'print RbConfig::CONFIG["libdir"]')"
  [ -n "$soname" ] || { echo "provision: $ruby has no shared libruby for pg_ext.so to link" >&2; exit 1; }
  patchelf --replace-needed "$RUBY_PG_LIBRUBY" "$soname" "$so"
  unresolved="$(LD_LIBRARY_PATH="$libdir" ldd "$so" | grep 'not found' || true)"
  [ -z "$unresolved" ] || { echo "provision: pg_ext.so does not link here:$unresolved" >&2; exit 1; }
  LD_LIBRARY_PATH="$libdir" ldd "$so" | grep -q "$soname => $libdir/" ||
    { echo "provision: pg_ext.so does not link $libdir/$soname" >&2; exit 1; }
}
