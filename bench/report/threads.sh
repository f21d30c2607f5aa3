#!/usr/bin/env bash
# Per-thread CPU of a command, sampled every 50 ms while it runs: which thread of a
# pipelined run is the limit (busy every sample) and which wait.
#
#   bash bench/report/threads.sh target/release/grtreport run -q --parquet /tmp/ds
#
# Each line: milliseconds since the start, then THREAD=TICKS (user+system clock ticks,
# cumulative, from /proc/PID/task/*/stat) for each thread alive then; stdout of the command
# goes to /dev/null.
"$@" > /dev/null &
pid=$!
t0=$(date +%s%N)
while kill -0 $pid 2>/dev/null; do
    now=$(( ($(date +%s%N) - t0) / 1000000 ))
    line="$now"
    for t in /proc/$pid/task/*; do
        read -r c < "$t/comm" 2>/dev/null || continue
        s=$(awk '{print $14+$15}' "$t/stat" 2>/dev/null) || continue
        line="$line $c=$s"
    done
    echo "$line"
    sleep 0.05
done
wait $pid; echo "rc=$? total_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
