# shellcheck shell=bash
# Gems that neither Debian's archive nor (on these machines) rubygems.org provides: Rails 8.1, Solid Queue and what
# they need beyond Debian's packages, and the pg gem as its source gem, compiled here for every CRuby. They are .gem
# files built from their projects' public release tags, in a local directory with a SHA256SUMS file listing them:
# $LEASE_MACHINES_LOCAL_GEMS, else ../shared/gems beside the checkout (or beside the checkout it was cloned from).
# Each file used is checked against that list and copied into the cache (LM_LOCAL_GEMS), so that a later clone
# elsewhere on the machine finds them there. Development only: the released gem depends on none of them. Where
# rubygems.org is reachable, bin/setup's `bundle install` fetches the same versions from it instead. Sourced by
# script/provision/debian.

LM_LOCAL_GEMS="$LM_CACHE/local-gems"

# The pure-Ruby gems, in dependency order ("NAME-VERSION", the .gem file's name): fugit (Solid Queue's schedules)
# needs et-orbi and raabro (sid's, repacked: trixie's et-orbi is too old for fugit 1.13); Rails 8.1.3.1's frameworks
# need only gems that Debian's packages provide (script/provision/gems.sh installs those first); Solid Queue 1.5.0
# needs them and fugit.
LOCAL_GEMS=(raabro-1.5.0 et-orbi-1.4.2 fugit-1.13.0
  activesupport-8.1.3.1 activemodel-8.1.3.1 activerecord-8.1.3.1 activejob-8.1.3.1 actionview-8.1.3.1
  actionpack-8.1.3.1 railties-8.1.3.1 solid_queue-1.5.0)

# Source gems, compiled on install against Debian 12's libraries: "NAME-VERSION [-- build options]". pg needs
# libpq-dev (postgres.sh installs it), mysql2 libmariadb-dev (mysql.sh).
LOCAL_SOURCE_GEMS=("pg-1.6.3 -- --with-pg-config=/usr/bin/pg_config"
  "mysql2-0.5.7 -- --with-mysql-config=/usr/bin/mariadb_config")

# local_gems_source: the directory the .gem files are taken from, or nothing when there is none: also ../shared/gems
# beside the checkout this one was cloned from, when its origin is a path on this machine (a fresh `git clone` of it
# into a temporary directory).
local_gems_source() {
  local dir origin
  origin="$(git -C "$LM_ROOT" remote get-url origin 2>/dev/null || true)"
  case "$origin" in /*) ;; file://*) origin="${origin#file://}" ;; *) origin="" ;; esac
  for dir in "${LEASE_MACHINES_LOCAL_GEMS:-}" "$LM_ROOT/../shared/gems" "${origin:+$origin/../shared/gems}"; do
    if [ -n "$dir" ] && [ -f "$dir/SHA256SUMS" ]; then
      (cd "$dir" && pwd)
      return
    fi
  done
}

# listed DIR NAME: the line of DIR/SHA256SUMS for the file NAME, or nothing.
listed() { awk -v name="$2" '$2 == name || $2 == "*" name { print; exit }' "$1/SHA256SUMS" 2>/dev/null; }

# checked DIR NAME: DIR/NAME is there, with the checksum DIR/SHA256SUMS lists for it.
checked() {
  local line
  line="$(listed "$1" "$2")"
  [ -n "$line" ] && (cd "$1" && sha256sum --check --status <<<"$line")
}

# cache_local_gems: every .gem file of LOCAL_GEMS and LOCAL_SOURCE_GEMS in LM_LOCAL_GEMS, checked against the
# SHA256SUMS of the directory it came from (its line copied beside it); fails, saying where it looked, when one is
# missing or is not what its SHA256SUMS lists.
cache_local_gems() {
  local source entry name missing=()
  source="$(local_gems_source)"
  mkdir -p "$LM_LOCAL_GEMS"
  for entry in "${LOCAL_GEMS[@]}" "${LOCAL_SOURCE_GEMS[@]}"; do
    name="${entry%% *}.gem"
    checked "$LM_LOCAL_GEMS" "$name" && continue
    if [ -z "$source" ] || [ ! -f "$source/$name" ]; then
      missing+=("$name")
      continue
    fi
    checked "$source" "$name" || { echo "provision: $source/$name is not what its SHA256SUMS lists" >&2; exit 1; }
    cp "$source/$name" "$LM_LOCAL_GEMS/$name"
    listed "$source" "$name" >>"$LM_LOCAL_GEMS/SHA256SUMS"
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "provision: without rubygems.org these gems come from a directory of .gem files and their SHA256SUMS," \
      "\$LEASE_MACHINES_LOCAL_GEMS or ../shared/gems beside the checkout (${source:-neither is there});" \
      "missing: ${missing[*]}" >&2
    exit 1
  fi
}

# install_local_gems MINOR: those gems in that CRuby, each unless its version is installed already.
install_local_gems() {
  local minor="$1" gem_cmd entry name build_args
  gem_cmd=("$(dirname "$(lm_ruby_bin "$minor")")/gem")
  for entry in "${LOCAL_GEMS[@]}" "${LOCAL_SOURCE_GEMS[@]}"; do
    name="${entry%% *}"
    build_args=()
    [[ "$entry" == *" -- "* ]] && read -r -a build_args <<<"${entry#* -- }"
    if "${gem_cmd[@]}" list -i "^${name%-*}\$" -v "${name##*-}" >/dev/null; then continue; fi
    say "Ruby $minor: installing ${name%-*} ${name##*-} (from $LM_LOCAL_GEMS${build_args[*]:+, compiled})"
    # From the gems' folder, where --local finds the .gem files of their dependencies.
    (cd "$LM_LOCAL_GEMS" && "${gem_cmd[@]}" install --local --no-document "$name.gem" -- "${build_args[@]}" >/dev/null)
  done
}
