#!/bin/bash
# Debian's own prebuilt 7.x kernel for the stock-kernel proof (issue 28, item 5): a real
# kernel's tracepoint formats, not ones we wrote or built. Downloads the binary and modules
# packages from trixie-backports (a private apt sources list: the machine's own stays as it
# is), takes vmlinuz and the modules the guest needs (virtio-gpu with its drm stack, 9p for
# the results share), decompressed (busybox modprobe reads plain .ko), with depmod's
# modules.dep. Cached by version under GRT_CACHE.
#
# usage: kernel/debian-kernel.sh
# env: DEB_KERNEL (default below: the version tested; "newest" takes the newest 7.x amd64
#      image the suite has), GRT_CACHE (default /var/tmp/grtrace-kernel/cache)
# Prints "KERNEL <vmlinuz>" and "MODULES <dir>" (dir/lib/modules/<release>/) as its last
# lines, as build.sh does; exit 1 with the reason on any failure.
set -euo pipefail
DEB_KERNEL=${DEB_KERNEL:-7.3.4+deb13}        # linux-binary-$DEB_KERNEL-amd64
CACHE=${GRT_CACHE:-/var/tmp/grtrace-kernel/cache}
# What the guest loads (guest/init): these and whatever modules.dep says they need.
WANT=(virtio-gpu 9p 9pnet_virtio)

die() { echo "debian-kernel.sh: FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/debian-apt.sh"   # APT, APT_OPTS, deb_download
# one at a time (ci.sh --prebuild fetches it in the background; the stage then waits here)
exec 9> "$APT/.lock"
flock 9

if [ "$DEB_KERNEL" = newest ]; then
    apt-get "${APT_OPTS[@]}" update -qq || die "apt-get update ($DEB_SUITE)"
    DEB_KERNEL=$(apt-cache "${APT_OPTS[@]}" search '^linux-binary-7\.[0-9.]*+deb[0-9]*-amd64$' |
        sed -n 's/^linux-binary-\(7[^ ]*\)-amd64 .*/\1/p' | sort -V | tail -1)
    [ -n "$DEB_KERNEL" ] || die "no linux-binary-7.x-amd64 in $DEB_SUITE"
fi
OUT=$CACHE/debian-$DEB_KERNEL
if [ -f "$OUT/vmlinuz" ] && [ -f "$OUT/mods/lib/modules/$DEB_KERNEL-amd64/modules.dep" ]; then
    echo "== Debian kernel $DEB_KERNEL-amd64: cache hit ($OUT)"
else
    echo "== Debian kernel $DEB_KERNEL-amd64: downloading from $DEB_SUITE"
    dl=$APT/dl; rm -rf "$dl" "$OUT"; mkdir -p "$dl" "$OUT"
    pkgs=(linux-binary-"$DEB_KERNEL"-amd64 linux-modules-"$DEB_KERNEL"-amd64)
    deb_download "$dl" "${pkgs[@]}" ||
        die "apt-get download ${pkgs[*]} from $DEB_SUITE (DEB_KERNEL=newest takes what the suite has)"
    for d in "$dl"/*.deb; do dpkg-deb -x "$d" "$dl/x"; done
    rel=$DEB_KERNEL-amd64
    src=$dl/x/usr/lib/modules/$rel
    [ -f "$src/vmlinuz" ] || die "no vmlinuz in ${pkgs[0]}"
    cp "$src/vmlinuz" "$OUT/vmlinuz"
    # modules.dep of the whole tree names each wanted module's dependencies
    depmod -b "$dl/x/usr" "$rel" || die "depmod on the packaged modules"
    dep=$src/modules.dep
    declare -A take=()
    add() {  # add PATH (relative, as in modules.dep): the module and its dependencies
        [ -n "${take[$1]:-}" ] && return
        take[$1]=1
        local line; line=$(grep -m1 "^$1:" "$dep") || die "$1 not in modules.dep"
        for d in ${line#*:}; do add "$d"; done
    }
    for m in "${WANT[@]}"; do
        p=$(grep -m1 -oE "^[^:]*/$m\.ko(\.xz|\.zst|\.gz)?:" "$dep") || die "module $m not in $rel"
        add "${p%:}"
    done
    dst=$OUT/mods/lib/modules/$rel
    for p in "${!take[@]}"; do
        mkdir -p "$dst/$(dirname "$p")"
        case $p in
            *.xz) xz -dc "$src/$p" > "$dst/${p%.xz}" ;;
            *.zst) zstd -qdc "$src/$p" > "$dst/${p%.zst}" ;;
            *.gz) gzip -dc "$src/$p" > "$dst/${p%.gz}" ;;
            *) cp "$src/$p" "$dst/$p" ;;
        esac
    done
    # the package ships no modules.builtin: depmod wants the files, busybox modprobe does not
    for f in modules.order modules.builtin modules.builtin.modinfo; do
        if [ -f "$src/$f" ]; then cp "$src/$f" "$dst/"; else : > "$dst/$f"; fi
    done
    depmod -b "$OUT/mods" "$rel" || die "depmod on the guest's modules"
    echo "$DEB_KERNEL" > "$OUT/VERSION"
    rm -rf "$dl"
    echo "== Debian kernel $rel: vmlinuz and ${#take[@]} modules in $OUT"
fi
echo "MODULES $OUT/mods"
echo "KERNEL $OUT/vmlinuz"
