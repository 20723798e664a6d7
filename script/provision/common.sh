# shellcheck shell=bash
# What the provisioning steps share: messages, Debian packages on the host, and a private apt configuration for
# the source packages and arch:all binaries of Debian's newer suites (downloads only: the host's apt sources are
# never touched, and no other suite's binaries are ever installed on the host). Sourced by script/provision/debian.

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# install_packages PACKAGE...: installs the Debian 12 packages that are not installed yet.
install_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  say "Installing Debian 12 packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get -qq update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -qq install -y --no-install-recommends "${missing[@]}" >/dev/null
}

# apt_tree DIR EXTRA_CONF SOURCE...: a private apt configuration in DIR (apt.conf, with its own sources, lists and
# cache; EXTRA_CONF lines first), for downloads only. Each SOURCE is "TYPE [OPTION ...] SUITE" of Debian's archive,
# such as "deb-src experimental" or "deb arch=arm64 trixie".
apt_tree() {
  local dir="$1" extra="$2" key=/usr/share/keyrings/debian-archive-keyring.gpg source type rest suite options
  shift 2
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/parts"
  for source in "$@"; do
    read -r type rest <<<"$source"
    suite="${rest##* }"
    options="${rest%"$suite"}"
    printf '%s [signed-by=%s %s] http://deb.debian.org/debian %s main\n' "$type" "$key" "${options% }" "$suite"
  done | sed 's/ ]/]/' >"$dir/sources.list"
  printf '%s' "$extra" >"$dir/apt.conf"
  cat >>"$dir/apt.conf" <<CONF
Dir::Etc::SourceList "$dir/sources.list";
Dir::Etc::SourceParts "$dir/parts";
Dir::State::Lists "$dir/lists";
Dir::Cache "$dir/cache";
APT::Sandbox::User "root";
CONF
}

# The private apt tree for sources: deb-src lines for the newer suites, and the binary indexes of sid and trixie (for
# their arch:all packages, which the amd64 indexes list).
prepare_private_apt() {
  local dir="$LM_CACHE/apt"
  apt_tree "$dir" "" "deb-src experimental" "deb-src sid" "deb-src trixie" "deb arch=amd64 sid" "deb arch=amd64 trixie"
  # Refresh the index at most once a day, and whenever the sources changed since the last refresh (a copy of them is
  # kept after each); a fresh cache always fetches it.
  if [ -z "$(find "$dir/lists" -maxdepth 1 -name '*Sources*' -mmin -1440 -print -quit 2>/dev/null)" ] ||
    ! cmp -s "$dir/sources.list" "$dir/sources.list.fetched"; then
    say "Fetching the index of Debian experimental, sid and trixie (private apt configuration)"
    apt_private update >/dev/null
    cp "$dir/sources.list" "$dir/sources.list.fetched"
  fi
}

apt_private() { APT_CONFIG="$LM_CACHE/apt/apt.conf" apt-get -q "$@"; }
apt_private_cache() { APT_CONFIG="$LM_CACHE/apt/apt.conf" apt-cache "$@"; }

# upstream_tarball PACKAGE VERSION: "SHA256 NAME" of the upstream (.orig) tarball of that version of a source
# package, as the archive's signed index lists it.
upstream_tarball() {
  apt_private_cache showsrc "$1" | awk -v version="$2" '
    /^Package: / { stanza = 0 }
    /^Version: / { stanza = ($2 == version) }
    stanza && /^Checksums-Sha256:/ { sums = 1; next }
    /^[^ ]/ { sums = 0 }
    stanza && sums && $3 ~ /\.orig\.tar\.[a-z0-9]+$/ { print $1, $3; exit }'
}

# verified FILE SHA256: FILE is present and has that checksum.
verified() { [ -f "$1" ] && printf '%s  %s\n' "$2" "$1" | sha256sum --check --status; }

# fetch_source PACKAGE DIR: downloads the upstream tarball of the newest version of a Debian source package whose
# tarball still downloads (the index can list versions whose files are gone, or whose .dsc is gone while the
# tarball is still there) into DIR, checks it against the index's SHA-256, and prints "VERSION TARBALL". Only the
# upstream sources are used: Debian's patches are not applied.
fetch_source() {
  local package="$1" dir="$2" versions version entry sum name
  mkdir -p "$dir"
  versions="$(apt_private_cache showsrc "$package" | sed -n 's/^Version: //p' | sort -urV)"
  for version in $versions; do
    entry="$(upstream_tarball "$package" "$version")"
    [ -n "$entry" ] || continue
    read -r sum name <<<"$entry"
    if ! verified "$dir/$name" "$sum"; then
      # apt exits non-zero when any file of the version is missing (often the .dsc); the tarball may still arrive.
      (cd "$dir" && apt_private source --download-only "$package=$version" >/dev/null 2>&1) || true
    fi
    if verified "$dir/$name" "$sum"; then
      printf '%s %s\n' "$version" "$dir/$name"
      return
    fi
    rm -f "$dir/$name"
    say "$package $version is listed but its upstream tarball does not download; trying an older one"
  done
  echo "provision: no version of $package downloads (tried: $(echo $versions))" >&2
  exit 1
}

# unpack TARBALL TREE: the upstream sources, in a fresh TREE.
unpack() {
  rm -rf "$2"
  mkdir -p "$2"
  tar -xf "$1" -C "$2" --strip-components=1
}
