// guest_check.h - what the statically linked guest programs of the kernel tests share: the
// "DXPU-TEST: PASS|FAIL <what>" lines the harness counts, and MMIO through /dev/dxpuN's
// DXPU_IOC_MMIO (include/dxpu/dxpu_ioctl.h) on the GPU model's BAR0 registers.
#ifndef DXPU_TESTS_KERNEL_GUEST_CHECK_H
#define DXPU_TESTS_KERNEL_GUEST_CHECK_H

#include <dxpu/dxpu_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <time.h>

// The GPU model's BAR0 registers and commands (lib/gpu/gpu_registers.h, commands.h).
enum {
  kRegId = 0x00,
  kRegMemSizeLo = 0x08,
  kRegGpfifoBaseLo = 0x10,
  kRegGpfifoBaseHi = 0x14,
  kRegGpfifoEntries = 0x18,
  kRegGpGet = 0x1c,
  kRegGpPut = 0x20,
  kRegStatus = 0x30,
  kRegErrorCode = 0x34,
  kRegControl = 0x50,
  kRegControlRestart = 0x2,
  kIdValue = 0x44584750,
  kStatusError = 0x2,
  kOpSemaphore = 0x02,
  kOpInterrupt = 0x03,
  kSemaphore64 = 0x1,
};

static int failures;

static inline void check(int ok, const char* what) {
  printf("DXPU-TEST: %s %s\n", ok ? "PASS" : "FAIL", what);
  fflush(stdout);  // the host acts on the console as it goes
  if (!ok) failures++;
}

static inline int mmio(int fd, struct dxpu_mmio_op* ops, uint32_t n) {
  struct dxpu_mmio_batch b = {.ops = (uintptr_t)ops, .count = n, .done = 0};
  return ioctl(fd, DXPU_IOC_MMIO, &b);
}

// A 4-byte BAR0 read; status gets the op's DXPU_MMIO_* (when not NULL).
static inline uint32_t reg_read_status(int fd, uint32_t off, uint8_t* status) {
  struct dxpu_mmio_op op = {.bar = 0, .dir = DXPU_MMIO_READ, .width = 4, .offset = off};
  int rc = mmio(fd, &op, 1);
  if (status) *status = op.status;
  return rc != 0 ? 0xffffffffu : (uint32_t)op.value;
}

static inline uint32_t reg_read(int fd, uint32_t off) { return reg_read_status(fd, off, NULL); }

static inline int reg_write(int fd, uint32_t off, uint32_t v) {
  struct dxpu_mmio_op op = {
      .bar = 0, .dir = DXPU_MMIO_WRITE, .width = 4, .offset = off, .value = v};
  return mmio(fd, &op, 1);
}

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif  // DXPU_TESTS_KERNEL_GUEST_CHECK_H
