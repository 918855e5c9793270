// surprise_check.c - runs in the guest while the bridge behind /dev/dxpuN is killed: reads
// the device's ID register in a loop (with a DMA buffer mapped), prints the marker the host
// waits for before it kills the bridge, and checks what follows: the reads in flight end
// (EIO with all-ones, or ENODEV) within the link-down time plus margin, never hang; then
// every call answers ENODEV, poll() reports POLLHUP, read() says lost, and the mapping of the
// DMA buffer stays usable until it is unmapped.
//   surprise_check /dev/dxpuN SECONDS
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

#include "guest_check.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: surprise_check /dev/dxpuN SECONDS\n");
    return 2;
  }
  const double limit = atof(argv[2]);
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  struct dxpu_dma_alloc a = {.size = 65536};
  check(ioctl(fd, DXPU_IOC_DMA_ALLOC, &a) == 0, "DMA buffer allocated");
  uint8_t* mem = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a.mmap_offset);
  check(mem != MAP_FAILED, "DMA buffer mapped");
  if (mem == MAP_FAILED) return 1;
  memset(mem, 0x5a, a.size);

  unsigned long good = 0, all_ones = 0;
  double start = now_s(), first_error = 0;
  int last_errno = 0;
  while (now_s() - start < limit) {
    struct dxpu_mmio_op op = {.bar = 0, .dir = DXPU_MMIO_READ, .width = 4, .offset = 0};
    struct dxpu_mmio_batch b = {.ops = (uintptr_t)&op, .count = 1};
    double t0 = now_s();
    int rc = ioctl(fd, DXPU_IOC_MMIO, &b);
    if (now_s() - t0 > 3.0) {
      check(0, "an MMIO read took more than 3 s");
      break;
    }
    if (rc == 0) {
      if (++good == 20) {
        printf("DXPU-SURPRISE: reading, kill the bridge now\n");
        fflush(stdout);
      }
      continue;
    }
    if (!first_error) first_error = now_s();
    last_errno = errno;
    if (errno == EIO && op.value == 0xffffffffu) all_ones++;
    if (errno == ENODEV) break;
    usleep(1000);
  }
  char line[200];
  snprintf(line, sizeof(line),
           "reads: %lu answered, %lu ended all-ones, then ENODEV %.2f s after the first failure",
           good, all_ones, first_error ? now_s() - first_error : -1.0);
  check(good >= 20 && last_errno == ENODEV, line);
  struct pollfd p = {.fd = fd, .events = POLLIN};
  check(poll(&p, 1, 5000) == 1 && (p.revents & POLLHUP), "poll reports POLLHUP");
  struct dxpu_event ev;
  check(read(fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev) && ev.lost == 1, "read says lost");
  struct dxpu_dma_alloc again = {.size = 4096};
  check(ioctl(fd, DXPU_IOC_DMA_ALLOC, &again) == -1 && errno == ENODEV, "DMA alloc answers ENODEV");
  int intact = 1;
  for (size_t i = 0; i < a.size; i++) intact &= mem[i] == 0x5a;
  check(intact, "the DMA buffer's mapping is intact after the loss");
  munmap(mem, a.size);
  check(close(fd) == 0, "close");
  printf("surprise_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
