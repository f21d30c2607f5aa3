"""Writes a Perfetto trace for grtimport's tests with Perfetto's own schema
(perfetto_trace_pb2 from the `perfetto` package), independent of grtimport's reader.

Usage: make_pftrace.py SPEC.json OUT.pftrace

SPEC: {"packets": [PACKET...], "truncate": BYTES (optional, cut from the end)}
PACKET, one of:
  {"bundle": {"cpu": N, "lost": bool, "compact_switches": N,
              "clock": [FTRACE_CLOCK, FTRACE_TS, BOOT_TS] (optional; TS 0: none),
              "events": [{"ts", "pid", "name", "ints": {...}, "strs": {...}}]},
   "seq": N, "dropped": bool}
  {"clock_snapshot": {"boot": NS, "mono": NS}}
  {"ftrace_stats": {"phase": 1|2, "cpus": [[cpu, overrun, dropped]]}}
  {"threads": [[tid, name]]}
  {"track_event": true}
  {"compressed": [PACKET...]}
An event is written as Perfetto's typed proto when FtraceEvent has a field of its name,
else as a GenericFtraceEvent (negative ints as int_value, others as uint_value).
"""
import json
import sys
import zlib

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

FTRACE_FIELDS = {f.name for f in pb.FtraceEvent.DESCRIPTOR.fields}


def fill_event(ev, e):
    ev.timestamp = e["ts"]
    ev.pid = e["pid"]
    name = e["name"]
    ints = e.get("ints", {})
    strs = e.get("strs", {})
    if name in FTRACE_FIELDS and name != "generic":
        msg = getattr(ev, name)
        names = {f.name: f for f in msg.DESCRIPTOR.fields}
        for k, v in ints.items():
            if k in names:
                setattr(msg, k, v)
        for k, v in strs.items():
            if k in names:
                setattr(msg, k, v)
        msg.SetInParent()
    else:
        g = ev.generic
        g.event_name = name
        for k, v in ints.items():
            f = g.field.add()
            f.name = k
            if v < 0:
                f.int_value = v
            else:
                f.uint_value = v
        for k, v in strs.items():
            f = g.field.add()
            f.name = k
            f.str_value = v


def fill_packet(p, spec):
    if "bundle" in spec:
        b = spec["bundle"]
        fb = p.ftrace_events
        fb.cpu = b["cpu"]
        if b.get("lost"):
            fb.lost_events = True
        if "clock" in b:
            kind, fts, bts = b["clock"]
            fb.ftrace_clock = kind
            if fts:
                fb.ftrace_timestamp = fts
                fb.boot_timestamp = bts
        for e in b.get("events", []):
            fill_event(fb.event.add(), e)
        n = b.get("compact_switches", 0)
        if n:
            cs = fb.compact_sched
            for i in range(n):
                cs.switch_timestamp.append(1000 + i)
                cs.switch_prev_state.append(0)
                cs.switch_next_pid.append(1)
                cs.switch_next_prio.append(120)
                cs.switch_next_comm_index.append(0)
            cs.intern_table.append("swapper")
        p.trusted_packet_sequence_id = spec.get("seq", 1)
        if spec.get("dropped"):
            p.previous_packet_dropped = True
    elif "clock_snapshot" in spec:
        c = spec["clock_snapshot"]
        for cid, ts in ((pb.BUILTIN_CLOCK_BOOTTIME, c["boot"]),
                        (pb.BUILTIN_CLOCK_MONOTONIC, c["mono"]),
                        (pb.BUILTIN_CLOCK_REALTIME, 1_700_000_000_000_000_000)):
            k = p.clock_snapshot.clocks.add()
            k.clock_id = cid
            k.timestamp = ts
    elif "ftrace_stats" in spec:
        s = spec["ftrace_stats"]
        p.ftrace_stats.phase = s["phase"]
        for cpu, overrun, dropped in s["cpus"]:
            c = p.ftrace_stats.cpu_stats.add()
            c.cpu = cpu
            c.overrun = overrun
            c.dropped_events = dropped
    elif "threads" in spec:
        for tid, name in spec["threads"]:
            t = p.process_tree.threads.add()
            t.tid = tid
            t.tgid = tid
            t.name = name
    elif "track_event" in spec:
        p.track_event.type = pb.TrackEvent.TYPE_INSTANT
        p.track_event.name = "frame"
        p.timestamp = 5
        p.trusted_packet_sequence_id = 9
    elif "compressed" in spec:
        inner = pb.Trace()
        for s in spec["compressed"]:
            fill_packet(inner.packet.add(), s)
        p.compressed_packets = zlib.compress(inner.SerializeToString())
    else:
        raise SystemExit("unknown packet spec: %r" % spec)


def main():
    spec = json.load(open(sys.argv[1]))
    t = pb.Trace()
    for s in spec["packets"]:
        fill_packet(t.packet.add(), s)
    data = t.SerializeToString()
    cut = spec.get("truncate", 0)
    if cut:
        data = data[:-cut]
    open(sys.argv[2], "wb").write(data)


if __name__ == "__main__":
    main()
