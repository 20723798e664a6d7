# shellcheck shell=bash
# MySQL and MariaDB for the project's MySQL work (development only: the gem depends on neither mysql2 nor a server):
# Debian 12's own MariaDB server (10.11), which examples/support/mysql_server.rb starts throwaway servers of, and
# MariaDB Connector/C's headers, which the mysql2 gem (compiled from its source gem for every CRuby: local_gems.sh)
# builds against. Sourced by script/provision/debian.

# The server (mariadbd, mariadb-install-db) and libmariadb-dev (mariadb_config, mysql.h), as Debian 12 packages.
# The package's own service is never used: the suite starts its servers with --no-defaults in directories of their own.
MYSQL_HOST_PACKAGES=(mariadb-server libmariadb-dev)

# check_mysql2 MINOR: that CRuby loads the mysql2 gem.
check_mysql2() {
  local ruby
  ruby="$(lm_ruby_bin "$1")"
  "$ruby" -e 'require "mysql2"' 2>/dev/null ||
    { echo "provision: mysql2 was installed into Ruby $1 but does not load" >&2; exit 1; }
}
