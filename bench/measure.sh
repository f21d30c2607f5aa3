# Sourced by bench/report/run.sh and bench/fleet/run.sh: one timed run of a command, as a
# row of $RAW (events, tool, rep, wall s, user s, sys s, peak RSS KB, records), its stdout in
# $WORK/out_TOOL.txt for the callers' output checks. Needs WORK, RAW and log().
measure() { # size tool rep records -- command...
  local n=$1 tool=$2 rep=$3 rec=$4; shift 5
  local tl="$WORK/time.log"
  /usr/bin/time -v -o "$tl" "$@" > "$WORK/out_$tool.txt" 2> "$WORK/err_$tool.txt" || { cat "$WORK/err_$tool.txt" >&2; exit 1; }
  python3 - "$tl" "$n" "$tool" "$rep" "$rec" >> "$RAW" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
g = lambda p: re.search(p, t).group(1)
w = 0.0
for part in g(r'Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)').split(':'):
    w = w * 60 + float(part)
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], "%.3f" % w,
                 g(r'User time \(seconds\): (\S+)'), g(r'System time \(seconds\): (\S+)'),
                 g(r'Maximum resident set size \(kbytes\): (\d+)'), sys.argv[5]]))
PY
  log "N=$n $tool rep=$rep: $(tail -1 "$RAW" | cut -f4-7)"
}
