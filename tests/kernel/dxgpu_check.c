// dxgpu_check.c - runs in the guest: drives the model GPU through dxgpu.ko's character device
// (include/dxgpu/dxgpu_ioctl.h) as a runtime would, and checks every answer.
//   dxgpu_check /dev/dxgpuN MEMORY_BYTES [/dev/dxgpuM]
//     INFO, register batches and their refusals, a pinned buffer (mmap), the GPU's copies
//     through it and a semaphore release whose interrupt wakes poll(), an INTERRUPT command's
//     vector in read()'s event, buffer refusals and free; with a second device, the buffer
//     imported there (its own IOVA) and that GPU copying through it too.
//   dxgpu_check --lost /dev/dxgpuN POWER_FILE
//     the slot powered off with the file open: POLLHUP, read() says lost, ENODEV, INFO lost.
//   dxgpu_check --kill /dev/dxgpuN
//     copies in flight, a second process reading registers and this one waiting for an
//     interrupt when it prints "DXGPU-KILL: now" (the host then kills the bridge): the reads
//     end (all ones, then ENODEV), the wait ends with POLLHUP, nothing hangs.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dxgpu_guest.h"

enum {
  kBufBytes = 64 * 1024,
  kSemOffset = 8192,
  kSrcOffset = 16384,
  kDstOffset = 32768,
  kDataBytes = 16384,
};

// COPY bytes from host src -> device 0 -> host dst, then a semaphore release of the next number
// with the interrupt flag: the number written and vector 0's interrupt after it.
static void channel_copy(struct channel* c, uint64_t src, uint64_t dst, uint32_t bytes) {
  uint64_t sem = c->iova + kSemOffset;
  c->seq++;
  uint32_t cmds[] = {(uint32_t)kOpCopy << 24 | 7,
                     kCopySrcHost,
                     bytes,
                     0,
                     (uint32_t)src,
                     (uint32_t)(src >> 32),
                     0,
                     0,
                     (uint32_t)kOpCopy << 24 | 7,
                     kCopyDstHost,
                     bytes,
                     0,
                     0,
                     0,
                     (uint32_t)dst,
                     (uint32_t)(dst >> 32),
                     (uint32_t)kOpSemaphore << 24 | 5,
                     (uint32_t)sem,
                     (uint32_t)(sem >> 32),
                     c->seq,
                     0,
                     kSemaphoreInterrupt};
  channel_submit(c, cmds, sizeof(cmds) / 4);
}

static void check_info(int fd, uint64_t memory_bytes, struct dxgpu_info* info) {
  check(ioctl(fd, DXGPU_IOC_INFO, info) == 0, "INFO");
  check(info->vendor_id == 0x4450 && info->device_id == 0x0001, "INFO: the model GPU's IDs");
  check((info->class_code >> 8) == 0x0302, "INFO: a 3D controller");
  check(info->memory_bytes == memory_bytes, "INFO: its memory size (MEM_SIZE)");
  check(info->msix_vectors == 16, "INFO: 16 MSI-X vectors");
  check(info->bar_size[0] == (16u << 20) && info->bar_addr[0] != 0, "INFO: BAR0, 16 MiB");
  check((info->bar_flags[2] & (DXGPU_BAR_MEM64 | DXGPU_BAR_PREFETCH)) ==
                (DXGPU_BAR_MEM64 | DXGPU_BAR_PREFETCH) &&
            info->bar_size[2] != 0,
        "INFO: BAR2, 64-bit prefetchable (the memory window)");
  check(info->pci_name[0] == '1' && !(info->flags & DXGPU_INFO_F_LOST), "INFO: on dxpu's bus");
}

static void check_registers(int fd) {
  check(reg_read(fd, kRegId) == kIdValue, "REGS: ID reads DXGP");
  struct dxgpu_reg_op ops[3] = {
      {.offset = kRegGpfifoLo, .value = 0x12345670, .flags = DXGPU_REG_WRITE},
      {.offset = kRegGpfifoHi, .value = 0x9, .flags = DXGPU_REG_WRITE},
      {.offset = kRegGpfifoLo},
  };
  uint32_t done = 0;
  check(regs(fd, ops, 3, &done) == 0 && done == 3 && ops[2].value == 0x12345670,
        "REGS: a batch of two writes and a read, in order");
  struct dxgpu_reg_op owned[2] = {
      {.offset = kRegId},
      {.offset = kRegIntrEnable, .value = 0, .flags = DXGPU_REG_WRITE},
  };
  check(regs(fd, owned, 2, &done) < 0 && errno == EPERM && done == 1,
        "REGS: writing INTR_ENABLE (the driver's) is EPERM, after the ops before it");
  struct dxgpu_reg_op unaligned = {.offset = 2};
  check(regs(fd, &unaligned, 1, NULL) < 0 && errno == EINVAL, "REGS: an unaligned offset EINVAL");
  struct dxgpu_reg_op past = {.offset = 16u << 20};
  check(regs(fd, &past, 1, NULL) < 0 && errno == EINVAL, "REGS: past BAR0 EINVAL");
  check(regs(fd, ops, 0, NULL) < 0 && errno == EINVAL, "REGS: no ops EINVAL");
  check(regs(fd, ops, DXGPU_REGS_MAX + 1, NULL) < 0 && errno == EINVAL, "REGS: too many EINVAL");
  struct dxgpu_regs bad = {.ops = 8, .count = 1};
  check(ioctl(fd, DXGPU_IOC_REGS, &bad) < 0 && errno == EFAULT, "REGS: a bad pointer EFAULT");
  check(ioctl(fd, _IO(DXGPU_IOCTL_MAGIC, 0x7f)) < 0 && errno == ENOTTY, "an unknown ioctl ENOTTY");
}

static uint8_t* map_buf(int fd, const struct dxgpu_buf_alloc* a) {
  void* p = mmap(NULL, kBufBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a->mmap_offset);
  return p == MAP_FAILED ? NULL : p;
}

static void fill(uint8_t* p, uint32_t n, uint8_t seed) {
  for (uint32_t i = 0; i < n; i++) p[i] = (uint8_t)(seed + i * 7);
}

// The copy round on c: the event (vector 0), the semaphore, the bytes. what names the GPU.
static void check_round(struct channel* c, uint8_t seed, const char* what) {
  char line[160];
  fill(c->mem + kSrcOffset, kDataBytes, seed);
  memset(c->mem + kDstOffset, 0, kDataBytes);
  channel_copy(c, c->iova + kSrcOffset, c->iova + kDstOffset, kDataBytes);
  struct dxgpu_event ev = {0};
  int got = wait_interrupts(c->fd, 1, 1, &ev);
  snprintf(line, sizeof(line), "%s: the semaphore's interrupt wakes poll(), vector 0 in the event",
           what);
  check(got && (ev.vectors & 1) && ev.interrupts >= 1, line);
  volatile uint32_t* sem = (volatile uint32_t*)(c->mem + kSemOffset);
  snprintf(line, sizeof(line), "%s: the semaphore is written before its interrupt", what);
  check(*sem == c->seq, line);
  snprintf(line, sizeof(line), "%s: 16 KiB host -> device -> host through the DMA API", what);
  check(memcmp(c->mem + kSrcOffset, c->mem + kDstOffset, kDataBytes) == 0, line);
  if (reg_read(c->fd, kRegStatus) & 0x2)
    printf("dxgpu_check: channel error %u\n", reg_read(c->fd, kRegErrorCode));
}

// A 32 MiB buffer: more than one physically contiguous chunk (at most 4 MiB each), which the
// DMA API maps as one range of IOVAs. The GPU copies 64 KiB from across the boundary at 4 MiB
// to across the one at 28 MiB (c's channel runs the copy; the semaphore is in c's buffer).
static void check_big_buffer(struct channel* c) {
  enum { kBig = 32 << 20, kBytes = 64 << 10, kFrom = (4 << 20) - 8192, kTo = (28 << 20) - 24576 };
  struct dxgpu_buf_alloc big;
  uint8_t* p = buf_alloc_map(c->fd, kBig, &big);
  check(p != NULL, "BUF_ALLOC and mmap: 32 MiB (chunks mapped as one IOVA range)");
  if (!p) return;
  int zero = 1;
  for (int i = 0; i < kBig; i += 4096) zero &= p[i] == 0 && p[i + 4095] == 0;
  check(zero, "32 MiB: zeroed");
  fill(p + kFrom, kBytes, 0x6d);
  channel_copy(c, big.iova + kFrom, big.iova + kTo, kBytes);
  struct dxgpu_event ev;
  check(wait_event(c->fd, 1, &ev), "32 MiB: the copy's semaphore interrupt");
  check(memcmp(p + kFrom, p + kTo, kBytes) == 0,
        "32 MiB: 64 KiB across the 4 MiB boundary -> device -> across the 28 MiB one");
  check(p[kTo - 1] == 0 && p[kTo + kBytes] == 0, "32 MiB: nothing written around the copy");
  check(munmap(p, kBig) == 0 && ioctl(c->fd, DXGPU_IOC_BUF_FREE, &big.handle) == 0,
        "32 MiB: unmapped and freed");
}

static int run(const char* path, uint64_t memory_bytes, const char* second) {
  int fd = open(path, O_RDWR);
  check(fd >= 0, "open the dxgpu device");
  if (fd < 0) return 1;
  struct dxgpu_info info;
  check_info(fd, memory_bytes, &info);
  check_registers(fd);

  struct dxgpu_buf_alloc a = {.size = 0};
  check(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &a) < 0 && errno == EINVAL, "BUF_ALLOC: 0 bytes EINVAL");
  a.size = DXGPU_BUF_MAX_SIZE + 1;
  check(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &a) < 0 && errno == EINVAL,
        "BUF_ALLOC: past the largest EINVAL");
  a = (struct dxgpu_buf_alloc){.size = kBufBytes};
  check(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &a) == 0 && a.handle != 0, "BUF_ALLOC: 64 KiB");
  check(a.iova >= (1ull << 32) && (a.iova & 4095) == 0, "BUF_ALLOC: a page-aligned IOVA");
  void* wrong = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)a.mmap_offset);
  check(wrong == MAP_FAILED && errno == EINVAL, "mmap: not the whole buffer EINVAL");
  wrong = mmap(NULL, kBufBytes, PROT_READ, MAP_PRIVATE, fd, (off_t)a.mmap_offset);
  check(wrong == MAP_FAILED && errno == EINVAL, "mmap: a private mapping EINVAL");
  struct channel c = {.fd = fd, .mem = map_buf(fd, &a), .iova = a.iova};
  check(c.mem != NULL, "mmap: the buffer");
  if (!c.mem) return 1;
  int zero = 1;
  for (int i = 0; i < kBufBytes; i++) zero &= c.mem[i] == 0;
  check(zero, "the buffer is zeroed");
  channel_start(&c);
  check_round(&c, 0x31, "GPU 0");
  check_round(&c, 0x47, "GPU 0 again");

  // An INTERRUPT command: its own vector in the event.
  uint32_t intr[] = {(uint32_t)kOpInterrupt << 24 | 1, 5};
  channel_submit(&c, intr, 2);
  struct dxgpu_event ev = {0};
  check(wait_event(fd, 1u << 5, &ev), "INTERRUPT 5: vector 5 in the event");

  check_big_buffer(&c);

  if (second) {
    int fd2 = open(second, O_RDWR);
    check(fd2 >= 0, "open the second dxgpu device");
    struct dxgpu_buf_import im = {.fd = fd, .handle = a.handle};
    check(ioctl(fd2, DXGPU_IOC_BUF_IMPORT, &im) == 0 && im.handle != 0 && im.iova >= (1ull << 32),
          "BUF_IMPORT: the buffer made DMA-able by the second GPU");
    struct dxgpu_buf_import bad = {.fd = -1, .handle = a.handle};
    check(ioctl(fd2, DXGPU_IOC_BUF_IMPORT, &bad) < 0 && errno == EBADF, "BUF_IMPORT: a bad fd");
    int null = open("/dev/null", O_RDONLY);
    bad = (struct dxgpu_buf_import){.fd = null, .handle = a.handle};
    check(ioctl(fd2, DXGPU_IOC_BUF_IMPORT, &bad) < 0 && errno == ENOENT,
          "BUF_IMPORT: not a dxgpu file ENOENT");
    bad = (struct dxgpu_buf_import){.fd = fd, .handle = 999};
    check(ioctl(fd2, DXGPU_IOC_BUF_IMPORT, &bad) < 0 && errno == ENOENT,
          "BUF_IMPORT: no such handle ENOENT");
    close(null);
    // The second GPU runs its channel in the same memory, through its own IOVA. Its ring is
    // the same bytes: the first GPU's channel is stopped first.
    reg_write(fd, kRegControl, 0);
    struct channel c2 = {.fd = fd2, .mem = c.mem, .iova = im.iova, .seq = c.seq};
    channel_start(&c2);
    check_round(&c2, 0x5a, "GPU 1 (imported)");
    check(ioctl(fd2, DXGPU_IOC_BUF_FREE, &im.handle) == 0, "BUF_FREE on the second GPU");
    close(fd2);
  }

  uint64_t none = 12345;
  check(ioctl(fd, DXGPU_IOC_BUF_FREE, &none) < 0 && errno == ENOENT, "BUF_FREE: no such handle");
  check(ioctl(fd, DXGPU_IOC_BUF_FREE, &a.handle) == 0, "BUF_FREE");
  check(ioctl(fd, DXGPU_IOC_BUF_FREE, &a.handle) < 0 && errno == ENOENT, "BUF_FREE twice ENOENT");
  c.mem[0] = 1;  // the mapping keeps the memory
  check(munmap(c.mem, kBufBytes) == 0, "the mapping outlives the free, then goes");
  reg_write(fd, kRegControl, 0);
  close(fd);
  return 0;
}

static int lost(const char* path, const char* power) {
  int fd = open(path, O_RDWR);
  check(fd >= 0, "open before power off");
  if (fd < 0) return 1;
  struct dxgpu_buf_alloc a = {.size = 4096};
  check(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &a) == 0, "a buffer allocated before power off");
  uint8_t* mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a.mmap_offset);
  int pfd = open(power, O_WRONLY);
  check(pfd >= 0 && write(pfd, "0", 1) == 1, "power off with the file open");
  if (pfd >= 0) close(pfd);
  struct pollfd p = {.fd = fd, .events = POLLIN};
  check(poll(&p, 1, 5000) == 1 && (p.revents & POLLHUP), "poll: POLLHUP");
  struct dxgpu_event ev = {0};
  check(read(fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev) && (ev.flags & DXGPU_INFO_F_LOST),
        "read: lost");
  struct dxgpu_info info;
  check(ioctl(fd, DXGPU_IOC_INFO, &info) == 0 && (info.flags & DXGPU_INFO_F_LOST) &&
            info.vendor_id == 0x4450,
        "INFO: lost, still describes the device");
  check(reg_read(fd, kRegId) == 0xffffffffu && errno == ENODEV, "REGS: ENODEV");
  struct dxgpu_buf_alloc b = {.size = 4096};
  check(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &b) < 0 && errno == ENODEV, "BUF_ALLOC: ENODEV");
  if (mem != MAP_FAILED) {
    mem[0] = 7;  // the pages stay until unmapped
    check(munmap(mem, 4096) == 0, "the buffer's mapping outlives the device");
  }
  close(fd);
  return 0;
}

static int kill_bridge(const char* path) {
  int fd = open(path, O_RDWR);
  check(fd >= 0, "open before the bridge dies");
  if (fd < 0) return 1;
  struct dxgpu_buf_alloc a = {.size = kBufBytes};
  check(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &a) == 0, "a buffer before the bridge dies");
  struct channel c = {.fd = fd, .mem = map_buf(fd, &a), .iova = a.iova};
  if (!c.mem) return 1;
  channel_start(&c);
  // The racing process: register reads until the device is gone; exit 0 when that came as
  // ENODEV, 1 if a read failed otherwise.
  pid_t child = fork();
  if (child == 0) {
    for (;;) {
      struct dxgpu_reg_op op = {.offset = kRegId};
      if (regs(fd, &op, 1, NULL) != 0) _exit(errno == ENODEV ? 0 : 1);
    }
  }
  // Copies in flight, their interrupts wanted: 8 rounds queued without waiting.
  for (int i = 0; i < 8; i++)
    channel_copy(&c, c.iova + kSrcOffset, c.iova + kDstOffset, kDataBytes);
  printf("DXGPU-KILL: now\n");
  fflush(stdout);
  double start = now_s();
  struct dxgpu_event ev;
  int hup = 0;
  while (!hup && now_s() - start < 20) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 500) == 1) {
      if (p.revents & POLLHUP)
        hup = 1;
      else if (p.revents & POLLIN)
        (void)read(fd, &ev, sizeof(ev));
    }
  }
  double took = now_s() - start;
  char line[96];
  snprintf(line, sizeof(line), "the wait ends with POLLHUP when the bridge dies (%.1f s)", took);
  check(hup, line);
  int status = 0;
  check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the racing register reads end with ENODEV");
  check(reg_read(fd, kRegId) == 0xffffffffu && errno == ENODEV, "REGS: ENODEV after");
  munmap(c.mem, kBufBytes);
  close(fd);
  return 0;
}

int main(int argc, char** argv) {
  int rc;
  if (argc == 4 && strcmp(argv[1], "--lost") == 0) {
    rc = lost(argv[2], argv[3]);
  } else if (argc == 3 && strcmp(argv[1], "--kill") == 0) {
    rc = kill_bridge(argv[2]);
  } else if (argc == 3 || argc == 4) {
    rc = run(argv[1], strtoull(argv[2], NULL, 0), argc == 4 ? argv[3] : NULL);
  } else {
    fprintf(stderr,
            "usage: dxgpu_check DEV MEMORY_BYTES [DEV2] | --lost DEV POWER_FILE | --kill DEV\n");
    return 2;
  }
  printf("dxgpu_check: %d failures\n", failures);
  return rc != 0 || failures != 0;
}
