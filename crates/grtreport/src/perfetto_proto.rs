//! The subset of Perfetto's trace schema that `--perfetto FILE.pftrace` writes, as prost
//! messages. Written by hand from the published schema (protos/perfetto/trace/
//! trace_packet.proto, track_event/{track_event,track_descriptor,process_descriptor,
//! counter_descriptor,debug_annotation}.proto, interned_data/interned_data.proto,
//! gpu/gpu_info.proto); the tag of every field is Perfetto's. Fields the export does not
//! use are left out: a decoder skips what it does not know, and Perfetto's tools decode
//! what is here by its tag.

use prost::Message;

/// Field numbers of what the hot path encodes by hand ([`wire`]): the packet wrapper,
/// `TrackEvent` and `DebugAnnotation`.
pub mod field {
    /// `TracePacket.timestamp`.
    pub const TIMESTAMP: u32 = 8;
    /// `TracePacket.trusted_packet_sequence_id`.
    pub const SEQUENCE_ID: u32 = 10;
    /// `TracePacket.track_event`.
    pub const TRACK_EVENT: u32 = 11;
    /// `TracePacket.interned_data`.
    pub const INTERNED_DATA: u32 = 12;
    /// `TracePacket.sequence_flags`.
    pub const SEQUENCE_FLAGS: u32 = 13;
    /// `TracePacket.timestamp_clock_id`.
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    /// `TrackEvent.category_iids`.
    pub const CATEGORY_IIDS: u32 = 3;
    /// `TrackEvent.debug_annotations`.
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    /// `TrackEvent.type`.
    pub const TYPE: u32 = 9;
    /// `TrackEvent.name_iid`.
    pub const NAME_IID: u32 = 10;
    /// `TrackEvent.track_uuid`.
    pub const TRACK_UUID: u32 = 11;
    /// `TrackEvent.extra_counter_values`.
    pub const EXTRA_COUNTER_VALUES: u32 = 12;
    /// `TrackEvent.name`.
    pub const NAME: u32 = 23;
    /// `TrackEvent.extra_counter_track_uuids`.
    pub const EXTRA_COUNTER_TRACK_UUIDS: u32 = 31;
    /// `TrackEvent.double_counter_value`.
    pub const DOUBLE_COUNTER_VALUE: u32 = 44;
    /// `TrackEvent.extra_double_counter_track_uuids`.
    pub const EXTRA_DOUBLE_COUNTER_TRACK_UUIDS: u32 = 45;
    /// `TrackEvent.extra_double_counter_values`.
    pub const EXTRA_DOUBLE_COUNTER_VALUES: u32 = 46;
    /// `TrackEvent.flow_ids` (fixed64).
    pub const FLOW_IDS: u32 = 47;
    /// `TrackEvent.terminating_flow_ids` (fixed64).
    pub const TERMINATING_FLOW_IDS: u32 = 48;
    /// `DebugAnnotation.name_iid`.
    pub const ARG_NAME_IID: u32 = 1;
    /// `DebugAnnotation.bool_value`.
    pub const ARG_BOOL: u32 = 2;
    /// `DebugAnnotation.uint_value`.
    pub const ARG_UINT: u32 = 3;
    /// `DebugAnnotation.double_value`.
    pub const ARG_DOUBLE: u32 = 5;
    /// `DebugAnnotation.string_value`.
    pub const ARG_STRING: u32 = 6;
    /// `DebugAnnotation.string_value_iid`.
    pub const ARG_STRING_IID: u32 = 17;
}

/// Protobuf's wire format, written straight into a reused buffer: the export writes
/// millions of track events, and building a prost message for each (its `Vec`s and
/// `String`s, then sizing and encoding it) cost more than the rest of the export.
pub mod wire {
    /// Writes `v` as a varint into `d` at `n`; returns the end.
    #[inline]
    fn put_varint(d: &mut [u8], mut n: usize, mut v: u64) -> usize {
        while v >= 0x80 {
            d[n] = v as u8 | 0x80;
            v >>= 7;
            n += 1;
        }
        d[n] = v as u8;
        n + 1
    }

    /// Appends `v` as a varint (one capacity check: pushing byte by byte cost more than
    /// the encoding).
    #[inline]
    pub fn varint(b: &mut Vec<u8>, v: u64) {
        if v < 0x80 {
            b.push(v as u8);
            return;
        }
        let mut d = [0u8; 10];
        let n = put_varint(&mut d, 0, v);
        b.extend_from_slice(&d[..n]);
    }

    /// Appends a `DebugAnnotation` field `field` (of the event) named by `name_iid` whose
    /// value is the varint field `value_field` (uint, bool, interned string): built on
    /// the stack, its length known before it is appended.
    #[inline]
    pub fn annotation_varint(b: &mut Vec<u8>, field: u32, name_iid: u64, value_field: u32, v: u64) {
        let mut d = [0u8; 40];
        let mut n = put_varint(&mut d, 0, (u64::from(field) << 3) | 2);
        let len_at = n;
        n += 1;
        n = put_varint(&mut d, n, 1 << 3);
        n = put_varint(&mut d, n, name_iid);
        n = put_varint(&mut d, n, u64::from(value_field) << 3);
        n = put_varint(&mut d, n, v);
        // At most 2 + 10 + 3 + 10 bytes: the length fits one byte.
        d[len_at] = (n - len_at - 1) as u8;
        b.extend_from_slice(&d[..n]);
    }

    /// A field's key (number and wire type).
    #[inline]
    pub fn key(b: &mut Vec<u8>, field: u32, wire_type: u8) {
        varint(b, (u64::from(field) << 3) | u64::from(wire_type));
    }

    /// A varint field (uint32, uint64, int32 >= 0, bool, enum).
    #[inline]
    pub fn uint(b: &mut Vec<u8>, field: u32, v: u64) {
        key(b, field, 0);
        varint(b, v);
    }

    /// A fixed64 field.
    #[inline]
    pub fn fixed64(b: &mut Vec<u8>, field: u32, v: u64) {
        key(b, field, 1);
        b.extend_from_slice(&v.to_le_bytes());
    }

    /// A double field.
    #[inline]
    pub fn double(b: &mut Vec<u8>, field: u32, v: f64) {
        fixed64(b, field, v.to_bits());
    }

    /// A length-delimited field (string, bytes, an encoded message).
    #[inline]
    pub fn bytes(b: &mut Vec<u8>, field: u32, v: &[u8]) {
        key(b, field, 2);
        varint(b, v.len() as u64);
        b.extend_from_slice(v);
    }

    /// Starts a message field whose length is not known yet; returns where its body
    /// starts, for [`close`]. One byte is kept for the length, the common case.
    #[inline]
    pub fn open(b: &mut Vec<u8>, field: u32) -> usize {
        key(b, field, 2);
        b.push(0);
        b.len()
    }

    /// Ends the message field [`open`] started at `start`: writes its length, moving the
    /// body when the length takes more than the byte kept for it.
    #[inline]
    pub fn close(b: &mut Vec<u8>, start: usize) {
        let len = b.len() - start;
        if len < 0x80 {
            b[start - 1] = len as u8;
            return;
        }
        let mut d = [0u8; 10];
        let n = put_varint(&mut d, 0, len as u64);
        let end = b.len();
        b.resize(end + n - 1, 0);
        b.copy_within(start..end, start + n - 1);
        b[start - 1..start - 1 + n].copy_from_slice(&d[..n]);
    }
}

/// `Trace.packet`: the file is a sequence of this one field, each a length-delimited
/// [`TracePacket`], so packets can be written one after another.
pub const TRACE_PACKET_TAG: u8 = (1 << 3) | 2;

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`: interned data starts afresh.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`: the packet refers to interned data.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// `TracePacket`, as the export's first packets and descriptors need it (the members of
/// its `data` oneof that they use are optional fields here: one is set per packet). Track
/// event packets are encoded by hand ([`wire`], [`field`]).
#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
    #[prost(bool, optional, tag = "87")]
    pub first_packet_on_sequence: Option<bool>,
    #[prost(message, optional, tag = "128")]
    pub gpu_info: Option<GpuInfo>,
}

/// `TrackDescriptor`: a track events and counters refer to by `uuid`.
#[derive(Clone, PartialEq, Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
    /// `ChildTracksOrdering` of this track's children.
    #[prost(int32, optional, tag = "11")]
    pub child_ordering: Option<i32>,
    #[prost(int32, optional, tag = "12")]
    pub sibling_order_rank: Option<i32>,
    #[prost(string, optional, tag = "14")]
    pub description: Option<String>,
}

/// `TrackDescriptor.ChildTracksOrdering.EXPLICIT`: children sorted by `sibling_order_rank`.
pub const CHILD_ORDERING_EXPLICIT: i32 = 3;

/// `ProcessDescriptor`.
#[derive(Clone, PartialEq, Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
    #[prost(string, repeated, tag = "8")]
    pub process_labels: Vec<String>,
}

/// `CounterDescriptor`.
#[derive(Clone, PartialEq, Message)]
pub struct CounterDescriptor {
    /// `CounterDescriptor.Unit`.
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

/// `CounterDescriptor.Unit.UNIT_COUNT`.
pub const UNIT_COUNT: i32 = 2;

/// `TrackEvent.Type.TYPE_SLICE_BEGIN`.
pub const TYPE_SLICE_BEGIN: u64 = 1;
/// `TrackEvent.Type.TYPE_SLICE_END`.
pub const TYPE_SLICE_END: u64 = 2;
/// `TrackEvent.Type.TYPE_INSTANT`.
pub const TYPE_INSTANT: u64 = 3;
/// `TrackEvent.Type.TYPE_COUNTER`.
pub const TYPE_COUNTER: u64 = 4;

/// `InternedData`: names given an id once per sequence, referred to by that id after.
#[derive(Clone, PartialEq, Message)]
pub struct InternedData {
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<InternedName>,
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
}

/// `EventCategory`, `EventName` and `DebugAnnotationName`: the same two fields.
#[derive(Clone, PartialEq, Message)]
pub struct InternedName {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `InternedString` (its `str` is bytes).
#[derive(Clone, PartialEq, Message)]
pub struct InternedString {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

/// `TracePacketDefaults`: what the packets of the sequence leave out.
#[derive(Clone, PartialEq, Message)]
pub struct TracePacketDefaults {
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
}

/// `ClockSnapshot`: clocks read at the same instant.
#[derive(Clone, PartialEq, Message)]
pub struct ClockSnapshot {
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    /// `BuiltinClock` the trace's times are put on.
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

/// `ClockSnapshot.Clock`.
#[derive(Clone, PartialEq, Message)]
pub struct Clock {
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
}

/// `BuiltinClock.BUILTIN_CLOCK_BOOTTIME`: the clock of packets that name none (in a trace
/// without other clocks, the times as written).
pub const CLOCK_BOOTTIME: u32 = 6;
/// The sequence's own clock (ids 64-127 are sequence-scoped): ns since the previous packet
/// on it, as Perfetto's SDK writes `TrackEvent` times.
pub const CLOCK_INCREMENTAL: u32 = 64;

/// `GpuInfo`: the GPUs of the trace (trace processor's `gpu` table).
#[derive(Clone, PartialEq, Message)]
pub struct GpuInfo {
    #[prost(message, repeated, tag = "1")]
    pub gpus: Vec<Gpu>,
}

/// `GpuInfo.Gpu`.
#[derive(Clone, PartialEq, Message)]
pub struct Gpu {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub model: Option<String>,
}
