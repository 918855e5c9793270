// surprise_check.c - runs in the guest while the bridge behind /dev/dxgpuN (dxgpu.ko's device
// of the model GPU) is killed: reads the GPU's ID register in a loop through DXGPU_IOC_REGS (the
// driver's readl, dxpu's transparent MMIO) with a DMA buffer mapped, prints the marker the host
// waits for before it kills the bridge, and checks what follows: the reads in flight end within
// the link-down time plus margin, never hang, as a master abort does (all ones, each counted in
// read_errors of /sys/devices/dxpu/mmio); then the removal runs dxgpu's remove: every call
// answers ENODEV, poll() reports POLLHUP, read() and INFO say lost, and the mapping of the DMA
// buffer stays usable until it is unmapped.
//   surprise_check /dev/dxgpuN SECONDS
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

#include "dxgpu_guest.h"

enum { kBufBytes = 65536 };

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: surprise_check /dev/dxgpuN SECONDS LINK_DOWN_MS REQUEST_TIMEOUT_MS\n");
    return 2;
  }
  const double limit = atof(argv[2]);
  const double link_down_s = atof(argv[3]) / 1000.0;
  // A read the dead bridge never answers ends at dxpu.ko's request timeout or when the session
  // goes down, whichever comes first (1 s and 1 s here; the debug lane's 20 s and 10 s).
  const double request_timeout_s = atof(argv[4]) / 1000.0;
  const double read_limit =
      (request_timeout_s < link_down_s ? request_timeout_s : link_down_s) + 2.0;
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  struct dxgpu_buf_alloc a;
  uint8_t* mem = buf_alloc_map(fd, kBufBytes, &a);
  check(mem != NULL, "DMA buffer allocated and mapped");
  if (!mem) return 1;
  memset(mem, 0x5a, kBufBytes);
  const long long errors0 = mmio_counter("read_errors");
  check(errors0 >= 0, "/sys/devices/dxpu/mmio has read_errors");

  // good: the ID read; all_ones: a read the dead bridge never answered; other: anything else.
  unsigned long good = 0, all_ones = 0, other = 0;
  double start = now_s(), first_error = 0, slowest = 0;
  int last_errno = 0;
  while (now_s() - start < limit) {
    struct dxgpu_reg_op op = {.offset = kRegId};
    double t0 = now_s();
    int rc = regs(fd, &op, 1, NULL);
    int e = errno;
    double took = now_s() - t0;
    slowest = took > slowest ? took : slowest;
    if (took > read_limit) {
      check(0, "a register read took longer than the request timeout or the link-down time");
      break;
    }
    if (rc == 0 && op.value == kIdValue) {
      if (++good == 20) {
        printf("DXPU-SURPRISE: reading, kill the bridge now\n");
        fflush(stdout);
      }
      continue;
    }
    if (!first_error) first_error = t0;
    if (rc == 0) {
      if (op.value == 0xffffffffu)
        all_ones++;
      else
        other++;
      continue;
    }
    last_errno = e;
    if (e == ENODEV) break;
    other++;
    usleep(1000);
  }
  const double until_enodev = first_error ? now_s() - first_error : -1.0;
  const long long errors1 = mmio_counter("read_errors");
  char line[256];
  snprintf(line, sizeof(line),
           "reads: %lu answered, %lu ended all-ones, %lu otherwise, then ENODEV %.2f s after the "
           "first failing one began (slowest read %.2f s)",
           good, all_ones, other, until_enodev, slowest);
  check(good >= 20 && other == 0 && last_errno == ENODEV, line);
  // Removal waits for the session's link-down time (1 s; the debug lane's 10 s); 14 s more
  // allows for a loaded TCG guest.
  check(until_enodev >= 0 && until_enodev < link_down_s + 14,
        "the device was removed within its link-down time and 14 s");
  snprintf(line, sizeof(line),
           "the reads the dead bridge never answered ended all ones, as master aborts, and were "
           "counted (read_errors %lld -> %lld, %lu all-ones reads seen)",
           errors0, errors1, all_ones);
  check(all_ones >= 1 && errors1 - errors0 >= (long long)all_ones, line);

  struct pollfd p = {.fd = fd, .events = POLLIN};
  check(poll(&p, 1, 5000) == 1 && (p.revents & POLLHUP), "poll reports POLLHUP");
  struct dxgpu_event ev = {0};
  check(read(fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev) && (ev.flags & DXGPU_INFO_F_LOST),
        "read says lost");
  struct dxgpu_info info;
  check(ioctl(fd, DXGPU_IOC_INFO, &info) == 0 && (info.flags & DXGPU_INFO_F_LOST),
        "INFO says lost");
  struct dxgpu_buf_alloc again = {.size = 4096};
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &again), ENODEV, "BUF_ALLOC after the loss");
  struct dxgpu_reg_op op = {.offset = kRegId};
  expect_errno(regs(fd, &op, 1, NULL), ENODEV, "REGS after the loss");
  int intact = 1;
  for (size_t i = 0; i < kBufBytes; i++) intact &= mem[i] == 0x5a;
  check(intact, "the DMA buffer's mapping is intact after the loss");
  check(munmap(mem, kBufBytes) == 0, "the DMA buffer unmapped");
  check(close(fd) == 0, "close");
  printf("surprise_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
