/* SPDX-License-Identifier: MIT */
/*
 * vsched: a virtual GPU whose rings are driven by the DRM GPU scheduler and
 * whose engines are timers, for testing the scheduler and its tracing.
 */
#ifndef _UAPI_VSCHED_DRM_H_
#define _UAPI_VSCHED_DRM_H_

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_VSCHED_SUBMIT		0x00

#define DRM_IOCTL_VSCHED_SUBMIT		DRM_IOWR(DRM_COMMAND_BASE + \
					DRM_VSCHED_SUBMIT, \
					struct drm_vsched_submit)

/* rings of the device */
#define VSCHED_RING_GFX			0
#define VSCHED_RING_COPY		1
#define VSCHED_RINGS			2

/* drm_vsched_submit.flags: the engine fails the job (its fence signals -EIO) */
#define VSCHED_SUBMIT_FAULT		(1u << 0)

/* limits of one job */
#define VSCHED_MAX_IN_SYNCS		16
#define VSCHED_MAX_EXEC_US		1000000

/**
 * struct drm_vsched_submit - queue one job on a ring
 * @in_syncs: user pointer to @n_in_syncs __u32 syncobj handles; the job
 *            runs once the fences in them have signalled
 * @n_in_syncs: number of handles, at most %VSCHED_MAX_IN_SYNCS
 * @out_sync: syncobj that gets the job's finished fence, 0 for none
 * @ring: %VSCHED_RING_GFX or %VSCHED_RING_COPY
 * @exec_us: how long the ring's engine executes the job, at most
 *           %VSCHED_MAX_EXEC_US
 * @flags: %VSCHED_SUBMIT_FAULT or 0
 * @pad: must be 0
 * @fence_context: out: context of the job's finished fence
 * @fence_seqno: out: seqno of the job's finished fence
 * @job_id: out: the scheduler's id of the job (the id of its trace events)
 *
 * Each open file is a context with one scheduler entity per ring.
 */
struct drm_vsched_submit {
	__u64 in_syncs;
	__u32 n_in_syncs;
	__u32 out_sync;
	__u32 ring;
	__u32 exec_us;
	__u32 flags;
	__u32 pad;
	__u64 fence_context;
	__u64 fence_seqno;
	__u64 job_id;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_VSCHED_DRM_H_ */
