/* SPDX-License-Identifier: MIT */
/*
 * grtrace: GPU ring-buffer tracing, record format and relay protocol 1.0.
 *
 * This header is the kernel's copy of the grtrace format contract (FORMAT.md in
 * the grtrace project).  A test in the project compiles it against layout
 * assertions generated from the user-space definition, so both agree byte for
 * byte.  All fields are in the byte order of the writing host.
 *
 * A session is controlled through ioctls on the card's primary node
 * (/dev/dri/cardN), root only, as BLKTRACESETUP and friends control blktrace:
 * DRM_IOCTL_GRTRACE_SETUP, _START, _STOP and _TEARDOWN (at the end of this
 * header).  /sys/kernel/debug/grtrace/cardN/trace<cpu> are then relay buffers
 * of n_subbufs sub-buffers of subbuf_size bytes.  Every sub-buffer starts with
 * a struct grtrace_subbuf_header; records follow it, each starting with a
 * struct grtrace_record_header, 8-byte aligned and a multiple of 8 in size.
 */
#ifndef _UAPI_DRM_GRTRACE_H_
#define _UAPI_DRM_GRTRACE_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define GRTRACE_VERSION_MAJOR		1
#define GRTRACE_VERSION_MINOR		0

/* stream files written by the recorder */
#define GRTRACE_STREAM_MAGIC		"GRTRACE"	/* 8 bytes with the NUL */
#define GRTRACE_STREAM_HEADER_SIZE	128
#define GRTRACE_STREAM_HEADER_MAX	4096
#define GRTRACE_BYTE_ORDER_LITTLE	1
#define GRTRACE_BYTE_ORDER_BIG		2
#define GRTRACE_CLOCK_MONOTONIC		1
#define GRTRACE_CPU_MERGED		0xffffffffu

#define GRTRACE_STREAM_MERGED		(1u << 0)
#define GRTRACE_STREAM_SIMULATED	(1u << 1)
#define GRTRACE_STREAM_SEQ_CHECKED	(1u << 2)

struct grtrace_stream_header {
	__u8 magic[8];
	__u8 byte_order;
	__u8 reserved0;
	__u16 version_major;
	__u16 version_minor;
	__u16 header_size;
	__u32 clock_id;
	__u32 cpu;
	__u32 card;
	__u32 flags;
	__u64 session_id;
	__u64 anchor_realtime_ns;
	__u64 anchor_clock_ns;
	char driver[32];
	__u8 reserved[40];
};

/* records */
#define GRTRACE_RECORD_HEADER_SIZE	32
#define GRTRACE_RECORD_ALIGN		8

#define GRTRACE_REC_EVENT		1
#define GRTRACE_REC_NOTE_PROCESS	2
#define GRTRACE_REC_NOTE_RING		3
#define GRTRACE_REC_NOTE_MSG		4
#define GRTRACE_REC_NOTE_CLOCK_SYNC	5
#define GRTRACE_REC_NOTE_LOST		6
#define GRTRACE_REC_NOTE_STREAM_INFO	7

struct grtrace_record_header {
	__u16 type;
	__u16 size;
	__u16 code;
	__u16 flags;
	__u32 cpu;
	__u32 pid;
	__u64 time_ns;
	__u64 seq;
};

/* event codes, below 64 so that a 64-bit mask selects them */
#define GRTRACE_EV_ALLOC		1
#define GRTRACE_EV_COMMIT		2
#define GRTRACE_EV_SUBMIT		3
#define GRTRACE_EV_STALL		4
#define GRTRACE_EV_QUEUE		5
#define GRTRACE_EV_START		6
#define GRTRACE_EV_END			7
#define GRTRACE_EV_IRQ			8
#define GRTRACE_EV_SIGNAL		9
#define GRTRACE_EV_WAIT			10
#define GRTRACE_EV_WAIT_END		11
#define GRTRACE_EV_SYNC_ENTER		12
#define GRTRACE_EV_SYNC_EXIT		13
#define GRTRACE_EV_CTX_SWITCH		14
#define GRTRACE_EV_CTX_CREATE		15
#define GRTRACE_EV_CTX_DESTROY		16
#define GRTRACE_EV_MEM_ALLOC		17
#define GRTRACE_EV_MEM_FREE		18
#define GRTRACE_EV_MEM_MAP		19
#define GRTRACE_EV_MEM_UNMAP		20
#define GRTRACE_EV_VM_FAULT		21
#define GRTRACE_EV_VM_RETRY		22
#define GRTRACE_EV_TIMEOUT		23
#define GRTRACE_EV_RESET		24
#define GRTRACE_EV_HANG			25
#define GRTRACE_EV_LIMIT		26	/* one past the largest code */

#define GRTRACE_EVENT_MASK_ALL	(((1ULL << GRTRACE_EV_LIMIT) - 1) & ~1ULL)

/* event flags */
#define GRTRACE_EF_FENCED		(1u << 0)
#define GRTRACE_EF_PREEMPT		(1u << 1)
#define GRTRACE_EF_ERROR		(1u << 2)
#define GRTRACE_EF_KERNEL		(1u << 3)
#define GRTRACE_EF_HOST			(1u << 4)
/* the event's time is inferred, not observed (FORMAT.md 4.2) */
#define GRTRACE_EF_INFERRED		(1u << 5)
#define GRTRACE_EF_KNOWN		0x3fu

struct grtrace_event {
	struct grtrace_record_header hdr;
	__u32 ctx;
	__u32 ring;
	__u64 seqno;
	__u64 arg0;
	__u64 arg1;
	__u32 arg2;
	__u32 arg3;
};

struct grtrace_note_process {
	struct grtrace_record_header hdr;
	char comm[16];
};

#define GRTRACE_RING_UNIT_BYTES		0
#define GRTRACE_RING_UNIT_SLOTS		1

#define GRTRACE_ENGINE_OTHER		0
#define GRTRACE_ENGINE_GFX		1
#define GRTRACE_ENGINE_COMPUTE		2
#define GRTRACE_ENGINE_COPY		3
#define GRTRACE_ENGINE_VDEC		4
#define GRTRACE_ENGINE_VENC		5
#define GRTRACE_ENGINE_CONTROL		6

/*
 * Ring flags.  CTX_SEQNO: seqnos are per context, not per ring, so a SUBMIT
 * makes visible the jobs of its own context only.  VIRTUAL: the ring of jobs
 * not yet given to a physical ring (a load-balanced engine); a job's later
 * events may name the ring it runs on, and (ctx, seqno) joins the two.
 */
#define GRTRACE_RING_CTX_SEQNO		(1u << 0)
#define GRTRACE_RING_VIRTUAL		(1u << 1)

struct grtrace_note_ring {
	struct grtrace_record_header hdr;
	__u32 ring;
	__u32 engine_class;
	__u64 size;
	__u32 unit;
	__u32 flags;		/* GRTRACE_RING_*; 0 before they were defined */
	char name[32];
};

#define GRTRACE_MSG_MAX			1024

struct grtrace_note_msg {
	struct grtrace_record_header hdr;
	__u32 len;
	__u32 reserved;
	__u8 text[];	/* len bytes, padded with NUL to a multiple of 8 */
};

struct grtrace_note_clock_sync {
	struct grtrace_record_header hdr;
	__u32 gpu_clock_id;
	__u32 reserved;
	__u64 gpu_time;
	__u64 gpu_freq_hz;
};

#define GRTRACE_LOST_KERNEL		1
#define GRTRACE_LOST_RECORDER		2
#define GRTRACE_LOST_SEQ_GAP		3

struct grtrace_note_lost {
	struct grtrace_record_header hdr;
	__u32 lost_cpu;
	__u32 source;
	__u64 count;
	__u64 first_ns;
	__u64 last_ns;
};

#define GRTRACE_INFO_STOPPED_CLEANLY	(1u << 0)

struct grtrace_note_stream_info {
	struct grtrace_record_header hdr;
	__u64 kernel_dropped;
	__u64 records;
	__u64 bytes;
	__u32 info_flags;
	__u32 reserved;
};

/* relay sub-buffer header */
#define GRTRACE_SUBBUF_MAGIC		0x53545247u	/* "GRTS" in little endian */
#define GRTRACE_SUBBUF_VERSION		1
#define GRTRACE_SUBBUF_HEADER_SIZE	32
#define GRTRACE_SUBBUF_FINAL		(1u << 0)

#define GRTRACE_MIN_SUBBUF_SIZE		4096
#define GRTRACE_MAX_SUBBUF_SIZE		(64u << 20)
#define GRTRACE_MIN_N_SUBBUFS		2
#define GRTRACE_MAX_N_SUBBUFS		4096
/* and subbuf_size * n_subbufs * possible CPUs at most a quarter of RAM */

struct grtrace_subbuf_header {
	__u32 magic;
	__u16 version;
	__u16 header_size;
	__u64 subbuf_seq;	/* stored last, with release semantics */
	__u32 commit;		/* bytes valid, header included; release-stored */
	__u32 padding;		/* unused tail bytes, valid once FINAL */
	__u32 lost;		/* records refused before this sub-buffer */
	__u32 flags;		/* GRTRACE_SUBBUF_FINAL */
};

/*
 * Session control: DRM core ioctls on the primary node, root only
 * (CAP_SYS_ADMIN, else EACCES), refused on render nodes.  One session per
 * device, whoever opened the node: the states are idle, setup, running and
 * stopped.
 *
 * SETUP (idle -> setup) creates the relay channel; EBUSY when the device is
 * not idle, EINVAL when a field is out of range, a must-be-zero bit or
 * field is not zero or all buffers together (subbuf_size * n_subbufs *
 * possible CPUs) would take more than a quarter of RAM, ENOMEM, ENODEV when
 * the device has no grtrace directory, EPERM when the kernel is locked down
 * (the trace files are debugfs files that lockdown refuses).  START
 * (setup or stopped -> running; EINVAL when idle; running stays running)
 * writes the ring-table notes and begins tracing.  STOP
 * (running -> stopped; otherwise nothing) waits for writers and flushes, so
 * that every sub-buffer holding data is FINAL.  TEARDOWN (any state -> idle)
 * stops and removes the trace files; an open mapping stays valid.
 */
#define GRTRACE_SETUP_PID		(1u << 0)	/* pid is set */
#define GRTRACE_SETUP_CTX		(1u << 1)	/* ctx is set */
#define GRTRACE_SETUP_RING		(1u << 2)	/* ring is set */
#define GRTRACE_SETUP_KNOWN		0x7u

struct drm_grtrace_setup {
	/* in: GRTRACE_MIN..MAX_SUBBUF_SIZE, a multiple of 8 */
	__u32 subbuf_size;
	/* in: GRTRACE_MIN..MAX_N_SUBBUFS */
	__u32 n_subbufs;
	/*
	 * in: bit 1 << GRTRACE_EV_* selects an event; 0 selects every event;
	 * a bit outside GRTRACE_EVENT_MASK_ALL is refused (EINVAL)
	 */
	__u64 events;
	/* in: GRTRACE_SETUP_*, the filters that are set; other bits: EINVAL */
	__u32 flags;
	/*
	 * in: events taken in the context of another user process are
	 * filtered out; interrupt, kernel thread and worker events always pass.
	 * pid, ctx and ring must be 0 unless their flag is set (EINVAL), so
	 * that a later version can give them a meaning.
	 */
	__u32 pid;
	__u32 ctx;		/* in: only events of this context */
	__u32 ring;		/* in: only events of this ring */
	__u64 session;		/* in: 0 (EINVAL otherwise); out: the id info shows */
};

/*
 * Core DRM ioctl numbers after the last one of Linux 6.12
 * (DRM_IOCTL_MODE_CLOSEFB, 0xD0), leaving room for the core's own next ones.
 */
#define DRM_IOCTL_GRTRACE_SETUP	DRM_IOWR(0xE0, struct drm_grtrace_setup)
#define DRM_IOCTL_GRTRACE_START	DRM_IO(0xE1)
#define DRM_IOCTL_GRTRACE_STOP	DRM_IO(0xE2)
#define DRM_IOCTL_GRTRACE_TEARDOWN	DRM_IO(0xE3)

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_DRM_GRTRACE_H_ */
