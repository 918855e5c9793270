// lock_order_check.c - runs in the guest: dxgpu.ko's locks against mmap_lock, on /dev/dxgpuN.
// An ioctl whose argument lies in a page write-protected through userfaultfd: the driver's
// copy of its results back to user memory faults, and the fault waits (in the handler, with
// mmap_lock released) until this program lets it go. Meanwhile another thread of the process
// mmaps a buffer of the device, which holds mmap_lock for writing around dxgpu's mmap (which
// takes the file's lock). A driver that held a lock across that copy and took the same lock in
// mmap deadlocks here (ABBA: the mmap waits for the lock the ioctl holds, the ioctl's fault
// waits for mmap_lock), no lockdep needed to see it: the mmap must complete while the copy is
// held, then both calls return, the results copied back. Checked for a register batch
// (DXGPU_IOC_REGS, 256 reads through dxpu's transparent MMIO) and a buffer allocation
// (DXGPU_IOC_BUF_ALLOC). (dxpu.ko's own character device held its device lock across a whole
// batch and took it in mmap: both threads deadlocked.)
//   lock_order_check /dev/dxgpuN
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dxgpu_guest.h"

#define OPS DXGPU_REGS_MAX
#define REGION_BYTES (2 * 4096) /* the batch and its ops: 16 + 256 * 16 bytes */

struct batch_page {
  struct dxgpu_regs batch;
  struct dxgpu_reg_op ops[OPS];
};

static int fd, uffd;
static uint8_t* region;  // registered for write-protect faults
static uint64_t mmap_offset, mmap_size;
static unsigned long ioctl_cmd;
static atomic_int ioctl_done, mmap_done, resolve, resolved;
static int ioctl_rc, ioctl_errno, mmap_ok;

static void* run_ioctl(void* arg) {
  ioctl_rc = ioctl(fd, ioctl_cmd, arg);
  ioctl_errno = errno;
  atomic_store(&ioctl_done, 1);
  return NULL;
}

static void* run_mmap(void* arg) {
  (void)arg;
  void* m = mmap(NULL, mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)mmap_offset);
  mmap_ok = m != MAP_FAILED;
  if (mmap_ok) munmap(m, mmap_size);
  atomic_store(&mmap_done, 1);
  return NULL;
}

// Once told: the region writable again, the held fault goes on (takes mmap_lock for reading).
// Started before the fault: a thread started later needs mmap_lock for its stack.
static void* run_resolve(void* arg) {
  (void)arg;
  while (!atomic_load(&resolve)) {
    struct timespec ts = {.tv_nsec = 1000000};
    nanosleep(&ts, NULL);
  }
  struct uffdio_writeprotect wp = {.range = {.start = (uintptr_t)region, .len = REGION_BYTES}};
  ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
  atomic_store(&resolved, 1);
  return NULL;
}

static int write_protect(void) {
  struct uffdio_writeprotect wp = {.range = {.start = (uintptr_t)region, .len = REGION_BYTES},
                                   .mode = UFFDIO_WRITEPROTECT_MODE_WP};
  return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
}

static void sleep_s(double s) {
  struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

// Waits up to s seconds for *flag; 1 when it was set.
static int wait_flag(atomic_int* flag, double s) {
  for (double start = now_s(); !atomic_load(flag) && now_s() - start < s;) sleep_s(0.01);
  return atomic_load(flag);
}

// cmd on arg (in the region, filled and then write-protected by the caller); what names it.
// 1 when the copy back was held in its fault, the mmap completed meanwhile and both returned.
static int held_copy(unsigned long cmd, void* arg, const char* what) {
  char line[200];
  atomic_store(&ioctl_done, 0);
  atomic_store(&mmap_done, 0);
  atomic_store(&resolve, 0);
  atomic_store(&resolved, 0);
  ioctl_cmd = cmd;
  pthread_t ioctl_thread, mmap_thread, resolve_thread;
  pthread_create(&resolve_thread, NULL, run_resolve, NULL);
  pthread_create(&ioctl_thread, NULL, run_ioctl, arg);
  // The fault of the copy back: a write-protect fault in the region.
  struct uffd_msg msg;
  struct pollfd p = {.fd = uffd, .events = POLLIN};
  int faulted = poll(&p, 1, 20000) == 1 && read(uffd, &msg, sizeof(msg)) == sizeof(msg) &&
                msg.event == UFFD_EVENT_PAGEFAULT &&
                (msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) &&
                msg.arg.pagefault.address - (uintptr_t)region < REGION_BYTES;
  snprintf(line, sizeof(line), "%s: its copy back faults and is held (%s)", what,
           atomic_load(&ioctl_done) ? "the call returned" : "the call is waiting");
  check(faulted && !atomic_load(&ioctl_done), line);
  pthread_create(&mmap_thread, NULL, run_mmap, NULL);
  int mmap_meanwhile = wait_flag(&mmap_done, 5);
  snprintf(line, sizeof(line), "%s: an mmap of the device completes while the copy is held", what);
  check(mmap_meanwhile && mmap_ok, line);
  atomic_store(&resolve, 1);
  double start = now_s();
  while ((!atomic_load(&ioctl_done) || !atomic_load(&mmap_done) || !atomic_load(&resolved)) &&
         now_s() - start < 10)
    sleep_s(0.01);
  if (!atomic_load(&ioctl_done) || !atomic_load(&mmap_done) || !atomic_load(&resolved)) {
    printf(
        "DXPU-TEST: FAIL %s and an mmap of the device in another thread: deadlock (ioctl %s, "
        "mmap %s, fault %s)\n",
        what, atomic_load(&ioctl_done) ? "done" : "stuck",
        atomic_load(&mmap_done) ? "done" : "stuck",
        atomic_load(&resolved) ? "let go" : "stuck letting go");
    printf("lock_order_check: deadlock\n");
    fflush(stdout);
    _exit(1);  // the stuck threads cannot be joined
  }
  pthread_join(ioctl_thread, NULL);
  pthread_join(mmap_thread, NULL);
  pthread_join(resolve_thread, NULL);
  snprintf(line, sizeof(line), "%s: returned %s after the fault was let go", what,
           ioctl_rc == 0 ? "0" : strerror(ioctl_errno));
  check(ioctl_rc == 0, line);
  return faulted && mmap_meanwhile;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: lock_order_check /dev/dxgpuN\n");
    return 2;
  }
  fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  struct dxgpu_buf_alloc a = {.size = 4096};
  check(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &a) == 0, "a buffer to mmap");
  mmap_offset = a.mmap_offset;
  mmap_size = 4096;

  // The region, present (written) and registered for write-protect faults.
  region = mmap(NULL, REGION_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  check(region != MAP_FAILED, "a private region for the arguments");
  if (region == MAP_FAILED) return 1;
  memset(region, 0, REGION_BYTES);
  uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
  struct uffdio_api api = {.api = UFFD_API};
  struct uffdio_register reg = {.range = {.start = (uintptr_t)region, .len = REGION_BYTES},
                                .mode = UFFDIO_REGISTER_MODE_WP};
  check(uffd >= 0 && ioctl(uffd, UFFDIO_API, &api) == 0 && ioctl(uffd, UFFDIO_REGISTER, &reg) == 0,
        "userfaultfd: the region registered for write-protect faults");
  if (uffd < 0) return 1;

  // A register batch of 256 reads of ID: the results are copied back into the region.
  struct batch_page* page = (struct batch_page*)region;
  for (int i = 0; i < OPS; i++) page->ops[i].offset = kRegId;
  page->batch.ops = (uintptr_t)page->ops;
  page->batch.count = OPS;
  check(write_protect() == 0, "the batch's pages write-protected");
  if (held_copy(DXGPU_IOC_REGS, &page->batch, "a register batch")) {
    check(page->batch.done == OPS && page->ops[0].value == kIdValue &&
              page->ops[OPS - 1].value == kIdValue,
          "the batch's 256 results copied back");
  }

  // A buffer allocation: its handle, IOVA and offset are copied back into the region.
  struct dxgpu_buf_alloc* b = (struct dxgpu_buf_alloc*)region;
  memset(region, 0, REGION_BYTES);
  b->size = 4096;
  check(write_protect() == 0, "the allocation's page write-protected");
  if (held_copy(DXGPU_IOC_BUF_ALLOC, b, "a buffer allocation")) {
    check(b->handle != 0 && b->iova != 0 && b->mmap_offset != 0,
          "the allocation's handle, IOVA and offset copied back");
    check(ioctl(fd, DXGPU_IOC_BUF_FREE, &b->handle) == 0, "and the buffer it names freed");
  }
  close(uffd);
  close(fd);
  printf("lock_order_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
