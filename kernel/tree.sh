# shellcheck shell=bash
# Source trees and ccache figures for the kernel builds, defined once for build.sh and ci.sh
# (sourced, not run).
#
# The tarball is unpacked once per work dir, into WORK/pristine (stamped with the package
# version and the tarball's size and mtime); every tree a build patches (src-grtrace,
# src-stock, src-debug, src-ct) is a hard-linked copy of it: `cp -al` takes 2 s where an
# unpack takes 30 s on a quiet machine and up to 6 min under load. GNU patch writes a patched
# file anew and renames it into place, so the pristine inodes are never written; nothing else
# may change a file of these trees in place.

TARBALL=/usr/src/linux-source-6.12.tar.xz
TREE_NAME=linux-source-6.12   # the tarball's top directory

# new_tree WORK DIR: DIR/linux-source-6.12, a fresh hard-linked copy of WORK's pristine tree
# (unpacked first when missing or stale; one unpacker at a time per work dir)
new_tree() {
    local work=$1 dir=$2 stamp
    stamp=$( { dpkg-query -W -f='${Version}\n' linux-source-6.12; stat -c '%s %Y' "$TARBALL"; } 2>&1)
    mkdir -p "$work"
    (
        flock 8
        if [ "$(cat "$work/pristine/STAMP" 2>/dev/null)" != "$stamp" ]; then
            rm -rf "$work/pristine" "$work/pristine.tmp"
            mkdir -p "$work/pristine.tmp"
            tar -C "$work/pristine.tmp" -xf "$TARBALL" || exit 1
            echo "$stamp" > "$work/pristine.tmp/STAMP"
            mv "$work/pristine.tmp" "$work/pristine"
        fi
    ) 8> "$work/.pristine.lock" || return 1
    rm -rf "$dir"
    mkdir -p "$dir"
    cp -al "$work/pristine/$TREE_NAME" "$dir/"
}

# ccache_summary LABEL STATSLOG: one line of the hits and misses of the compilations logged in
# STATSLOG (ccache's stats_log, CCACHE_STATSLOG), i.e. of one build alone, even when other
# builds use the same ccache at the same time. Source files only: kbuild's compiler probes
# (cc-option and the like compile /dev/null, and hit from the second build on) and the calls
# ccache cannot cache (linking, -E, assembler probes) are left out.
ccache_summary() {
    [ -s "$2" ] || { echo "ccache $1: no compilation logged"; return 0; }
    awk -v label="$1" '
        /^# / { src = ($2 != "/dev/null"); next }
        !src { next }
        $0 == "direct_cache_hit" { d++ }
        $0 == "preprocessed_cache_hit" { p++ }
        $0 == "cache_miss" { m++ }
        END { h = d + p; printf "ccache %s: %d objects, %d hits (%.1f %%: %d direct, %d preprocessed), %d misses\n",
              label, h + m, h, (h + m) ? 100 * h / (h + m) : 0, d, p, m }' "$2"
}

# cpu_seconds: user + system CPU seconds of the main shell ($$) and its waited-for children so
# far (from /proc, so that it also works in a subshell, where `times` starts from zero)
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.1f", ($12 + $13 + $14 + $15) / hz }' "/proc/$$/stat"
}
