#!/bin/bash
# Build the grtrace test kernel: Debian's linux-source-6.12 + kernel/patches/ + a minimal
# config (tinyconfig + config/grtrace-min.config).  Skips everything when a cached kernel
# matches the hash of (source version, patches, config fragments, gcc version, this script).
#
# usage: kernel/build.sh [grtrace|base|stock|debug]      (default grtrace)
#   grtrace  the series applied, CONFIG_DRM_GRTRACE=y            (the tested kernel)
#   base     no patches, same config: "series absent", for the tracing-cost figure
#   stock    no patches, same config: the unpatched kernel of ci.sh's stock-kernel stage
#            (grtrace --ftrace, trace-cmd)
#   grtrace, base and stock are configured alike, config/grtrace-min.config +
#   config/stock.config (the lockdown LSM, KALLSYMS), so that they differ by the series alone
#   and the unpatched kernels compile most objects from the grtrace kernel's ccache entries
#   debug    the series + config/debug.config (lockdep, KASAN; DRM, virtio-gpu, vsched and
#            the grtrace KUnit suite as modules, so that the stress boot can reload drm)
# env: GRT_WORK (default /var/tmp/grtrace-kernel/ci)  GRT_CACHE (default /var/tmp/grtrace-kernel/cache)
#      JOBS (default nproc)  GRT_FORCE=1 rebuild even on a cache hit
#      CCACHE_DIR (default /var/tmp/grtrace-kernel/ccache, one for every variant and work dir)
# One build per variant and work dir at a time (flock on WORK/.lock-VARIANT): a second build.sh
# of the same variant waits, then finds the first one's kernel in the cache.
#
# Every variant's tree is a hard-linked copy of one unpack (tree.sh), and its object directory
# is inside it (SRC/grt-obj): kbuild then uses srctree=.., so every path on a compile command
# line (-I../include, ../drivers/..., -fmacro-prefix-map=../=, __FILE__) is relative and the
# same in every variant and work dir. No CONFIG_DEBUG_INFO, and CCACHE_NOHASHDIR (below) for
# the few objects built with -g, so ccache does not hash the directory either: an object whose
# preprocessed source is the same in two variants is one ccache entry (an absolute srctree
# put the variant's path into every entry). The stats log
# of each build gives its own hit rate ("ccache VARIANT:" line).
# Prints "KERNEL <path to bzImage>" as its last line; a variant with modules (CONFIG_MODULES=y
# in its fragments: debug) prints "MODULES <dir>" before it, dir/lib/modules/<release>/ holding
# the modules and depmod's modules.dep, cached next to the bzImage.  Exit 1 on any failure, with
# the reason, e.g. a patch that does not apply to the installed source.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VARIANT=${1:-grtrace}
TESTED_VERSION=6.12.117-1~deb12u1          # the series is tested on exactly this source
PKG=linux-source-6.12
. "$HERE/tree.sh"   # TARBALL, new_tree, ccache_summary, cpu_seconds
WORK=${GRT_WORK:-/var/tmp/grtrace-kernel/ci}
CACHE=${GRT_CACHE:-/var/tmp/grtrace-kernel/cache}
JOBS=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-/var/tmp/grtrace-kernel/ccache}
# The only objects compiled with -g are the real-mode ones (arch/x86/boot, arch/x86/realmode:
# REALMODE_CFLAGS), and for -g ccache hashes the working directory, i.e. the tree: 28 misses
# of every stock build after a grtrace one. Their debug info never reaches the kernel (objcopy
# -O binary makes setup.bin and realmode.bin of them), so the directory does not matter.
export CCACHE_NOHASHDIR=1
export KBUILD_BUILD_TIMESTAMP="2025-01-01 00:00:00" KBUILD_BUILD_USER=grtrace KBUILD_BUILD_HOST=grtrace

die() { echo "build.sh: FAIL: $*" >&2; exit 1; }
ts() { date +%s.%N; }
case $VARIANT in grtrace|base|stock|debug) ;; *) die "unknown variant $VARIANT (grtrace|base|stock|debug)";; esac

# --- source package: the pinned version if possible, any 6.12 otherwise (loudly) ---
installed=$(dpkg-query -W -f='${Version}' $PKG 2>/dev/null || true)
if [ -z "$installed" ] || [ ! -f $TARBALL ]; then
    echo "== installing $PKG=$TESTED_VERSION"
    apt-get install -y -qq "$PKG=$TESTED_VERSION" >/dev/null 2>&1 ||
        { echo "== $TESTED_VERSION not available, installing the current $PKG"; apt-get install -y -qq $PKG >/dev/null; }
    installed=$(dpkg-query -W -f='${Version}' $PKG)
fi
if [ "$installed" != "$TESTED_VERSION" ]; then
    echo "WARNING: the series is tested on $PKG $TESTED_VERSION, installed is $installed; trying anyway"
fi

. "$HERE/series.sh"
PATCHES=()
FRAGS=("$HERE/config/grtrace-min.config" "$HERE/config/stock.config")
case $VARIANT in
    grtrace) mapfile -t PATCHES < <(series_patches "$HERE/patches") ;;
    debug)
        mapfile -t PATCHES < <(series_patches "$HERE/patches")
        # debug.config turns some of the minimal config's =y into =m (drm as modules): the
        # minimal fragment without the symbols debug.config sets, so each is set once
        mkdir -p "$WORK"
        awk 'NR == FNR { if (match($0, /CONFIG_[A-Z0-9_]+/)) set[substr($0, RSTART, RLENGTH)] = 1; next }
             !(match($0, /CONFIG_[A-Z0-9_]+/) && (substr($0, RSTART, RLENGTH) in set))' \
            "$HERE/config/debug.config" "$HERE/config/grtrace-min.config" > "$WORK/debug-min.config"
        FRAGS=("$WORK/debug-min.config" "$HERE/config/debug.config") ;;
    stock)  # the minimal config without the series' own symbols (they cannot survive olddefconfig)
        mkdir -p "$WORK"
        grep -v '^CONFIG_DRM_GRTRACE' "$HERE/config/grtrace-min.config" > "$WORK/stock-min.config"
        FRAGS=("$WORK/stock-min.config" "$HERE/config/stock.config") ;;
esac
[ "$VARIANT" = base ] || [ "$VARIANT" = stock ] || [ ${#PATCHES[@]} -gt 0 ] || die "no patches in $HERE/patches"
MODS=0; cat "${FRAGS[@]}" | grep -qx 'CONFIG_MODULES=y' && MODS=1

# one build of this variant in this work dir at a time; the cache is looked at under the lock
mkdir -p "$WORK" "$CACHE"
exec 9> "$WORK/.lock-$VARIANT"
if ! flock -n 9; then
    echo "== another build of $VARIANT is running in $WORK: waiting for it"
    tw=$(ts); flock 9
    printf '== waited %.1f s\n' "$(echo "$(ts) - $tw" | bc)"
fi

# --- cache key ---
# build_part: the script's build part below; the "# --- modules ---" blocks only for a variant
# with modules, so that the variants without them keep their keys (and cached kernels)
build_part() {
    if [ $MODS = 1 ]; then sed -n '/^# --- build ---/,$p' "$0"
    else sed -n '/^# --- build ---/,$p' "$0" | sed '/^# --- modules ---$/,/^# --- modules end ---$/d'; fi
}
key=$( {
    echo "$installed"; echo "$VARIANT"; gcc --version | head -1
    cat "${FRAGS[@]}"; [ ${#PATCHES[@]} = 0 ] || cat "${PATCHES[@]}"
    build_part
} | sha256sum | cut -c1-16)
OUTDIR=$CACHE/$VARIANT-$key
if [ -f "$OUTDIR/bzImage" ] && [ "${GRT_FORCE:-0}" != 1 ]; then
    echo "== cache hit: $OUTDIR (source $installed, ${#PATCHES[@]} patches)"
    [ -f "$OUTDIR/BUILD" ] && sed 's/^/== built: /' "$OUTDIR/BUILD"
    [ $MODS = 1 ] && echo "MODULES $OUTDIR/modules"
    echo "KERNEL $OUTDIR/bzImage"
    exit 0
fi
echo "== cache miss: building $VARIANT (key $key)"

# --- build ---
t0=$(ts)
SRC=$WORK/src-$VARIANT/$TREE_NAME
OBJ=$SRC/grt-obj   # inside the tree, so that kbuild's paths are relative (see the top)
LOG=$WORK/build-$VARIANT.log
STATSLOG=$WORK/ccache-$VARIANT.statslog
rm -rf "$WORK/build-$VARIANT"   # the object dir of older versions
trap 'rm -rf "$OUTDIR.tmp.$$"' EXIT
new_tree "$WORK" "$WORK/src-$VARIANT" || die "cannot unpack $TARBALL into $WORK"
t_unpack=$(ts)
for p in "${PATCHES[@]}"; do
    if ! patch -d "$SRC" -p1 --dry-run -s < "$p" >/dev/null 2>&1; then
        patch -d "$SRC" -p1 --dry-run < "$p" | tail -20 >&2 || true
        die "$(basename "$p") does not apply to $PKG $installed (tested on $TESTED_VERSION)"
    fi
    patch -d "$SRC" -p1 -s < "$p"
done
echo "== applied ${#PATCHES[@]} patches to $PKG $installed"

mkdir -p "$OBJ"
MAKE=(make -C "$SRC" O=grt-obj ARCH=x86_64 -j"$JOBS")
rm -f "$STATSLOG"
command -v ccache >/dev/null && MAKE+=(CC="ccache gcc") && export CCACHE_STATSLOG=$STATSLOG
"${MAKE[@]}" tinyconfig >/dev/null
cat "${FRAGS[@]}" >> "$OBJ/.config"
"${MAKE[@]}" olddefconfig >/dev/null 2>&1
# every =y of the fragments must have survived olddefconfig
missing=0
for s in $(cat "${FRAGS[@]}" | sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=y$/\1/p'); do
    case $s in CONFIG_DRM_GRTRACE*) [ "$VARIANT" = base ] && continue ;; esac
    grep -q "^$s=y" "$OBJ/.config" || { echo "MISSING $s" >&2; missing=1; }
done
[ $missing = 0 ] || die "config symbols missing after olddefconfig"
# --- modules ---
# and every =m of the fragments ended up =m (not =y through a built-in user, not gone)
for s in $(cat "${FRAGS[@]}" | sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=m$/\1/p'); do
    grep -q "^$s=m" "$OBJ/.config" || { echo "NOT A MODULE $s: $(grep "^$s=" "$OBJ/.config")" >&2; missing=1; }
done
[ $missing = 0 ] || die "config symbols not =m after olddefconfig"
# --- modules end ---
t_config=$(ts)
if ! "${MAKE[@]}" bzImage > "$LOG" 2>&1; then
    grep -E 'error|Error' "$LOG" | head -30 >&2
    die "kernel build failed, log: $LOG"
fi
t_build=$(ts)
# the kernel is put together in OUTDIR.tmp.PID and renamed to OUTDIR when complete, so that a
# cached bzImage always means a complete kernel (with its modules)
mkdir -p "$OUTDIR.tmp.$$"
# --- modules ---
# the modules, installed with depmod's modules.dep into OUTDIR/modules. Only for a variant
# with modules (without them `make modules_install` installs modules.builtin and no
# modules.dep); the test is inside the block, which only such a variant's key includes
if [ $MODS = 1 ]; then
    if ! "${MAKE[@]}" modules >> "$LOG" 2>&1; then
        grep -E 'error|Error' "$LOG" | head -30 >&2
        die "module build failed, log: $LOG"
    fi
    "${MAKE[@]}" INSTALL_MOD_PATH="$OUTDIR.tmp.$$/modules" INSTALL_MOD_STRIP=1 DEPMOD=/sbin/depmod modules_install \
        >> "$LOG" 2>&1 || die "modules_install failed, log: $LOG"
    release=$(cat "$OBJ/include/config/kernel.release")
    [ -s "$OUTDIR.tmp.$$/modules/lib/modules/$release/modules.dep" ] || die "no modules.dep for $release"
    printf 'TIMING build.sh %s: make modules + modules_install %.1f s (%s modules for %s)\n' "$VARIANT" \
        "$(echo "$(ts) - $t_build" | bc)" "$(find "$OUTDIR.tmp.$$/modules" -name '*.ko' | wc -l)" "$release" |
        tee -a "$OUTDIR.tmp.$$/BUILD"
fi
# --- modules end ---
cp "$OBJ/arch/x86/boot/bzImage" "$OBJ/.config" "$OUTDIR.tmp.$$/"
printf 'source %s\nvariant %s\npatches %s\n' "$installed" "$VARIANT" "${#PATCHES[@]}" > "$OUTDIR.tmp.$$/INFO"
{
    printf 'TIMING build.sh %s: unpack+patch %.1f s, config %.1f s, make bzImage %.1f s, total %.1f s wall, %s s CPU (jobs=%s)\n' \
        "$VARIANT" "$(echo "$t_unpack - $t0" | bc)" "$(echo "$t_config - $t_unpack" | bc)" \
        "$(echo "$t_build - $t_config" | bc)" "$(echo "$(ts) - $t0" | bc)" "$(cpu_seconds)" "$JOBS"
    command -v ccache >/dev/null && ccache_summary "$VARIANT" "$STATSLOG"
} | tee -a "$OUTDIR.tmp.$$/BUILD"
rm -rf "$OUTDIR"
mv -T "$OUTDIR.tmp.$$" "$OUTDIR"
[ $MODS = 1 ] && echo "MODULES $OUTDIR/modules"
echo "KERNEL $OUTDIR/bzImage"
