# Reading a guest's serial log for deaths that are the emulator's, not the kernel's
# (sourced by boot.sh; ci.sh checks it against fixtures/kernel/stale-int3.serial).

# stale_int3 LOG: did the guest die of an int3 that is not in its memory? The first oops
# must be an int3 one, and its Code: line (the text as it is when the oops is printed)
# must show a byte other than cc just before <..>, the trapping address: the vCPU ran a
# translation of text the kernel had already patched back (our reading: QEMU 7.2's
# multi-threaded TCG racing a translation against the page's invalidation, a race 8.1's
# deba78709a "accel/tcg: Always lock pages before translation" closes; kernel/README.md).
# A real stray int3 still shows cc; any other report before that Code: line (another
# oops, a BUG, a WARNING, the end of the trace) or a Code: line without the byte is not
# excused.
stale_int3() {
    tr -d '\r' < "$1" | awk '
        { sub(/^\[ *[0-9]+\.[0-9]+\] /, "") }
        !oops && /^(Oops: )?int3: [0-9a-f]+ \[#1\]/ { oops = 1; next }
        !oops { next }
        /^(Oops: |BUG: |WARNING: |---\[ end trace)/ { exit }
        /^Code: / {
            for (i = 2; i <= NF; i++)
                if ($i ~ /^<[0-9a-f][0-9a-f]>$/) { found = $(i - 1) ~ /^[0-9a-f][0-9a-f]$/ && $(i - 1) != "cc"; exit }
            exit
        }
        END { exit !found }'
}
