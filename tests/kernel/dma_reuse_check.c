// dma_reuse_check.c - runs in the guest against /dev/dxgpuN of a GPU on a dxpu.ko loaded with a
// small IOVA space for the DMA API (dma_mib=SPACE_MIB): dxgpu's buffers are mapped through it
// (dma_map_page), each at the lowest free IOVA, and a freed buffer's IOVA is taken again, so
// allocating and freeing far more than the space in total keeps working (an allocator that only
// moved forward ran out after one space's worth). Also: the space full refuses a buffer
// (dxgpu answers ENOSPC for a refused mapping), a hole left by a free takes a buffer that fits
// and refuses one that does not, a buffer at a reused IOVA starts zeroed and the device's DMA
// into that IOVA lands in it, not in the buffer that had the IOVA before.
//   dma_reuse_check /dev/dxgpuN SPACE_MIB
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dxgpu_guest.h"

#define MIB (1ull << 20)

static int buf_alloc(int fd, uint64_t size, struct dxgpu_buf_alloc* a) {
  memset(a, 0, sizeof(*a));
  a->size = size;
  return ioctl(fd, DXGPU_IOC_BUF_ALLOC, a);
}

static int buf_free(int fd, uint64_t handle) { return ioctl(fd, DXGPU_IOC_BUF_FREE, &handle); }

// The device releases the semaphore at target (an IOVA) with value, then one with its interrupt
// into the channel's buffer (at sem): 1 when that interrupt came and its value landed, so the
// write to target came before it.
static int device_writes(struct channel* c, uint64_t target, uint32_t value, uint32_t sem) {
  uint32_t cmds[12];
  uint32_t n = semaphore_cmd(cmds, target, value, 0);
  n += semaphore_cmd(cmds + n, c->iova + sem, ++c->seq, 1);
  channel_submit(c, cmds, n);
  struct dxgpu_event ev;
  int got = wait_event(c->fd, 1, &ev);
  return got && *(volatile uint32_t*)(c->mem + sem) == c->seq;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: dma_reuse_check /dev/dxgpuN SPACE_MIB\n");
    return 2;
  }
  const uint64_t space = strtoull(argv[2], NULL, 0) * MIB;
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  char line[200];

  // Fill the space with 1 MiB buffers: ENOSPC once it is full.
  enum { kMax = 4096 };
  static uint64_t iova[kMax], handle[kMax];
  struct dxgpu_buf_alloc a;
  int n = 0;
  while (n < kMax && buf_alloc(fd, MIB, &a) == 0) {
    iova[n] = a.iova;
    handle[n++] = a.handle;
  }
  const int full_errno = errno;
  snprintf(line, sizeof(line), "%d buffers of 1 MiB fill the %llu MiB space, then %s", n,
           (unsigned long long)(space / MIB), strerror(full_errno));
  check(n > 0 && (uint64_t)n * MIB <= space && (uint64_t)(n + 1) * MIB > space - space / 16 &&
            full_errno == ENOSPC,
        line);
  // A hole in the middle takes a buffer that fits, at the freed IOVA; not one that is larger.
  const int mid = n / 2;
  check(n > 2 && buf_free(fd, handle[mid]) == 0, "a buffer in the middle freed");
  check(buf_alloc(fd, 2 * MIB, &a) == -1 && errno == ENOSPC,
        "a 2 MiB buffer does not fit the hole");
  snprintf(line, sizeof(line), "a 1 MiB buffer takes the hole at 0x%llx",
           (unsigned long long)iova[mid]);
  check(buf_alloc(fd, MIB, &a) == 0 && a.iova == iova[mid], line);
  handle[mid] = a.handle;
  int freed = 0;
  for (int i = 0; i < n; i++) freed += buf_free(fd, handle[i]) == 0;
  check(freed == n, "every buffer freed");

  // Far more than the space in total (50 times), one buffer of a quarter of it at a time, at
  // most DXGPU_BUF_MAX_SIZE.
  uint64_t size = space / 4;
  if (size > DXGPU_BUF_MAX_SIZE) size = DXGPU_BUF_MAX_SIZE;
  const int want = (int)(50 * space / size);
  uint64_t total = 0, first = 0;
  int rounds = 0, same_iova = 1, zeroed = 1, ok = 1;
  for (; rounds < want && ok; rounds++) {
    ok = buf_alloc(fd, size, &a) == 0;
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
    ok = buf_free(fd, a.handle) == 0 && ok;
    total += size;
  }
  snprintf(line, sizeof(line),
           "%d buffers of %llu MiB allocated and freed: %llu MiB through a %llu MiB space (%s)",
           rounds, (unsigned long long)(size / MIB), (unsigned long long)(total / MIB),
           (unsigned long long)(space / MIB), ok ? "every one" : strerror(errno));
  check(ok && rounds == want && total >= 50 * space, line);
  check(same_iova, "each took the IOVA the one before it freed");
  check(zeroed, "each started zeroed (the one before it was written)");

  // The device's DMA into a reused IOVA lands in the buffer that has it now. A channel buffer
  // first (it takes the lowest IOVA), then old at the next; old freed (still mapped), new takes
  // its IOVA: a release into that IOVA reaches new, and old's pages (written 0x11) are untouched.
  struct dxgpu_buf_alloc cb, old, cur;
  struct channel c = {.fd = fd, .mem = buf_alloc_map(fd, 4 * 4096, &cb), .iova = cb.iova};
  check(c.mem != NULL, "a buffer for the channel");
  uint8_t* old_mem = buf_alloc_map(fd, 4096, &old);
  check(old_mem != NULL, "a buffer to free");
  if (!c.mem || !old_mem) return 1;
  memset(old_mem, 0x11, 4096);
  check(buf_free(fd, old.handle) == 0, "it freed, still mapped");
  uint8_t* cur_mem = buf_alloc_map(fd, 4096, &cur);
  snprintf(line, sizeof(line), "a buffer at the reused IOVA 0x%llx", (unsigned long long)old.iova);
  check(cur_mem != NULL && cur.iova == old.iova, line);
  if (!cur_mem) return 1;
  channel_start(&c);
  int landed = device_writes(&c, cur.iova + 0x800, 0x5eedbeef, 0x2000);
  snprintf(line, sizeof(line),
           "the device's semaphore release lands in the buffer at the reused IOVA (%#x), not "
           "in the one freed (%#x)",
           *(volatile uint32_t*)(cur_mem + 0x800), *(volatile uint32_t*)(old_mem + 0x800));
  check(landed && *(volatile uint32_t*)(cur_mem + 0x800) == 0x5eedbeef &&
            *(volatile uint32_t*)(old_mem + 0x800) == 0x11111111,
        line);
  reg_write(fd, kRegControl, 0);
  close(fd);
  printf("dma_reuse_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
