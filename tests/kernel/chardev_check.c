// chardev_check.c - runs in the guest against /dev/dxgpuN, dxgpu.ko's character device of a GPU
// dxpu.ko attached (statically linked; the uAPI is include/dxgpu/dxgpu_ioctl.h). Checks what the
// device is, register access over the fabric (dxpu's transparent MMIO), a pinned buffer the
// device writes into (a semaphore release) with MSI-X interrupts delivered to poll()/read(), a
// device DMA outside every window refused, a freed buffer no longer reachable by the device,
// and that every malformed argument gets its errno.
// Prints "DXPU-TEST: PASS|FAIL <what>" lines; exit status 1 when any check failed.
//   chardev_check /dev/dxgpuN MEMORY_BYTES
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dxgpu_guest.h"

enum {
  kRegVersion = 0x04,
  kVersionValue = 0x00010000,
  kBufPages = 4,  // ring at 0, pushbuffer at kPbOffset, semaphore at kSemOffset
  kSemOffset = 0x2000,
  kErrorVector = 1,  // the channel error's interrupt (docs/dxgpu.md)
};

static const uint64_t kOutside = 0x3f00000000ull;  // in no window: dxpu maps from 4 GiB up

static void check_info(int fd, uint64_t memory) {
  struct dxgpu_info info;
  char line[200];
  memset(&info, 0xa5, sizeof(info));
  check(ioctl(fd, DXGPU_IOC_INFO, &info) == 0, "DXGPU_IOC_INFO");
  snprintf(line, sizeof(line), "info: %04x:%04x class %06x %s msix %u memory %" PRIu64,
           info.vendor_id, info.device_id, info.class_code, info.pci_name, info.msix_vectors,
           (uint64_t)info.memory_bytes);
  check(info.vendor_id == 0x4450 && info.device_id == 0x0001 && info.class_code == 0x030200 &&
            info.msix_vectors == 16 && info.flags == 0 && info.memory_bytes == memory &&
            strncmp(info.pci_name, "1", 1) == 0,
        line);
  check(info.bar_size[0] == (16u << 20) && info.bar_size[2] == (256u << 20) &&
            info.bar_addr[0] != 0 && info.bar_addr[2] >= (1ull << 32),
        "BAR0 16 MiB, BAR2 256 MiB above 4 GiB");
  check(reg_read(fd, kRegId) == kIdValue, "MMIO read of the ID register over the fabric");
  check(reg_read(fd, kRegMemSizeLo) == (uint32_t)memory, "MEM_SIZE is the bridge's memory");
}

static void check_regs_batch(int fd) {
  struct dxgpu_reg_op ops[4] = {
      {.offset = kRegGpfifoLo, .value = 0x1230, .flags = DXGPU_REG_WRITE},
      {.offset = kRegGpfifoLo},
      {.offset = kRegId},
      {.offset = kRegVersion},
  };
  uint32_t done = 0;
  check(regs(fd, ops, 4, &done) == 0 && done == 4, "a batch of 4 register ops");
  check(ops[1].value == 0x1230, "a read after a posted write in one batch sees the write");
  check(ops[2].value == kIdValue && ops[3].value == kVersionValue, "ID and VERSION in one batch");
}

static void check_bad_input(int fd) {
  struct dxgpu_reg_op op = {.offset = 0};
  struct dxgpu_regs r = {.ops = (uintptr_t)&op, .count = 0};
  expect_errno(ioctl(fd, DXGPU_IOC_REGS, &r), EINVAL, "a register batch of 0 ops");
  r.count = DXGPU_REGS_MAX + 1;
  expect_errno(ioctl(fd, DXGPU_IOC_REGS, &r), EINVAL, "a register batch of 257 ops");
  r.count = 1;
  r.ops = 16;
  expect_errno(ioctl(fd, DXGPU_IOC_REGS, &r), EFAULT, "a register batch at a bad address");
  expect_errno(ioctl(fd, DXGPU_IOC_REGS, (void*)16), EFAULT,
               "a register batch header at a bad address");
  struct {
    struct dxgpu_reg_op op;
    const char* what;
  } bad[] = {
      {{.offset = 2}, "a misaligned offset"},
      {{.offset = 16u << 20}, "an offset past BAR0"},
      {{.offset = 0xfffffffc}, "0xfffffffc"},
      {{.offset = 0, .flags = 0x2}, "an unknown flag"},
      {{.offset = 0, .reserved = 1}, "a reserved field set"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char what[96];
    snprintf(what, sizeof(what), "a register op at %s", bad[i].what);
    expect_errno(regs(fd, &bad[i].op, 1, NULL), EINVAL, what);
  }
  expect_errno(reg_write(fd, kRegIntrStatus, 1), EPERM, "writing INTR_STATUS (the driver's)");
  expect_errno(ioctl(fd, _IO(DXGPU_IOCTL_MAGIC, 0x7f)), ENOTTY, "an unknown ioctl");
  struct dxgpu_buf_alloc a = {.size = 0};
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &a), EINVAL, "a buffer of 0 bytes");
  a.size = DXGPU_BUF_MAX_SIZE + 1;
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &a), EINVAL, "a buffer over DXGPU_BUF_MAX_SIZE");
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_ALLOC, (void*)16), EFAULT, "BUF_ALLOC at a bad address");
  uint64_t none = 0x123;
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_FREE, &none), ENOENT,
               "freeing a buffer that does not exist");
  struct dxgpu_buf_import im = {.fd = fd, .handle = 0x123};
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_IMPORT, &im), ENOENT,
               "importing a buffer that does not exist");
  im.reserved = 1;
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_IMPORT, &im), EINVAL, "an import with reserved set");
  void* m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0x123000);
  check(m == MAP_FAILED, "mmap of an offset that is no buffer refused");
  struct dxgpu_event ev;
  expect_errno((int)read(fd, &ev, 8), EINVAL, "read() into 8 bytes");
}

// Waits up to 1 s for STATUS to say error; the status read last.
static uint32_t wait_error(int fd) {
  uint32_t status = 0;
  for (int i = 0; i < 50 && !((status = reg_read(fd, kRegStatus)) & kStatusError); i++)
    usleep(20000);
  return status;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: chardev_check /dev/dxgpuN MEMORY_BYTES\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR | O_CLOEXEC);
  check(fd >= 0, "open the character device");
  if (fd < 0) return 1;
  check_info(fd, strtoull(argv[2], NULL, 0));
  check_regs_batch(fd);
  check_bad_input(fd);

  // A buffer of 3 pages and a byte: 4 pages (the ring, the pushbuffer, the semaphore).
  struct dxgpu_buf_alloc a = {.size = 3 * 4096 + 1};
  check(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &a) == 0 && a.handle != 0 && a.iova >= (1ull << 32) &&
            (a.iova & 4095) == 0,
        "buffer allocated (a page-aligned IOVA above 4 GiB)");
  check(a.size == 4 * 4096, "BUF_ALLOC returns the size rounded up to pages");
  void* too_big = mmap(NULL, 2 * kBufPages * 4096, PROT_READ, MAP_SHARED, fd, (off_t)a.mmap_offset);
  check(too_big == MAP_FAILED, "mmap larger than the buffer refused");
  uint8_t* mem =
      mmap(NULL, kBufPages * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a.mmap_offset);
  check(mem != MAP_FAILED, "mmap the buffer: rounded up to 4 pages");
  if (mem == MAP_FAILED) return 1;
  int zero = 1;
  for (size_t i = 0; i < kBufPages * 4096; i++) zero &= mem[i] == 0;
  check(zero, "the buffer starts zeroed");
  struct dxgpu_event ev;
  int nb = open(argv[1], O_RDWR | O_NONBLOCK);
  expect_errno((int)read(nb, &ev, sizeof(ev)), EAGAIN, "a non-blocking read with no event");
  close(nb);

  // A 64-bit semaphore release with its interrupt (vector 0), then INTERRUPT 3.
  struct channel c = {.fd = fd, .mem = mem, .iova = a.iova};
  channel_start(&c);
  const uint64_t payload = 0xdeadbeefcafef00dull, sem = a.iova + kSemOffset;
  const uint32_t push[] = {(uint32_t)kOpSemaphore << 24 | 5,
                           (uint32_t)sem,
                           (uint32_t)(sem >> 32),
                           (uint32_t)payload,
                           (uint32_t)(payload >> 32),
                           kSemaphore64 | kSemaphoreInterrupt,
                           (uint32_t)kOpInterrupt << 24 | 1,
                           3};
  channel_submit(&c, push, sizeof(push) / 4);
  int got_ev = wait_interrupts(fd, 1u | 1u << 3, 2, &ev);
  uint64_t got;
  memcpy(&got, mem + kSemOffset, sizeof(got));
  char line[200];
  snprintf(line, sizeof(line),
           "the device's semaphore release landed in the buffer (%016" PRIx64 ")", got);
  check(got == payload, line);
  snprintf(line, sizeof(line), "poll/read: %llu interrupts, vectors %#llx (0 and 3 wanted)",
           (unsigned long long)ev.interrupts, (unsigned long long)ev.vectors);
  check(got_ev && ev.interrupts >= 2 && ev.flags == 0, line);
  check(reg_read(fd, kRegGpGet) == 1, "GP_GET advanced: the device fetched the entry by DMA");

  // A pushbuffer outside every window: the device's fetch is refused (UR), its channel fails
  // and says so with its error interrupt.
  uint32_t* e = (uint32_t*)(mem + 16 * c.put);
  e[0] = (uint32_t)kOutside;
  e[1] = (uint32_t)(kOutside >> 32);
  e[2] = 8 * 4;
  e[3] = 0;
  __sync_synchronize();
  c.put = (c.put + 1) % kRingEntries;
  reg_write(fd, kRegGpPut, c.put);
  uint32_t status = wait_error(fd);
  uint32_t code = reg_read(fd, kRegErrorCode);
  snprintf(line, sizeof(line), "a DMA read outside every window refused: channel error %u", code);
  check((status & kStatusError) && code != 0, line);
  check(wait_event(fd, 1u << kErrorVector, &ev), "the channel error's interrupt (vector 1)");
  channel_start(&c);  // the error cleared, a new ring (GP_GET and GP_PUT 0)
  check(!(reg_read(fd, kRegStatus) & kStatusError), "the error cleared by CONTROL");

  // Freed while still mapped: the mapping stays valid, the device can no longer reach it. A
  // second buffer runs the channel; its release into the freed buffer's IOVA must not land.
  struct dxgpu_buf_alloc b;
  uint8_t* mem2 = buf_alloc_map(fd, kBufPages * 4096, &b);
  check(mem2 != NULL && b.iova != a.iova, "a second buffer");
  if (!mem2) return 1;
  reg_write(fd, kRegControl, 0);
  check(ioctl(fd, DXGPU_IOC_BUF_FREE, &a.handle) == 0, "buffer freed");
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_FREE, &a.handle), ENOENT, "freeing it twice");
  mem[0x3000] = 0x11;
  check(mem[0x3000] == 0x11, "its mapping stays usable after the free");
  struct channel c2 = {.fd = fd, .mem = mem2, .iova = b.iova};
  channel_start(&c2);
  uint32_t cmds[12];
  uint32_t n = semaphore_cmd(cmds, a.iova + 0x3000, 0x77, 0);
  n += semaphore_cmd(cmds + n, b.iova + kSemOffset, 0x99, 1);
  channel_submit(&c2, cmds, n);
  wait_event(fd, 1, &ev);
  usleep(100000);  // any write to the old IOVA came before the release after it
  snprintf(line, sizeof(line),
           "a release into the freed buffer's IOVA does not land (%#x), the one after it does "
           "(%#x)",
           mem[0x3000], *(volatile uint32_t*)(mem2 + kSemOffset));
  check(mem[0x3000] == 0x11 && *(volatile uint32_t*)(mem2 + kSemOffset) == 0x99, line);
  reg_write(fd, kRegControl, 0);
  check(ioctl(fd, DXGPU_IOC_BUF_FREE, &b.handle) == 0, "the second buffer freed");
  munmap(mem, kBufPages * 4096);
  munmap(mem2, kBufPages * 4096);
  close(fd);
  printf("chardev_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
