/*
 * vgpu-workload: the grtrace end-to-end workload.  Drives virtio-gpu's
 * control virtqueue from user space through the real DRM uapi, so that the
 * driver queues real commands, some of them fenced (no libdrm needed).
 *
 *   A) RESOURCE_CREATE (2D texture) -> fenced RESOURCE_CREATE_2D and
 *      ATTACH_BACKING; WAIT on the BO (a dma_resv fence wait);
 *      TRANSFER_TO_HOST; WAIT; GEM_CLOSE -> RESOURCE_UNREF.
 *   B) KMS: two dumb buffers, SETCRTC, then PAGE_FLIP with event + DIRTYFB
 *      -> SET_SCANOUT, TRANSFER_TO_HOST_2D, RESOURCE_FLUSH.
 *   C) virgl only: empty EXECBUFFER with an out-fence -> fenced SUBMIT_3D on
 *      the file's context.
 * Per-path timings are printed ("us/iter"); the tracing-cost figures come
 * from them.
 *
 * Build: gcc -static -O2 -D__user= -I<uapi drm headers> vgpu-workload.c
 * Usage: vgpu-workload [iterations] [repetitions] [/dev/dri/card0]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <drm/drm.h>
#include <drm/drm_mode.h>
#include <drm/virtgpu_drm.h>

#include "guest.h"

#define FOURCC(a, b, c, d) ((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))
#define DRM_FORMAT_XRGB8888 FOURCC('X', 'R', '2', '4')

static int fd;
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int xioctl(unsigned long req, void *arg, const char *what)
{
	return xioctl_as("vgpu-workload", fd, req, arg, what);
}

static uint64_t getparam(uint64_t p)
{
	int value = 0;
	struct drm_virtgpu_getparam gp = { .param = p, .value = (uintptr_t)&value };
	if (ioctl(fd, DRM_IOCTL_VIRTGPU_GETPARAM, &gp))
		return (uint64_t)-1;
	return (uint64_t)value;
}

static void gem_close(uint32_t h)
{
	struct drm_gem_close gc = { .handle = h };
	xioctl(DRM_IOCTL_GEM_CLOSE, &gc, "GEM_CLOSE");
}

/* A) resource create (fenced) + wait + transfer + close */
static int path_resource(int iters)
{
	int ok = 0;
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		struct drm_virtgpu_resource_create rc = {
			.target = 2 /* PIPE_TEXTURE_2D */, .format = 2 /* B8G8R8X8_UNORM */,
			.bind = 2 /* RENDER_TARGET */, .width = 64, .height = 64,
			.depth = 1, .array_size = 1, .last_level = 0, .nr_samples = 0,
			.size = 64 * 64 * 4, .stride = 64 * 4,
		};
		if (xioctl(DRM_IOCTL_VIRTGPU_RESOURCE_CREATE, &rc, "RESOURCE_CREATE"))
			return ok;
		struct drm_virtgpu_3d_wait w = { .handle = rc.bo_handle };
		if (xioctl(DRM_IOCTL_VIRTGPU_WAIT, &w, "WAIT"))
			return ok;
		struct drm_virtgpu_3d_transfer_to_host t = {
			.bo_handle = rc.bo_handle, .box = { .x = 0, .y = 0, .z = 0, .w = 64, .h = 64, .d = 1 },
		};
		if (xioctl(DRM_IOCTL_VIRTGPU_TRANSFER_TO_HOST, &t, "TRANSFER_TO_HOST"))
			return ok;
		w.flags = 0;
		xioctl(DRM_IOCTL_VIRTGPU_WAIT, &w, "WAIT2");
		gem_close(rc.bo_handle);
		ok++;
	}
	printf("vgpu-workload: A resource_create+wait+transfer: %d/%d ok, %.1f us/iter\n", ok, iters,
	       (now() - t0) * 1e6 / (iters ? iters : 1));
	return ok;
}

struct fb { uint32_t handle, pitch, fb_id; uint64_t size; uint32_t *map; };

static int mkfb(struct fb *f, uint32_t w, uint32_t h)
{
	struct drm_mode_create_dumb cd = { .width = w, .height = h, .bpp = 32 };
	if (xioctl(DRM_IOCTL_MODE_CREATE_DUMB, &cd, "CREATE_DUMB"))
		return -1;
	f->handle = cd.handle; f->pitch = cd.pitch; f->size = cd.size;
	struct drm_mode_map_dumb md = { .handle = cd.handle };
	if (xioctl(DRM_IOCTL_MODE_MAP_DUMB, &md, "MAP_DUMB"))
		return -1;
	f->map = mmap(0, f->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, md.offset);
	if (f->map == MAP_FAILED) { perror("mmap dumb"); return -1; }
	struct drm_mode_fb_cmd2 fc = { .width = w, .height = h, .pixel_format = DRM_FORMAT_XRGB8888 };
	fc.handles[0] = f->handle; fc.pitches[0] = f->pitch;
	if (xioctl(DRM_IOCTL_MODE_ADDFB2, &fc, "ADDFB2"))
		return -1;
	f->fb_id = fc.fb_id;
	return 0;
}

/* B) KMS path */
static int path_kms(int iters)
{
	uint32_t crtcs[8], conns[8], encs[8], fbs[8];
	struct drm_mode_card_res res = { 0 };
	if (xioctl(DRM_IOCTL_MODE_GETRESOURCES, &res, "GETRESOURCES"))
		return 0;
	if (res.count_crtcs > 8 || res.count_connectors > 8 || res.count_encoders > 8 || res.count_fbs > 8)
		return 0;
	res.crtc_id_ptr = (uintptr_t)crtcs; res.connector_id_ptr = (uintptr_t)conns;
	res.encoder_id_ptr = (uintptr_t)encs; res.fb_id_ptr = (uintptr_t)fbs;
	if (xioctl(DRM_IOCTL_MODE_GETRESOURCES, &res, "GETRESOURCES2"))
		return 0;
	printf("vgpu-workload: KMS crtcs=%u connectors=%u encoders=%u\n", res.count_crtcs,
	       res.count_connectors, res.count_encoders);
	if (!res.count_crtcs || !res.count_connectors)
		return 0;

	struct drm_mode_modeinfo modes[64];
	struct drm_mode_get_connector gc = { .connector_id = conns[0] };
	if (xioctl(DRM_IOCTL_MODE_GETCONNECTOR, &gc, "GETCONNECTOR"))
		return 0;
	if (gc.count_modes > 64) gc.count_modes = 64;
	uint32_t nm = gc.count_modes;
	struct drm_mode_get_connector gc2 = { .connector_id = conns[0], .count_modes = nm,
					      .modes_ptr = (uintptr_t)modes };
	if (xioctl(DRM_IOCTL_MODE_GETCONNECTOR, &gc2, "GETCONNECTOR2") || !gc2.count_modes) {
		printf("vgpu-workload: connector %u has no modes (connection=%u)\n", conns[0], gc.connection);
		return 0;
	}
	struct drm_mode_modeinfo *m = &modes[0];
	printf("vgpu-workload: connector %u connection=%u mode %s %ux%u\n", conns[0], gc2.connection,
	       m->name, m->hdisplay, m->vdisplay);

	struct fb f[2];
	if (mkfb(&f[0], m->hdisplay, m->vdisplay) || mkfb(&f[1], m->hdisplay, m->vdisplay))
		return 0;
	memset(f[0].map, 0x40, f[0].size); memset(f[1].map, 0x80, f[1].size);

	struct drm_mode_crtc sc = { .crtc_id = crtcs[0], .fb_id = f[0].fb_id,
				    .set_connectors_ptr = (uintptr_t)&conns[0], .count_connectors = 1,
				    .mode = *m, .mode_valid = 1 };
	if (xioctl(DRM_IOCTL_MODE_SETCRTC, &sc, "SETCRTC"))
		return 0;

	int ok = 0;
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		struct fb *cur = &f[i & 1];
		cur->map[i % (cur->size / 4)] = 0xffffffffu - i;
		struct drm_clip_rect clip = { 0, 0, 64, 64 };
		struct drm_mode_fb_dirty_cmd d = { .fb_id = cur->fb_id, .num_clips = 1,
						   .clips_ptr = (uintptr_t)&clip };
		struct drm_mode_crtc_page_flip pf = { .crtc_id = crtcs[0], .fb_id = f[(i + 1) & 1].fb_id,
						      .flags = DRM_MODE_PAGE_FLIP_EVENT, .user_data = i };
		if (xioctl(DRM_IOCTL_MODE_PAGE_FLIP, &pf, "PAGE_FLIP"))
			break;
		/* wait for the flip-complete event */
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 2000) <= 0) { fprintf(stderr, "vgpu-workload: no flip event\n"); break; }
		char buf[1024];
		if (read(fd, buf, sizeof buf) <= 0) break;
		/* DIRTYFB on the fb now scanned out -> transfer_to_host_2d + resource_flush */
		d.fb_id = f[(i + 1) & 1].fb_id;
		if (xioctl(DRM_IOCTL_MODE_DIRTYFB, &d, "DIRTYFB"))
			break;
		ok++;
	}
	printf("vgpu-workload: B page_flip+event+dirtyfb: %d/%d ok, %.1f us/iter\n", ok, iters,
	       (now() - t0) * 1e6 / (iters ? iters : 1));
	return ok;
}

/* C) virgl only: empty EXECBUFFER with out-fence */
static int path_execbuffer(int iters)
{
	int ok = 0;
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		struct drm_virtgpu_execbuffer eb = { .flags = VIRTGPU_EXECBUF_FENCE_FD_OUT, .size = 0,
						     .command = 0, .fence_fd = -1 };
		if (xioctl(DRM_IOCTL_VIRTGPU_EXECBUFFER, &eb, "EXECBUFFER"))
			break;
		struct pollfd p = { .fd = eb.fence_fd, .events = POLLIN };
		if (poll(&p, 1, 5000) != 1) { fprintf(stderr, "vgpu-workload: fence fd not signalled\n"); close(eb.fence_fd); break; }
		close(eb.fence_fd);
		ok++;
	}
	printf("vgpu-workload: C execbuffer+out_fence: %d/%d ok, %.1f us/iter\n", ok, iters,
	       (now() - t0) * 1e6 / (iters ? iters : 1));
	return ok;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 16;
	int reps = argc > 2 ? atoi(argv[2]) : 1;
	const char *dev = argc > 3 ? argv[3] : "/dev/dri/card0";
	int a = 0, b = 0, c = 0;

	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) { perror(dev); return 1; }

	char name[64] = "";
	struct drm_version v = { .name = name, .name_len = sizeof name - 1 };
	xioctl(DRM_IOCTL_VERSION, &v, "VERSION");
	uint64_t has3d = getparam(VIRTGPU_PARAM_3D_FEATURES);
	printf("vgpu-workload: driver=%s 3d=%llu iters=%d reps=%d\n", name,
	       (unsigned long long)has3d, iters, reps);

	/* become DRM master for KMS (we are the only client) */
	ioctl(fd, DRM_IOCTL_SET_MASTER, 0);

	double t0 = now();
	for (int r = 0; r < reps; r++) {
		a += path_resource(iters);
		b += path_kms(iters);
		c += has3d == 1 ? path_execbuffer(iters) : 0;
	}
	printf("vgpu-workload: DONE A=%d B=%d C=%d total_us=%.0f\n", a, b, c, (now() - t0) * 1e6);
	return a > 0 && b > 0 ? 0 : 2;
}
