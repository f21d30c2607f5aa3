#!/bin/bash
# Build the upstream series' test kernel: Debian's linux-source-7.3 (trixie-backports, through
# the private apt lists of kernel/debian-apt.sh) + kernel/upstream/*.patch, configured as
# the stock kernel (config/grtrace-min.config without the grtrace symbols, config/stock.config)
# plus upstream/upstream.config (modules: the drm_sched KUnit suites as drm-sched-tests.ko).
# Cached by the hash of (source version, patches, fragments, gcc, this script) like build.sh.
#
# usage: kernel/upstream/build.sh [--check-each]
#   --check-each  also build the objects each patch touches after it alone (each patch of the
#                 series builds), into a second tree; no kernel cached for it
# env: GRT_WORK (default /var/tmp/grtrace-kernel/ci), GRT_CACHE (default
#      /var/tmp/grtrace-kernel/cache), JOBS (default nproc), UP_SOURCE (default below)
# Prints "MODULES <dir>" and "KERNEL <bzImage>" as its last lines; exit 1 with the reason.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
K=$(cd "$HERE/.." && pwd)
UP_SOURCE=${UP_SOURCE:-7.3.4-1~bpo13+1}      # linux-source-7.3, the version tested
WORK=${GRT_WORK:-/var/tmp/grtrace-kernel/ci}
CACHE=${GRT_CACHE:-/var/tmp/grtrace-kernel/cache}
JOBS=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-/var/tmp/grtrace-kernel/ccache} CCACHE_NOHASHDIR=1
export KBUILD_BUILD_TIMESTAMP="2025-01-01 00:00:00" KBUILD_BUILD_USER=grtrace KBUILD_BUILD_HOST=grtrace
die() { echo "upstream/build.sh: FAIL: $*" >&2; exit 1; }
ts() { date +%s.%N; }
. "$K/tree.sh"     # ccache_summary, cpu_seconds
. "$K/series.sh"   # series_patches

mapfile -t PATCHES < <(series_patches "$HERE")
[ ${#PATCHES[@]} -gt 0 ] || die "no patches in $HERE"
mkdir -p "$WORK" "$CACHE"
grep -v '^CONFIG_DRM_GRTRACE' "$K/config/grtrace-min.config" > "$WORK/upstream-min.config"
FRAGS=("$WORK/upstream-min.config" "$K/config/stock.config" "$HERE/upstream.config")

# --- the source package, from the private apt lists (one fetcher at a time) ---
. "$K/debian-apt.sh"   # APT, deb_download
SRCDIR=$CACHE/linux-source-$UP_SOURCE
TARBALL=$SRCDIR/linux-source-7.3.tar.xz
(
    flock 9
    [ -f "$TARBALL" ] && exit 0
    dl=$APT/dl-source; rm -rf "$dl"
    deb_download "$dl" "linux-source-7.3=$UP_SOURCE" || exit 1
    dpkg-deb -x "$dl"/linux-source-7.3_*.deb "$dl/x" || exit 1
    mkdir -p "$SRCDIR"
    mv "$dl/x/usr/src/linux-source-7.3.tar.xz" "$TARBALL.tmp" && mv "$TARBALL.tmp" "$TARBALL"
    rm -rf "$dl"
) 9> "$APT/.lock" || die "cannot fetch linux-source-7.3=$UP_SOURCE from $DEB_SUITE"

exec 8> "$WORK/.lock-upstream"
flock 8
key=$( { echo "$UP_SOURCE"; gcc --version | head -1; cat "${FRAGS[@]}" "${PATCHES[@]}" "$0"; } |
    sha256sum | cut -c1-16)
OUTDIR=$CACHE/upstream-$key
if [ -f "$OUTDIR/bzImage" ] && [ "${1:-}" != --check-each ]; then
    echo "== cache hit: $OUTDIR (linux-source-7.3 $UP_SOURCE, ${#PATCHES[@]} patches)"
    sed 's/^/== built: /' "$OUTDIR/BUILD" 2>/dev/null || true
    echo "MODULES $OUTDIR/modules"
    echo "KERNEL $OUTDIR/bzImage"
    exit 0
fi

# unpack once per source version; each tree is a hard-linked copy (patch writes files anew)
PRISTINE=$WORK/up-pristine-$UP_SOURCE
if [ ! -d "$PRISTINE/linux-source-7.3" ]; then
    rm -rf "$PRISTINE.tmp"; mkdir -p "$PRISTINE.tmp"
    tar -C "$PRISTINE.tmp" -xf "$TARBALL" || die "cannot unpack $TARBALL"
    mv "$PRISTINE.tmp" "$PRISTINE"
fi
new_up_tree() {  # new_up_tree DIR: DIR/linux-source-7.3, fresh
    rm -rf "$1"; mkdir -p "$1"; cp -al "$PRISTINE/linux-source-7.3" "$1/"
}
apply() {  # apply SRC PATCH
    patch -d "$1" -p1 --dry-run -s < "$2" > /dev/null 2>&1 ||
        { patch -d "$1" -p1 --dry-run < "$2" | tail -20 >&2; die "$(basename "$2") does not apply to linux-source-7.3 $UP_SOURCE"; }
    patch -d "$1" -p1 -s < "$2"
}
configure() {  # configure SRC: tinyconfig + the fragments in SRC/grt-obj, checked
    local m=(make -C "$1" O=grt-obj ARCH=x86_64 -j"$JOBS")
    mkdir -p "$1/grt-obj"
    "${m[@]}" tinyconfig > /dev/null
    cat "${FRAGS[@]}" >> "$1/grt-obj/.config"
    "${m[@]}" olddefconfig > /dev/null 2>&1
    local s missing=0 known
    # the fragments are the 6.12 kernel's: a symbol 7.3 no longer has (PROC_SYSCTL, now part
    # of SYSCTL) is named, not failed; one it has must survive
    known=$(find "$1" -name 'Kconfig*' -not -path '*/grt-obj/*' -exec sed -n 's/^[[:space:]]*\(menu\)\{0,1\}config[[:space:]]\{1,\}\([A-Z0-9_]*\).*/CONFIG_\2/p' {} + | sort -u)
    for s in $(cat "${FRAGS[@]}" | sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=\([ym]\)$/\1=\2/p'); do
        grep -qx "$s" "$1/grt-obj/.config" && continue
        if ! grep -qx "${s%=*}" <<< "$known"; then echo "== ${s%=*}: not a symbol of this kernel"; continue; fi
        echo "MISSING $s: $(grep "^${s%=*}=" "$1/grt-obj/.config")" >&2; missing=1
    done
    [ $missing = 0 ] || die "config symbols missing after olddefconfig"
}
MAKE_CC=(); command -v ccache > /dev/null && MAKE_CC=(CC="ccache gcc")

if [ "${1:-}" = --check-each ]; then
    # each patch on its own: the objects of the files it touches, after it and its
    # predecessors only, with W=1 (a series must build at every step, for bisection)
    SRC=$WORK/src-upstream-each/linux-source-7.3
    new_up_tree "$WORK/src-upstream-each"
    configure "$SRC"
    for p in "${PATCHES[@]}"; do
        apply "$SRC" "$p"
        # the .c files it touches, and every object of the directory of a header it touches
        objs=$( { sed -n 's|^+++ b/\(.*\)\.c$|\1.o|p' "$p"
                  sed -n 's|^+++ b/\(drivers/[^ ]*\)/[^/]*\.h$|\1/|p' "$p"; } | sort -u)
        # shellcheck disable=SC2086 # the objects are words
        make -C "$SRC" O=grt-obj ARCH=x86_64 -j"$JOBS" "${MAKE_CC[@]}" W=1 $objs > "$WORK/upstream-each.log" 2>&1 ||
            { tail -30 "$WORK/upstream-each.log" >&2; die "$(basename "$p"): its objects do not build after it"; }
        if grep -E 'warning:' "$WORK/upstream-each.log" | grep -q -E 'scheduler|virtio'; then
            grep -E 'warning:' "$WORK/upstream-each.log" >&2; die "$(basename "$p"): W=1 warnings in the series' files"
        fi
        echo "== $(basename "$p"): builds on its own (W=1, no warning in the series' files):" $objs
    done
    exit 0
fi

t0=$(ts)
SRC=$WORK/src-upstream/linux-source-7.3
LOG=$WORK/build-upstream.log
STATSLOG=$WORK/ccache-upstream.statslog
new_up_tree "$WORK/src-upstream"
for p in "${PATCHES[@]}"; do apply "$SRC" "$p"; done
echo "== applied ${#PATCHES[@]} patches to linux-source-7.3 $UP_SOURCE"
configure "$SRC"
MAKE=(make -C "$SRC" O=grt-obj ARCH=x86_64 -j"$JOBS" "${MAKE_CC[@]}")
rm -f "$STATSLOG"; export CCACHE_STATSLOG=$STATSLOG
"${MAKE[@]}" bzImage modules > "$LOG" 2>&1 || { grep -E 'error|Error' "$LOG" | head -30 >&2; die "build failed, log: $LOG"; }
trap 'rm -rf "$OUTDIR.tmp.$$"' EXIT
mkdir -p "$OUTDIR.tmp.$$"
"${MAKE[@]}" INSTALL_MOD_PATH="$OUTDIR.tmp.$$/modules" INSTALL_MOD_STRIP=1 DEPMOD=/sbin/depmod modules_install \
    >> "$LOG" 2>&1 || die "modules_install failed, log: $LOG"
cp "$SRC/grt-obj/arch/x86/boot/bzImage" "$SRC/grt-obj/.config" "$OUTDIR.tmp.$$/"
{
    printf 'TIMING upstream/build.sh: %.1f s wall, %s s CPU (jobs=%s), %s modules\n' "$(echo "$(ts) - $t0" | bc)" \
        "$(cpu_seconds)" "$JOBS" "$(find "$OUTDIR.tmp.$$/modules" -name '*.ko' | wc -l)"
    ccache_summary upstream "$STATSLOG"
} | tee "$OUTDIR.tmp.$$/BUILD"
rm -rf "$OUTDIR"; mv -T "$OUTDIR.tmp.$$" "$OUTDIR"
echo "MODULES $OUTDIR/modules"
echo "KERNEL $OUTDIR/bzImage"
