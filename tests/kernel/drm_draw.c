// drm_draw.c - a guest program of kernel.virtio-gpu: draws a known image on a DRM device the
// way a simple KMS client does, through the kernel's own uapi only (no libdrm): the first
// connected connector and its preferred mode, a dumb buffer, a framebuffer on it, a CRTC set to
// show it, DIRTYFB over the whole of it. The image is a function of (x, y) and the mode only
// (drm_pattern() below; tests/kernel/png_check.py computes the same), so the host can compare
// the PNG the bridge writes with it pixel for pixel. Then it holds the mode for HOLD seconds
// (the host takes its screenshot then) and exits, which hands the display back to fbcon.
//   drm_draw /dev/dri/card0 HOLD_SECONDS
// Prints "DRM-DRAW: drawn WxH" when the image is on the display, "DXPU-TEST: FAIL ..." on error.
#include <errno.h>
#include <fcntl.h>
#include <libdrm/drm.h>
#include <libdrm/drm_mode.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static int fail(const char* what) {
  printf("DXPU-TEST: FAIL drm_draw: %s: %s\n", what, strerror(errno));
  fflush(stdout);
  return 1;
}

// The pattern: red rises along x, green along y, blue is a checkerboard of 16-pixel squares
// mixed with x XOR y; as 0x00RRGGBB (DRM_FORMAT_XRGB8888).
static uint32_t drm_pattern(uint32_t x, uint32_t y, uint32_t w, uint32_t h) {
  uint32_t r = x * 255 / (w - 1);
  uint32_t g = y * 255 / (h - 1);
  uint32_t b = ((((x / 16) + (y / 16)) & 1) ? 0xc0 : 0x00) ^ ((x ^ y) & 0x3f);

  return r << 16 | g << 8 | b;
}

static int ioctl_retry(int fd, unsigned long req, void* arg) {
  int r;

  do {
    r = ioctl(fd, req, arg);
  } while (r == -1 && (errno == EINTR || errno == EAGAIN));
  return r;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: drm_draw /dev/dri/cardN HOLD_SECONDS\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR | O_CLOEXEC);

  if (fd < 0) return fail("open");

  struct drm_mode_card_res res = {0};

  if (ioctl_retry(fd, DRM_IOCTL_MODE_GETRESOURCES, &res)) return fail("GETRESOURCES");
  if (res.count_connectors == 0 || res.count_crtcs == 0) {
    errno = ENODEV;
    return fail("no connector or CRTC");
  }
  uint32_t connectors[16], crtcs[16], encoders[16], fbs[16];

  if (res.count_connectors > 16 || res.count_crtcs > 16 || res.count_encoders > 16 ||
      res.count_fbs > 16) {
    errno = E2BIG;
    return fail("resources");
  }
  res.connector_id_ptr = (uintptr_t)connectors;
  res.crtc_id_ptr = (uintptr_t)crtcs;
  res.encoder_id_ptr = (uintptr_t)encoders;
  res.fb_id_ptr = (uintptr_t)fbs;
  if (ioctl_retry(fd, DRM_IOCTL_MODE_GETRESOURCES, &res)) return fail("GETRESOURCES (ids)");

  struct drm_mode_get_connector conn = {0};
  struct drm_mode_modeinfo modes[64];
  uint32_t i;

  for (i = 0; i < res.count_connectors; i++) {
    memset(&conn, 0, sizeof(conn));
    conn.connector_id = connectors[i];
    if (ioctl_retry(fd, DRM_IOCTL_MODE_GETCONNECTOR, &conn)) return fail("GETCONNECTOR");
    if (conn.connection != 1 || conn.count_modes == 0) continue;
    uint32_t n = conn.count_modes > 64 ? 64 : conn.count_modes;

    memset(&conn, 0, sizeof(conn));
    conn.connector_id = connectors[i];
    conn.count_modes = n;
    conn.modes_ptr = (uintptr_t)modes;
    if (ioctl_retry(fd, DRM_IOCTL_MODE_GETCONNECTOR, &conn)) return fail("GETCONNECTOR (modes)");
    break;
  }
  if (i == res.count_connectors) {
    errno = ENODEV;
    return fail("no connected connector with a mode");
  }
  struct drm_mode_modeinfo mode = modes[0];

  for (uint32_t m = 0; m < conn.count_modes && m < 64; m++) {
    if (modes[m].type & DRM_MODE_TYPE_PREFERRED) {
      mode = modes[m];
      break;
    }
  }
  const uint32_t w = mode.hdisplay, h = mode.vdisplay;
  struct drm_mode_create_dumb dumb = {.width = w, .height = h, .bpp = 32};

  if (ioctl_retry(fd, DRM_IOCTL_MODE_CREATE_DUMB, &dumb)) return fail("CREATE_DUMB");
  struct drm_mode_fb_cmd fb = {
      .width = w, .height = h, .pitch = dumb.pitch, .bpp = 32, .depth = 24, .handle = dumb.handle};

  if (ioctl_retry(fd, DRM_IOCTL_MODE_ADDFB, &fb)) return fail("ADDFB");
  struct drm_mode_map_dumb map = {.handle = dumb.handle};

  if (ioctl_retry(fd, DRM_IOCTL_MODE_MAP_DUMB, &map)) return fail("MAP_DUMB");
  uint8_t* pixels = mmap(NULL, dumb.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, map.offset);

  if (pixels == MAP_FAILED) return fail("mmap");
  for (uint32_t y = 0; y < h; y++) {
    uint32_t* row = (uint32_t*)(pixels + (size_t)y * dumb.pitch);

    for (uint32_t x = 0; x < w; x++) row[x] = drm_pattern(x, y, w, h);
  }
  // The CRTC the connector's encoder drives, else the first.
  uint32_t crtc_id = crtcs[0];
  struct drm_mode_get_encoder enc = {.encoder_id = conn.encoder_id};

  if (conn.encoder_id && ioctl_retry(fd, DRM_IOCTL_MODE_GETENCODER, &enc) == 0 && enc.crtc_id)
    crtc_id = enc.crtc_id;
  struct drm_mode_crtc crtc = {.crtc_id = crtc_id,
                               .fb_id = fb.fb_id,
                               .set_connectors_ptr = (uintptr_t)&connectors[i],
                               .count_connectors = 1,
                               .mode = mode,
                               .mode_valid = 1};

  if (ioctl_retry(fd, DRM_IOCTL_MODE_SETCRTC, &crtc)) return fail("SETCRTC");
  struct drm_clip_rect clip = {.x1 = 0, .y1 = 0, .x2 = (uint16_t)w, .y2 = (uint16_t)h};
  struct drm_mode_fb_dirty_cmd dirty = {
      .fb_id = fb.fb_id, .num_clips = 1, .clips_ptr = (uintptr_t)&clip};

  if (ioctl_retry(fd, DRM_IOCTL_MODE_DIRTYFB, &dirty) && errno != ENOSYS) return fail("DIRTYFB");
  printf("DRM-DRAW: drawn %ux%u pitch %u on connector %u crtc %u\n", w, h, dumb.pitch,
         connectors[i], crtc_id);
  fflush(stdout);
  sleep((unsigned int)atoi(argv[2]));
  munmap(pixels, dumb.size);
  close(fd);
  return 0;
}
