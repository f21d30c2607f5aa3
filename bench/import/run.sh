#!/bin/bash
# grtimport vs `trace-cmd report` on the same trace.dat (written by grtrace-ftrace's
# trace.dat writer: `gendat`, virtio-gpu control-queue traffic on 2 CPUs, 2.25 tracepoint
# events per job), at SIZES events. Each tool runs REPS times, interleaved, under
# /usr/bin/time -v (wall, user+sys CPU, peak RSS); outputs go to /dev/null (trace-cmd) or a
# scratch directory: `grtimport-stdout` is `-o -` into /dev/null (both tools' whole output
# thrown away: the like-for-like figure), `grtimport-files` writes BASE.grtrace.<cpu>. Knobs: SIZES, REPS, FORMATS
# ("6" = v6 uncompressed, "7zstd" = v7 zstd, "pf" / "pfz" = the v6 file's events as a Perfetto
# trace, plain / zlib compressed_packets, written by `dat2pftrace`: grtimport only, compared
# with its own time on "6"), WORK (scratch dir).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SIZES=${SIZES:-"1000000 10000000"}
REPS=${REPS:-3}
FORMATS=${FORMATS:-"6 7zstd pf pfz"}
WORK=${WORK:-/var/tmp/grtimport-bench}
out="$here/results"
mkdir -p "$out" "$WORK"
command -v trace-cmd >/dev/null || { apt-get update -qq && apt-get install -y -qq trace-cmd; }
# Two builds: with --example, cargo builds only the example, and a stale grtimport would be
# measured.
(cd "$root" && cargo build --release -q -p grtimport --bin grtimport &&
    cargo build --release -q -p grtrace-ftrace --example gendat --example dat2pftrace)
gendat="$root/target/release/examples/gendat"
dat2pf="$root/target/release/examples/dat2pftrace"
gi="$root/target/release/grtimport"
raw="$out/raw.tsv"
echo -e "format\tevents\ttool\trep\twall_s\tcpu_s\tmaxrss_kb" > "$raw"
measure() { # label events tool rep cmd...
    local f=$1 n=$2 tool=$3 rep=$4; shift 4
    /usr/bin/time -v -o "$WORK/time.txt" "$@" > /dev/null 2> "$WORK/err.txt" || { cat "$WORK/err.txt"; exit 1; }
    local wall user sys rss
    wall=$(awk -F': ' '/Elapsed/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$WORK/time.txt")
    user=$(awk -F': ' '/User time/ {print $2}' "$WORK/time.txt")
    sys=$(awk -F': ' '/System time/ {print $2}' "$WORK/time.txt")
    rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$WORK/time.txt")
    echo -e "$f\t$n\t$tool\t$rep\t$wall\t$(echo "$user + $sys" | bc)\t$rss" | tee -a "$raw"
}
for n in $SIZES; do
    jobs=$(( n * 4 / 9 ))   # 2.25 events per job
    for f in $FORMATS; do
        dat="$WORK/trace-$n-$f.dat"
        case $f in
            6) events=$("$gendat" "$dat" virtio "$jobs" 2 6) ;;
            7zstd) events=$("$gendat" "$dat" virtio "$jobs" 2 7 zstd) ;;
            pf|pfz)
                "$gendat" "$WORK/src.dat" virtio "$jobs" 2 6 > /dev/null
                events=$("$dat2pf" "$WORK/src.dat" "$dat" $([ "$f" = pfz ] && echo zlib))
                rm -f "$WORK/src.dat" ;;
        esac
        echo "# $dat: $events events, $(du -h "$dat" | cut -f1)"
        for rep in $(seq 1 "$REPS"); do
            case $f in pf*) ;; *) measure "$f" "$events" trace-cmd "$rep" trace-cmd report -i "$dat" ;; esac
            measure "$f" "$events" grtimport-stdout "$rep" "$gi" -q "$dat" -o -
            measure "$f" "$events" grtimport-files "$rep" "$gi" -q "$dat" -o "$WORK/out"
        done
        rm -f "$dat" "$WORK"/out.grtrace.*
    done
done
# Summary: best (min) CPU and wall per tool, events/s, ratio grtimport / trace-cmd.
awk -F'\t' 'NR>1 {k=$1"\t"$2"\t"$3; if(!(k in c)||$6<c[k]) c[k]=$6; if(!(k in w)||$5<w[k]) w[k]=$5; if($7>r[k]) r[k]=$7; ev[k]=$2}
END {
  printf "%-6s %10s %-10s %9s %9s %12s %10s\n","format","events","tool","cpu_s","wall_s","Mev/s(cpu)","maxrss_MB";
  for (k in c) { split(k,a,"\t"); printf "%-6s %10s %-10s %9.2f %9.2f %12.2f %10.1f\n",a[1],a[2],a[3],c[k],w[k],(c[k]>0?ev[k]/c[k]/1e6:0),r[k]/1024 }
  for (k in c) { split(k,a,"\t"); if (a[3] ~ /^grtimport/) { t=a[1]"\t"a[2]"\ttrace-cmd"; if (t in c) printf "ratio %s %s: %s %.1fx trace-cmd report events/s (CPU), %.1fx (wall)\n",a[1],a[2],a[3],c[t]/c[k],w[t]/w[k] } }
  for (k in c) { split(k,a,"\t"); if (a[1] ~ /^pf/) { t="6\t"a[2]"\t"a[3]; if (t in c) printf "perfetto %s %s: %s %.2fx the CPU time of the same events as trace.dat v6 (goal: within 2x), %.2fx wall\n",a[1],a[2],a[3],c[k]/c[t],w[k]/w[t] } }
}' "$raw" | sort | tee "$out/summary.txt"
uptime | tee "$out/load.txt"
