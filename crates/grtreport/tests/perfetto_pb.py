"""Decodes a Perfetto protobuf trace with Perfetto's own compiled schema (perfetto_trace_pb2
from the PyPI package `perfetto`), checks what trace_processor relies on and prints what a
user would see as JSON: GPUs, tracks, slices, instants, counters and flows.

Packets in compressed blocks (TracePacket.compressed_packets: a zlib-deflated Trace) are
read in their place, as trace_processor reads them; such a packet carries nothing else.

Checks (a failure prints one line per problem and exits 1):
* packets are on packet sequences (trusted_packet_sequence_id): each sequence's first
  packet clears its incremental state (SEQ_INCREMENTAL_STATE_CLEARED) and no later one
  does; interned data, defaults and sequence-scoped clocks are each sequence's own;
* every interned id a track event uses (category, event name, debug annotation name and
  string value) was defined earlier on its sequence, in the same or an earlier packet, and
  such packets carry SEQ_NEEDS_INCREMENTAL_STATE; no id is defined twice on a sequence;
* every track event names a track described before it; counter values only on counter
  tracks, slices only on others; parents are described;
* times are resolved as trace_processor resolves them: a packet's timestamp_clock_id, else
  the sequence's TracePacketDefaults one, else the trace's clock; a sequence-scoped clock
  (64-127) must be in a ClockSnapshot on the sequence before it is used, and an
  incremental one counts from the snapshot, each packet's time the step from the last
  packet on it; a snapshot maps it onto BOOTTIME, the trace's clock. Packets on the
  incremental clock carry SEQ_NEEDS_INCREMENTAL_STATE; a track event without track_uuid
  is on the sequence's TrackEventDefaults track;
* per track, in time order (file order among equal times, as trace_processor sorts): every
  slice end closes an open slice, nothing is left open, and an end comes at or after its
  begin.

Flows are bound as trace_processor binds them: an event's flow_ids start a flow (or step an
active one) at the slice it begins or ends, terminating_flow_ids end an active flow there.

Usage: perfetto_pb.py TRACE
       perfetto_pb.py --self-test TRACE   (TRACE of two blocks or more: the checks of
       sequences must reject the second block without its first packet, without its clock
       snapshot, and moved onto the first block's sequence; exit 0 if they all do)
"""

import json
import sys
import zlib

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

SEQ_CLEARED = 1
SEQ_NEEDS = 2
BOOTTIME = 6


def main(path):
    with open(path, "rb") as f:
        errs, seen = check(f.read())
    if errs:
        for e in errs[:20]:
            print(e, file=sys.stderr)
        sys.exit(1)
    json.dump(seen, sys.stdout)


def self_test(path):
    """Damages the second block of PATH three ways; each must be rejected as expected."""
    raw = pb.Trace()
    with open(path, "rb") as f:
        raw.ParseFromString(f.read())
    assert len(raw.packet) >= 2, "a trace of two blocks or more"

    def drop_first(t):
        del t.packet[0]

    def drop_snapshot(t):
        del t.packet[1]

    def onto_first(t):
        for p in t.packet:
            p.trusted_packet_sequence_id = raw_first_sequence

    first = pb.Trace()
    first.ParseFromString(zlib.decompress(raw.packet[0].compressed_packets))
    raw_first_sequence = first.packet[0].trusted_packet_sequence_id
    failed = 0
    for damage, want in (
        (drop_first, "does not clear the incremental state"),
        (drop_snapshot, "not in a snapshot before"),
        (onto_first, "clears the incremental state of sequence"),
    ):
        out = pb.Trace()
        for i, p in enumerate(raw.packet):
            inner = pb.Trace()
            inner.ParseFromString(zlib.decompress(p.compressed_packets))
            if i == 1:
                damage(inner)
            out.packet.add().compressed_packets = zlib.compress(inner.SerializeToString())
        errs, _ = check(out.SerializeToString())
        if not any(want in e for e in errs):
            print(f"{damage.__name__}: not rejected with '{want}': {errs[:3]}", file=sys.stderr)
            failed += 1
    sys.exit(1 if failed else 0)


def check(data):
    """The problems of the trace `data`, and what a user would see in it."""
    raw = pb.Trace()
    raw.ParseFromString(data)
    errs = []
    trace = pb.Trace()
    blocks = 0
    for i, p in enumerate(raw.packet):
        if not p.HasField("compressed_packets"):
            trace.packet.append(p)
            continue
        blocks += 1
        if len(p.ListFields()) != 1:
            errs.append(f"file packet {i}: compressed_packets with other fields")
        inner = pb.Trace()
        inner.ParseFromString(zlib.decompress(p.compressed_packets))
        trace.packet.extend(inner.packet)
    tracks = {}
    gpus = []
    events = []  # (ts, file index, track uuid, TrackEvent, names resolved)
    seqs = {}  # sequence id -> its state
    global_clocks = {}  # clock id (< 64) -> as a sequence's clocks

    def resolve(i, p, flags, defaults, clocks):
        """The packet's time on BOOTTIME, as trace_processor computes it."""
        cid = p.timestamp_clock_id
        if not cid and defaults is not None:
            cid = defaults.timestamp_clock_id
        if not cid or cid == BOOTTIME:
            return p.timestamp
        if cid < 64:
            clocks = global_clocks
        if cid not in clocks:
            errs.append(f"packet {i}: clock {cid} not in a snapshot before")
            return p.timestamp
        c = clocks[cid]
        if c[2]:
            if not flags & SEQ_NEEDS:
                errs.append(f"packet {i}: incremental time without SEQ_NEEDS_INCREMENTAL_STATE")
            c[3] += p.timestamp
            t = c[3]
        else:
            t = p.timestamp
        return t - c[0] + c[1]

    for i, p in enumerate(trace.packet):
        flags = p.sequence_flags
        sid = p.trusted_packet_sequence_id
        if sid not in seqs:
            if not flags & SEQ_CLEARED:
                errs.append(f"packet {i}: the first of sequence {sid} does not clear the incremental state")
            seqs[sid] = {
                "interned": {"cat": {}, "name": {}, "arg": {}, "str": {}},
                "defaults": None,
                # clock id -> [snapshot value, BOOTTIME at the snapshot, incremental, last]
                "clocks": {},
            }
        elif flags & SEQ_CLEARED:
            errs.append(f"packet {i} clears the incremental state of sequence {sid} again")
        seq = seqs[sid]
        interned, clocks = seq["interned"], seq["clocks"]
        if p.HasField("trace_packet_defaults"):
            if not flags & SEQ_CLEARED:
                errs.append(f"packet {i}: defaults outside a packet clearing the state")
            seq["defaults"] = p.trace_packet_defaults
        defaults = seq["defaults"]
        if p.HasField("clock_snapshot"):
            snap = {c.clock_id: c for c in p.clock_snapshot.clocks}
            if BOOTTIME not in snap:
                errs.append(f"packet {i}: a clock snapshot without BOOTTIME")
            else:
                boot = snap[BOOTTIME].timestamp
                for cid, c in snap.items():
                    into = clocks if cid >= 64 else global_clocks
                    into[cid] = [c.timestamp, boot, c.is_incremental, c.timestamp]
        if p.HasField("interned_data"):
            d = p.interned_data
            for kind, items in (
                ("cat", d.event_categories),
                ("name", d.event_names),
                ("arg", d.debug_annotation_names),
            ):
                for it in items:
                    if it.iid in interned[kind]:
                        errs.append(f"packet {i}: {kind} iid {it.iid} defined twice")
                    interned[kind][it.iid] = it.name
            for it in d.debug_annotation_string_values:
                if it.iid in interned["str"]:
                    errs.append(f"packet {i}: string iid {it.iid} defined twice")
                interned["str"][it.iid] = it.str.decode()
        if p.HasField("gpu_info"):
            for g in p.gpu_info.gpus:
                gpus.append({"name": g.name, "model": g.model})
        if p.HasField("track_descriptor"):
            t = p.track_descriptor
            if t.uuid in tracks:
                errs.append(f"track {t.uuid} described twice")
            if t.HasField("parent_uuid") and t.parent_uuid not in tracks:
                errs.append(f"track {t.name}: parent {t.parent_uuid} not described before")
            tracks[t.uuid] = {
                "name": t.name,
                "parent": t.parent_uuid if t.HasField("parent_uuid") else None,
                "pid": t.process.pid if t.HasField("process") else None,
                "process_name": t.process.process_name if t.HasField("process") else None,
                "labels": list(t.process.process_labels),
                "counter": t.HasField("counter"),
                "rank": t.sibling_order_rank,
            }
        if p.HasField("track_event"):
            e = p.track_event
            used = bool(e.category_iids) or e.HasField("name_iid") or any(
                a.HasField("name_iid") or a.HasField("string_value_iid")
                for a in e.debug_annotations
            )
            if used and not flags & SEQ_NEEDS:
                errs.append(f"packet {i} uses interned data without SEQ_NEEDS_INCREMENTAL_STATE")

            def look(kind, iid):
                if iid not in interned[kind]:
                    errs.append(f"packet {i}: {kind} iid {iid} not defined before")
                    return "?"
                return interned[kind][iid]

            name = look("name", e.name_iid) if e.HasField("name_iid") else e.name
            cats = ",".join(look("cat", c) for c in e.category_iids)
            args = {}
            for a in e.debug_annotations:
                k = look("arg", a.name_iid) if a.HasField("name_iid") else a.name
                v = a.WhichOneof("value")
                if v == "string_value_iid":
                    args[k] = look("str", a.string_value_iid)
                else:
                    args[k] = getattr(a, v)
            uuid = e.track_uuid
            if not e.HasField("track_uuid") and defaults is not None:
                uuid = defaults.track_event_defaults.track_uuid
            if uuid not in tracks:
                errs.append(f"packet {i}: track {uuid} not described before")
            if not p.HasField("timestamp"):
                errs.append(f"packet {i}: a track event without a time")
            events.append((resolve(i, p, flags, defaults, clocks), i, uuid, e, name, cats, args))

    # trace_processor sorts by time; among equal times the file order stays.
    events.sort(key=lambda x: (x[0], x[1]))
    stacks = {}
    slices, instants, counters, flows = [], [], {}, []
    active = {}  # flow id -> slice index it last touched

    def bind(ev, at):
        for f in ev.flow_ids:
            if f in active:
                flows.append([active[f], at])
            active[f] = at
        for f in ev.terminating_flow_ids:
            if f in active:
                flows.append([active.pop(f), at])

    for ts, i, uuid, e, name, cats, args in events:
        tr = tracks.get(uuid, {"counter": False, "name": "?"})
        if e.type == pb.TrackEvent.TYPE_COUNTER:
            if not tr["counter"]:
                errs.append(f"packet {i}: counter value on track {tr['name']}")
            v = e.double_counter_value if e.HasField("double_counter_value") else e.counter_value
            counters.setdefault(tr["name"], []).append([ts, v])
        # Extra values of other counter tracks ride on any event (trace_processor reads
        # them before the event itself).
        for uuids, values in (
            (e.extra_counter_track_uuids, e.extra_counter_values),
            (e.extra_double_counter_track_uuids, e.extra_double_counter_values),
        ):
            if len(uuids) != len(values):
                errs.append(f"packet {i}: {len(values)} extra counter values for {len(uuids)} tracks")
            for u, v in zip(uuids, values):
                t = tracks.get(u)
                if t is None or not t["counter"]:
                    errs.append(f"packet {i}: extra counter value for track {u}")
                    continue
                counters.setdefault(t["name"], []).append([ts, v])
        if e.type == pb.TrackEvent.TYPE_COUNTER:
            continue
        if tr["counter"]:
            errs.append(f"packet {i}: slice event on counter track {tr['name']}")
        st = stacks.setdefault(uuid, [])
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            slices.append(
                {"track": uuid, "name": name, "cat": cats, "ts": ts, "dur": None,
                 "args": args, "depth": len(st)}
            )
            st.append(len(slices) - 1)
            bind(e, len(slices) - 1)
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            if not st:
                errs.append(f"packet {i}: end without an open slice on {tr['name']}")
                continue
            s = st.pop()
            slices[s]["dur"] = ts - slices[s]["ts"]
            bind(e, s)
        elif e.type == pb.TrackEvent.TYPE_INSTANT:
            instants.append(
                {"track": uuid, "name": name, "cat": cats, "ts": ts, "args": args}
            )
        else:
            errs.append(f"packet {i}: event type {e.type}")
    for uuid, st in stacks.items():
        if st:
            errs.append(f"{len(st)} slice(s) left open on {tracks[uuid]['name']}")
    return errs, {
        "packets": len(trace.packet),
        "sequences": len(seqs),
        "compressed_blocks": blocks,
        "gpus": gpus,
        "tracks": {str(k): v for k, v in tracks.items()},
        "slices": slices,
        "instants": instants,
        "counters": counters,
        "flows": flows,
    }


if __name__ == "__main__":
    if sys.argv[1] == "--self-test":
        self_test(sys.argv[2])
    else:
        main(sys.argv[1])
