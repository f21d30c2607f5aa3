#!/usr/bin/env bash
# Two grtreport builds on the same input, interleaved per repetition and mode, so that both
# see the same machine (a change's before and after, on a host whose load moves):
#
#   BEFORE=old/grtreport AFTER=new/grtreport GRTGEN=bin/grtgen \
#       bash bench/report/ab.sh 10000000 5 report jobs csv parquet > ab.tsv
#   python3 bench/report/abstat.py ab.tsv      # medians, and each mode against the report
#
# Modes: report, jobs, csv, json, parquet (the arguments as in export.sh). WORK (default
# /tmp/bench-ab) holds the input g$N and the outputs, removed after each run.
set -euo pipefail
N=${1:?usage: ab.sh EVENTS REPS MODE...}; REPS=${2:?usage: ab.sh EVENTS REPS MODE...}; shift 2
WORK=${WORK:-/tmp/bench-ab}
G=$WORK/g$N
[ -e "$G/run.grtrace.1" ] || { mkdir -p "$G"; "${GRTGEN:?}" -n "$N" --cpus 2 -o "$G/run" > /dev/null; }
echo -e "bin\tmode\trep\twall\tuser\tsys\trss"
for rep in $(seq "$REPS"); do
    for mode in "$@"; do
        case $mode in
            report) a="--top 10" ;;
            jobs) a="-q --jobs" ;;
            csv) a="-q --csv $WORK/o.csv" ;;
            json) a="--json --top 10" ;;
            parquet) a="-q --parquet $WORK/ds --host b --tag kernel=x" ;;
            *) echo "ab.sh: no mode $mode" >&2; exit 2 ;;
        esac
        for b in before after; do
            bin=${AFTER:?}; [ $b = before ] && bin=${BEFORE:?}
            rm -rf "$WORK/ds" "$WORK"/o.*
            # shellcheck disable=SC2086 # the arguments are words
            /usr/bin/time -f "%e\t%U\t%S\t%M" -o "$WORK/t" "$bin" "$G/run" $a > /dev/null
            echo -e "$b\t$mode\t$rep\t$(cat "$WORK/t")"
        done
    done
done
