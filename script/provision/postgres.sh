# shellcheck shell=bash
# PostgreSQL for the project's PostgreSQL work (development only: the gem depends on neither pg nor a server): Debian
# 12's own server, which examples/support/postgres_cluster.rb starts throwaway clusters of, and libpq's headers, which
# the pg gem (compiled from its source gem for every CRuby: local_gems.sh) builds against. Sourced by
# script/provision/debian.

# The server (initdb, pg_ctl, postgres in /usr/lib/postgresql/15/bin) and libpq-dev (pg_config, libpq-fe.h), as Debian
# 12 packages; faketime (libfaketime) and iproute2 (ip netns) for bin/worker-seven --postgres's skewed clocks and
# simulated hosts.
POSTGRES_HOST_PACKAGES=(postgresql libpq-dev faketime iproute2)

# check_pg MINOR: that CRuby loads the pg gem, linked against Debian 12's libpq; says which.
check_pg() {
  local ruby
  ruby="$(lm_ruby_bin "$1")"
  "$ruby" -e 'require "pg"; exit PG.library_version >= 150_000' 2>/dev/null ||
    { echo "provision: pg was installed into Ruby $1 but does not load" >&2; exit 1; }
}
