// dma_reuse_check.c - runs in the guest against /dev/dxpuN of a dxpu.ko loaded with a small IOVA
// space for DMA buffers (dma_mib=SPACE_MIB): buffers are placed at the lowest free IOVA and a
// freed buffer's IOVA is taken again, so allocating and freeing far more than the space in
// total keeps working (an allocator that only moved forward ran out after one space's worth:
// ENOSPC after about 252 GiB at the default). Also: the space full answers ENOSPC, a hole left
// by a free takes a buffer that fits and refuses one that does not, a buffer at a reused IOVA
// starts zeroed and the device reaches it (a semaphore release lands in it).
//   dma_reuse_check /dev/dxpuN SPACE_MIB
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guest_check.h"

#define MIB (1ull << 20)

static int dma_alloc(int fd, uint64_t size, struct dxpu_dma_alloc* a) {
  memset(a, 0, sizeof(*a));
  a->size = size;
  return ioctl(fd, DXPU_IOC_DMA_ALLOC, a);
}

static int dma_free(int fd, uint64_t iova) {
  struct dxpu_dma_ref r = {.iova = iova};
  return ioctl(fd, DXPU_IOC_DMA_FREE, &r);
}

// The device releases a semaphore into the buffer at iova (mapped at mem) through a one-entry
// GPFIFO whose ring and pushbuffer are in the same buffer: the device reaches that IOVA.
static int device_writes(int fd, uint64_t iova, uint8_t* mem) {
  const uint64_t sem = iova + 0x800, payload = 0x5eed5eed0000beefull;
  const uint32_t push[] = {
      (uint32_t)kOpSemaphore << 24 | 5, (uint32_t)sem, (uint32_t)(sem >> 32), (uint32_t)payload,
      (uint32_t)(payload >> 32),        kSemaphore64};
  const uint32_t entry[4] = {(uint32_t)(iova + 0x400), (uint32_t)((iova + 0x400) >> 32),
                             sizeof(push), 0};
  memcpy(mem + 0x400, push, sizeof(push));
  memcpy(mem, entry, sizeof(entry));
  reg_write(fd, kRegControl, kRegControlRestart);  // whatever an earlier run left
  reg_write(fd, kRegGpfifoBaseLo, (uint32_t)iova);
  reg_write(fd, kRegGpfifoBaseHi, (uint32_t)(iova >> 32));
  reg_write(fd, kRegGpfifoEntries, 16);
  reg_write(fd, kRegControl, 1);
  reg_write(fd, kRegGpPut, 1);  // the doorbell
  for (int i = 0; i < 200; i++) {
    uint64_t got;
    memcpy(&got, mem + 0x800, sizeof(got));
    if (got == payload) return 1;
    usleep(10000);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: dma_reuse_check /dev/dxpuN SPACE_MIB\n");
    return 2;
  }
  const uint64_t space = strtoull(argv[2], NULL, 0) * MIB;
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  char line[200];

  // Fill the space with 1 MiB buffers: ENOSPC once it is full.
  enum { kMax = 4096 };
  static uint64_t iova[kMax];
  struct dxpu_dma_alloc a;
  int n = 0;
  while (n < kMax && dma_alloc(fd, MIB, &a) == 0) iova[n++] = a.iova;
  const int full_errno = errno;
  snprintf(line, sizeof(line), "%d buffers of 1 MiB fill the %llu MiB space, then %s", n,
           (unsigned long long)(space / MIB), strerror(full_errno));
  check(n > 0 && (uint64_t)n * MIB <= space && (uint64_t)(n + 1) * MIB > space - space / 16 &&
            full_errno == ENOSPC,
        line);
  // A hole in the middle takes a buffer that fits, at the freed IOVA; not one that is larger.
  const int mid = n / 2;
  check(n > 2 && dma_free(fd, iova[mid]) == 0, "a buffer in the middle freed");
  check(dma_alloc(fd, 2 * MIB, &a) == -1 && errno == ENOSPC,
        "a 2 MiB buffer does not fit the hole");
  snprintf(line, sizeof(line), "a 1 MiB buffer takes the hole at 0x%llx",
           (unsigned long long)iova[mid]);
  check(dma_alloc(fd, MIB, &a) == 0 && a.iova == iova[mid], line);
  iova[mid] = a.iova;
  int freed = 0;
  for (int i = 0; i < n; i++) freed += dma_free(fd, iova[i]) == 0;
  check(freed == n, "every buffer freed");

  // Far more than the space in total, one buffer of a quarter of it at a time.
  const uint64_t size = space / 4;
  uint64_t total = 0, first = 0;
  int rounds = 0, same_iova = 1, zeroed = 1, ok = 1;
  for (; rounds < 200 && ok; rounds++) {
    ok = dma_alloc(fd, size, &a) == 0;
    if (!ok) break;
    if (!rounds) first = a.iova;
    same_iova &= a.iova == first;
    uint8_t* mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a.mmap_offset);
    ok = mem != MAP_FAILED;
    if (ok) {
      for (uint64_t off = 0; off < size; off += 4096) zeroed &= mem[off] == 0;
      memset(mem, 0xa5, 4096);
      munmap(mem, size);
    }
    ok = dma_free(fd, a.iova) == 0 && ok;
    total += size;
  }
  snprintf(line, sizeof(line),
           "%d buffers of %llu MiB allocated and freed: %llu MiB through a %llu MiB space (%s)",
           rounds, (unsigned long long)(size / MIB), (unsigned long long)(total / MIB),
           (unsigned long long)(space / MIB), ok ? "every one" : strerror(errno));
  check(ok && rounds == 200 && total >= 50 * space, line);
  check(same_iova, "each took the IOVA the one before it freed");
  check(zeroed, "each started zeroed (the one before it was written)");

  // The device reaches a buffer at a reused IOVA.
  check(dma_alloc(fd, 4096, &a) == 0 && a.iova == first, "a buffer at the reused IOVA");
  uint8_t* mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a.mmap_offset);
  check(mem != MAP_FAILED && device_writes(fd, a.iova, mem),
        "the device's semaphore release lands in it");
  close(fd);
  printf("dma_reuse_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
