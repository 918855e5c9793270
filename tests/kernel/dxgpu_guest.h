// dxgpu_guest.h - what the statically linked guest programs of the kernel tests share: the
// "DXPU-TEST: PASS|FAIL <what>" lines the harness counts, and the model GPU driven through
// dxgpu.ko's character device /dev/dxgpuN (include/dxgpu/dxgpu_ioctl.h): its BAR0 registers
// (DXGPU_IOC_REGS, the CPU's readl/writel through dxpu's transparent MMIO), pinned buffers
// (the DMA API), a channel on a buffer, and the interrupt events read() returns.
#ifndef DXPU_TESTS_KERNEL_DXGPU_GUEST_H
#define DXPU_TESTS_KERNEL_DXGPU_GUEST_H

#include <dxgpu/dxgpu_ioctl.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

// The GPU model's BAR0 registers and commands (lib/gpu/gpu_registers.h, commands.h).
enum {
  kRegId = 0x00,
  kRegMemSizeLo = 0x08,
  kRegGpfifoLo = 0x10,
  kRegGpfifoHi = 0x14,
  kRegGpfifoEntries = 0x18,
  kRegGpGet = 0x1c,
  kRegGpPut = 0x20,
  kRegStatus = 0x30,
  kRegErrorCode = 0x34,
  kRegIntrStatus = 0x40,
  kRegIntrEnable = 0x44,
  kRegControl = 0x50,
  kRegControlRestart = 0x2,
  kIdValue = 0x44584750,
  kStatusError = 0x2,
  kOpCopy = 0x01,
  kOpSemaphore = 0x02,
  kOpInterrupt = 0x03,
  kCopySrcHost = 0x1,
  kCopyDstHost = 0x2,
  kSemaphore64 = 0x1,
  kSemaphoreInterrupt = 0x2,
};

static int failures;

static inline void check(int ok, const char* what) {
  printf("DXPU-TEST: %s %s\n", ok ? "PASS" : "FAIL", what);
  fflush(stdout);  // the host acts on the console as it goes
  if (!ok) failures++;
}

// An errno check: the call failed with exactly err.
static inline void expect_errno(int rc, int err, const char* what) {
  char line[200];
  snprintf(line, sizeof(line), "%s: %s (expected %s)", what, rc == 0 ? "accepted" : strerror(errno),
           strerror(err));
  check(rc != 0 && errno == err, line);
}

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// The counter NAME of /sys/devices/dxpu/mmio ("reads N writes N read_errors N ..."); -1 if none.
static inline long long mmio_counter(const char* name) {
  char text[512], key[64];
  FILE* f = fopen("/sys/devices/dxpu/mmio", "r");
  if (!f) return -1;
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = 0;
  snprintf(key, sizeof(key), "%s ", name);
  for (char* p = text; (p = strstr(p, key)) != NULL; p++)
    if (p == text || p[-1] == ' ') return atoll(p + strlen(key));
  return -1;
}

// A batch of register ops; done (when not NULL) gets how many ran.
static inline int regs(int fd, struct dxgpu_reg_op* ops, uint32_t n, uint32_t* done) {
  struct dxgpu_regs r = {.ops = (uintptr_t)ops, .count = n, .done = 0};
  int rc = ioctl(fd, DXGPU_IOC_REGS, &r);
  if (done) *done = r.done;
  return rc;
}

// A BAR0 read: what readl returned (all ones for a master abort), or all ones when the ioctl
// failed (the device gone: ENODEV).
static inline uint32_t reg_read(int fd, uint32_t off) {
  struct dxgpu_reg_op op = {.offset = off};
  return regs(fd, &op, 1, NULL) == 0 ? op.value : 0xffffffffu;
}

static inline int reg_write(int fd, uint32_t off, uint32_t v) {
  struct dxgpu_reg_op op = {.offset = off, .value = v, .flags = DXGPU_REG_WRITE};
  return regs(fd, &op, 1, NULL);
}

// A pinned buffer of size bytes: allocated, and mmap()ed (NULL on failure, errno set).
static inline uint8_t* buf_alloc_map(int fd, uint64_t size, struct dxgpu_buf_alloc* a) {
  memset(a, 0, sizeof(*a));
  a->size = size;
  if (ioctl(fd, DXGPU_IOC_BUF_ALLOC, a) != 0) return NULL;
  void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a->mmap_offset);
  return p == MAP_FAILED ? NULL : (uint8_t*)p;
}

// A GPU's channel on a pinned buffer: the ring at 0 (16-byte entries), the pushbuffer at
// kPbOffset, the rest the caller's.
enum { kRingEntries = 16, kPbOffset = 4096 };

struct channel {
  int fd;
  uint8_t* mem;   // the buffer, mmap()ed
  uint64_t iova;  // this GPU's address of it
  uint32_t put, seq;
};

static inline void channel_start(struct channel* c) {
  reg_write(c->fd, kRegControl, 0);
  reg_write(c->fd, kRegGpfifoLo, (uint32_t)c->iova);
  reg_write(c->fd, kRegGpfifoHi, (uint32_t)(c->iova >> 32));
  reg_write(c->fd, kRegGpfifoEntries, kRingEntries);
  reg_write(c->fd, kRegControl, 0x3);  // enable, clear any error
}

// The pushbuffer's commands (n DWs, at most 1 KiB) as the next GPFIFO entry; the doorbell.
static inline void channel_submit(struct channel* c, const uint32_t* cmds, uint32_t n) {
  uint32_t* pb = (uint32_t*)(c->mem + kPbOffset);
  uint32_t* e = (uint32_t*)(c->mem + 16 * c->put);
  memcpy(pb, cmds, n * 4);
  uint64_t pb_iova = c->iova + kPbOffset;
  e[0] = (uint32_t)pb_iova;
  e[1] = (uint32_t)(pb_iova >> 32);
  e[2] = n * 4;
  e[3] = 0;
  __sync_synchronize();
  c->put = (c->put + 1) % kRingEntries;
  reg_write(c->fd, kRegGpPut, c->put);
}

// The command releasing the 32-bit semaphore at iova with value, and (intr) vector 0's
// interrupt after it: 6 DWs into cmds; returns 6.
static inline uint32_t semaphore_cmd(uint32_t* cmds, uint64_t iova, uint32_t value, int intr) {
  cmds[0] = (uint32_t)kOpSemaphore << 24 | 5;
  cmds[1] = (uint32_t)iova;
  cmds[2] = (uint32_t)(iova >> 32);
  cmds[3] = value;
  cmds[4] = 0;
  cmds[5] = intr ? kSemaphoreInterrupt : 0;
  return 6;
}

// Waits (poll, up to 5 s in all) until the events read name every vector of want; ev gets
// them together (vectors OR-ed, the last count, the last flags). 1 when they came.
// Reads events until every vector of `want` has interrupted and the device's total (counted
// since the file was opened) is at least `min_interrupts`, for up to 5 s. The driver counts a
// vector before the total, so a read may see a vector whose interrupt the total does not have
// yet: the next read has it.
static inline int wait_interrupts(int fd, uint64_t want, uint64_t min_interrupts,
                                  struct dxgpu_event* ev) {
  struct dxgpu_event one;
  memset(ev, 0, sizeof(*ev));
  for (int waited = 0;
       ((ev->vectors & want) != want || ev->interrupts < min_interrupts) && waited < 50; waited++) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) != 1 || !(p.revents & POLLIN)) continue;
    if (read(fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) return 0;
    ev->vectors |= one.vectors;
    ev->interrupts = one.interrupts;
    ev->flags = one.flags;
  }
  return (ev->vectors & want) == want && ev->interrupts >= min_interrupts;
}

static inline int wait_event(int fd, uint64_t want, struct dxgpu_event* ev) {
  return wait_interrupts(fd, want, 0, ev);
}

#endif  // DXPU_TESTS_KERNEL_DXGPU_GUEST_H
