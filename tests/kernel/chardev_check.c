// chardev_check.c - runs in the guest against /dev/dxpuN of an attached "dxgpu" (statically
// linked; the uAPI is include/dxpu/dxpu_ioctl.h). Checks what the device is, register access
// over the fabric, a DMA buffer the device writes into (a semaphore release) with an MSI-X
// interrupt delivered to poll()/read(), a device DMA outside every window refused, a freed
// buffer no longer reachable, and that every malformed argument gets its errno.
// Prints "DXPU-TEST: PASS|FAIL <what>" lines; exit status 1 when any check failed.
//   chardev_check /dev/dxpu0 MEMORY_BYTES [REMOTE_BDF (default 0x0100, 01:00.0)]
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

#include "guest_check.h"

// An errno check: the call failed with exactly err.
static void expect_errno(int rc, int err, const char* what) {
  char line[160];
  snprintf(line, sizeof(line), "%s: %s (expected %s)", what, rc == 0 ? "accepted" : strerror(errno),
           strerror(err));
  check(rc != 0 && errno == err, line);
}

// Waits up to 5 s for events until want_interrupts came and vector want_vector among them;
// returns what it read (accumulated).
static struct dxpu_event wait_event(int fd, uint64_t want_interrupts, unsigned want_vector) {
  struct dxpu_event ev = {0}, last = {0};
  for (int i = 0; i < 50; i++) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) == 1 && (p.revents & POLLIN) &&
        read(fd, &last, sizeof(last)) == (ssize_t)sizeof(last)) {
      ev.interrupts = last.interrupts;
      ev.dma_writes = last.dma_writes;
      ev.vector_mask |= last.vector_mask;
      ev.lost = last.lost;
      if (ev.interrupts >= want_interrupts && (ev.vector_mask & (1ull << want_vector))) break;
    }
  }
  return ev;
}

// One GPFIFO entry at ring[idx] pointing at a pushbuffer of n DWs at push_iova.
static void gpfifo_entry(uint8_t* ring, uint32_t idx, uint64_t push_iova, uint32_t n) {
  uint32_t e[4] = {(uint32_t)push_iova, (uint32_t)(push_iova >> 32), n * 4, 0};
  memcpy(ring + 16 * idx, e, sizeof(e));
}

static void check_info(int fd, uint64_t memory, unsigned remote_bdf) {
  struct dxpu_device_info info;
  char line[200];
  memset(&info, 0xa5, sizeof(info));
  check(ioctl(fd, DXPU_IOC_INFO, &info) == 0, "DXPU_IOC_INFO");
  snprintf(line, sizeof(line), "info: %04x:%04x class %06x remote %02x:%02x.%x %s msix %u",
           info.vendor_id, info.device_id, info.class_code, info.remote_bdf >> 8,
           (info.remote_bdf >> 3) & 0x1f, info.remote_bdf & 7, info.pci_name, info.msix_vectors);
  check(info.vendor_id == 0x4450 && info.device_id == 0x0001 && info.class_code == 0x030200 &&
            info.remote_bdf == remote_bdf && info.msix_vectors == 16 && info.flags == 0 &&
            strncmp(info.pci_name, "1", 1) == 0,
        line);
  check(info.bar_size[0] == (16u << 20) && info.bar_size[2] == (256u << 20) &&
            info.bar_addr[0] != 0 && info.bar_addr[2] >= (1ull << 32),
        "BAR0 16 MiB, BAR2 256 MiB above 4 GiB");
  check(reg_read(fd, kRegId) == kIdValue, "MMIO read of the ID register over the fabric");
  check(reg_read(fd, kRegMemSizeLo) == (uint32_t)memory, "MEM_SIZE is the bridge's memory");
}

static void check_mmio_batch(int fd) {
  struct dxpu_mmio_op ops[3] = {
      {.bar = 0, .dir = DXPU_MMIO_WRITE, .width = 4, .offset = kRegGpfifoBaseLo, .value = 0x1230},
      {.bar = 0, .dir = DXPU_MMIO_READ, .width = 4, .offset = kRegGpfifoBaseLo},
      {.bar = 0, .dir = DXPU_MMIO_READ, .width = 8, .offset = kRegId},
  };
  struct dxpu_mmio_batch b = {.ops = (uintptr_t)ops, .count = 3};
  check(ioctl(fd, DXPU_IOC_MMIO, &b) == 0 && b.done == 3, "a batch of 3 MMIO ops");
  check(ops[1].value == 0x1230 && ops[1].status == DXPU_MMIO_OK,
        "a read after a posted write in one batch sees the write");
  check(ops[2].value == ((uint64_t)0x00010000 << 32 | kIdValue), "an 8-byte read (ID, VERSION)");
}

static void check_bad_input(int fd) {
  struct dxpu_mmio_op op = {.bar = 0, .dir = DXPU_MMIO_READ, .width = 4, .offset = 0};
  struct dxpu_mmio_batch b = {.ops = (uintptr_t)&op, .count = 0};
  expect_errno(ioctl(fd, DXPU_IOC_MMIO, &b), EINVAL, "an MMIO batch of 0 ops");
  b.count = DXPU_MMIO_MAX_BATCH + 1;
  expect_errno(ioctl(fd, DXPU_IOC_MMIO, &b), EINVAL, "an MMIO batch of 257 ops");
  b.count = 1;
  b.ops = 16;
  expect_errno(ioctl(fd, DXPU_IOC_MMIO, &b), EFAULT, "an MMIO batch at a bad address");
  expect_errno(ioctl(fd, DXPU_IOC_MMIO, (void*)16), EFAULT,
               "an MMIO batch header at a bad address");
  struct {
    struct dxpu_mmio_op op;
    const char* what;
  } bad[] = {
      {{.bar = 1, .width = 4}, "BAR1 (not implemented)"},
      {{.bar = 6, .width = 4}, "BAR6"},
      {{.bar = 0, .width = 3}, "width 3"},
      {{.bar = 0, .width = 4, .offset = 2}, "a misaligned offset"},
      {{.bar = 0, .width = 4, .offset = 16u << 20}, "an offset past BAR0"},
      {{.bar = 0, .width = 8, .offset = (16u << 20) - 4}, "a read running past BAR0"},
      {{.bar = 0, .width = 4, .dir = 2}, "direction 2"},
      {{.bar = 0, .width = 4, .reserved = 1}, "a reserved field set"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char what[96];
    snprintf(what, sizeof(what), "MMIO to %s", bad[i].what);
    expect_errno(mmio(fd, &bad[i].op, 1), EINVAL, what);
  }
  expect_errno(ioctl(fd, _IO(DXPU_IOCTL_MAGIC, 0x7f)), ENOTTY, "an unknown ioctl");
  struct dxpu_dma_alloc a = {.size = 0};
  expect_errno(ioctl(fd, DXPU_IOC_DMA_ALLOC, &a), EINVAL, "a DMA buffer of 0 bytes");
  a.size = DXPU_DMA_MAX_SIZE + 1;
  expect_errno(ioctl(fd, DXPU_IOC_DMA_ALLOC, &a), EINVAL, "a DMA buffer over 1 GiB");
  struct dxpu_dma_ref r = {.iova = 0x123000};
  expect_errno(ioctl(fd, DXPU_IOC_DMA_FREE, &r), ENOENT, "freeing a buffer that does not exist");
  expect_errno(ioctl(fd, DXPU_IOC_DMA_SHARE, &r), ENOENT, "sharing a buffer that does not exist");
  void* m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0x123000);
  check(m == MAP_FAILED, "mmap of an offset that is no buffer refused");
  struct dxpu_event ev;
  expect_errno((int)read(fd, &ev, 8), EINVAL, "read() into 8 bytes");
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: chardev_check /dev/dxpuN MEMORY_BYTES [REMOTE_BDF]\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR | O_CLOEXEC);
  check(fd >= 0, "open the character device");
  if (fd < 0) return 1;
  check_info(fd, strtoull(argv[2], NULL, 0),
             argc == 4 ? (unsigned)strtoul(argv[3], NULL, 0) : 0x0100u);
  check_mmio_batch(fd);
  check_bad_input(fd);

  // A DMA buffer: GPFIFO at 0, pushbuffer at 0x1000, semaphore target at 0x2000.
  struct dxpu_dma_alloc a = {.size = 3 * 4096 + 1};
  check(ioctl(fd, DXPU_IOC_DMA_ALLOC, &a) == 0 && a.size == 4 * 4096 && a.iova >= (1ull << 32),
        "DMA buffer allocated (rounded up to pages, above 4 GiB)");
  struct dxpu_dma_ref self = {.iova = a.iova};
  expect_errno(ioctl(fd, DXPU_IOC_DMA_SHARE, &self), EEXIST,
               "sharing a buffer with its own device");
  void* too_big = mmap(NULL, 8 * 4096, PROT_READ, MAP_SHARED, fd, (off_t)a.mmap_offset);
  check(too_big == MAP_FAILED, "mmap larger than the buffer refused");
  uint8_t* mem = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a.mmap_offset);
  check(mem != MAP_FAILED, "mmap the buffer");
  if (mem == MAP_FAILED) return 1;
  int zero = 1;
  for (size_t i = 0; i < a.size; i++) zero &= mem[i] == 0;
  check(zero, "the buffer starts zeroed");
  struct dxpu_event none;
  int nb = open(argv[1], O_RDWR | O_NONBLOCK);
  expect_errno((int)read(nb, &none, sizeof(none)), EAGAIN, "a non-blocking read with no event");
  close(nb);

  const uint64_t payload = 0xdeadbeefcafef00dull;
  uint32_t push[] = {(uint32_t)kOpSemaphore << 24 | 5,    (uint32_t)(a.iova + 0x2000),
                     (uint32_t)((a.iova + 0x2000) >> 32), (uint32_t)payload,
                     (uint32_t)(payload >> 32),           kSemaphore64,
                     (uint32_t)kOpInterrupt << 24 | 1,    3};
  memcpy(mem + 0x1000, push, sizeof(push));
  gpfifo_entry(mem, 0, a.iova + 0x1000, sizeof(push) / 4);
  reg_write(fd, kRegControl, kRegControlRestart);  // whatever an earlier run left
  reg_write(fd, kRegGpfifoBaseLo, (uint32_t)a.iova);
  reg_write(fd, kRegGpfifoBaseHi, (uint32_t)(a.iova >> 32));
  reg_write(fd, kRegGpfifoEntries, 16);
  reg_write(fd, kRegControl, 1);
  reg_write(fd, kRegGpPut, 1);  // the doorbell
  struct dxpu_event ev = wait_event(fd, 1, 3);
  uint64_t got;
  memcpy(&got, mem + 0x2000, sizeof(got));
  char line[160];
  snprintf(line, sizeof(line),
           "the device's semaphore release landed in the buffer (%016" PRIx64 ")", got);
  check(got == payload, line);
  snprintf(line, sizeof(line), "poll/read: %llu DMA writes, %llu interrupts, vectors %#llx",
           (unsigned long long)ev.dma_writes, (unsigned long long)ev.interrupts,
           (unsigned long long)ev.vector_mask);
  check(ev.dma_writes >= 1 && ev.interrupts >= 1 && (ev.vector_mask & (1u << 3)), line);
  check(reg_read(fd, kRegGpGet) == 1, "GP_GET advanced: the device fetched the entry by DMA");

  // A pushbuffer outside every window: the device's fetch is refused (UR), its channel fails.
  gpfifo_entry(mem, 1, 0x3f00000000ull, 8);
  reg_write(fd, kRegGpPut, 2);
  for (int i = 0; i < 50 && !(reg_read(fd, kRegStatus) & kStatusError); i++) usleep(20000);
  snprintf(line, sizeof(line), "a DMA read outside every window refused: channel error %u",
           reg_read(fd, kRegErrorCode));
  check((reg_read(fd, kRegStatus) & kStatusError) != 0, line);
  reg_write(fd, kRegControl, 1 | kRegControlRestart);

  // Freed while still mapped: the mapping stays valid, the device can no longer reach it.
  check(ioctl(fd, DXPU_IOC_DMA_FREE, &self) == 0, "DMA buffer freed");
  expect_errno(ioctl(fd, DXPU_IOC_DMA_FREE, &self), ENOENT, "freeing it twice");
  mem[0x2000] = 0x11;
  check(mem[0x2000] == 0x11, "its mapping stays usable after the free");
  munmap(mem, a.size);
  close(fd);
  printf("chardev_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
