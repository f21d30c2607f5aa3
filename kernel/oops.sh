# Reading a guest's serial log for deaths that are the emulator's, not the kernel's
# (sourced by boot.sh; ci.sh checks it against fixtures/kernel/stale-int3.serial).

# stale_int3 LOG: did the guest die of an int3 that is not in its memory? The oops's Code:
# line shows the text as it is when the oops is printed, the trapping byte just before <..>;
# a byte other than cc there means the vCPU ran a translation of text the kernel had
# already patched back (our reading: QEMU 7.2's multi-threaded TCG racing a translation
# against the page's invalidation, a race 8.1's deba78709a "accel/tcg: Always lock pages
# before translation" closes; kernel/README.md). A real stray int3 still shows cc and is
# not excused.
stale_int3() {
    awk '/(Oops: )?int3: [0-9a-f]+ \[#/ { oops = 1; next }
         oops && / Code: / {
             for (i = 2; i <= NF; i++)
                 if ($i ~ /^</) { found = $(i - 1) != "cc" && $(i - 1) != "Code:"; exit }
             exit
         }
         END { exit !found }' "$1"
}
