# shellcheck shell=bash
# Debian's newer suite (trixie-backports) through a private apt state under the cache, for
# debian-kernel.sh (a prebuilt 7.x kernel) and upstream/build.sh (linux-source-7.3): the
# machine's own sources list and lists stay as they are. Sourced, not run.
#
# Sets APT (the state dir, GRT_CACHE/debian-apt) and APT_OPTS (apt-get's options for it).
# deb_download DIR PKG...: the packages' .deb files into DIR (`apt-get download`), updating
# the lists first only if they are missing or stale; returns non-zero when it cannot.
# Callers hold `flock` on "$APT/.lock" around it (one fetcher at a time).
DEB_SUITE="http://deb.debian.org/debian trixie-backports main"
APT=${GRT_CACHE:-/var/tmp/grtrace-kernel/cache}/debian-apt
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial"
APT_OPTS=(-o Dir::Etc::SourceList="$APT/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$APT/lists" -o Dir::Cache="$APT/cache" -o APT::Sandbox::User=root)
# written anew only when it differs, and atomically: an apt of another caller may read it
if [ "$(cat "$APT/sources.list" 2>/dev/null)" != "deb $DEB_SUITE" ]; then
    echo "deb $DEB_SUITE" > "$APT/sources.list.$$" && mv "$APT/sources.list.$$" "$APT/sources.list"
fi

deb_download() {
    local dir=$1; shift
    mkdir -p "$dir"
    (cd "$dir" && apt-get "${APT_OPTS[@]}" download -qq "$@" 2>/dev/null) && return 0
    apt-get "${APT_OPTS[@]}" update -qq || return 1
    (cd "$dir" && apt-get "${APT_OPTS[@]}" download -qq "$@")
}
