// lock_order_check.c - runs in the guest: /dev/dxpuN's locks against mmap_lock. One thread runs
// a long MMIO batch whose ops live in a private page that a second step takes away while the
// batch runs (MADV_DONTNEED), so copying the results back faults and takes mmap_lock; meanwhile
// another thread of the process mmaps the device, which holds mmap_lock for writing around
// dxpu's mmap. A driver that held its device lock across that copy and took the same lock in
// mmap deadlocked here (ABBA: each thread waits for the lock the other holds) and no lockdep
// was needed to see it: both calls must return, the batch with every result copied back.
//   lock_order_check /dev/dxpuN
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "guest_check.h"

#define OPS DXPU_MMIO_MAX_BATCH
#define REGION_PAGES 2 /* the batch and its ops: 16 + 256 * 24 bytes */

struct batch_page {
  struct dxpu_mmio_batch batch;
  struct dxpu_mmio_op ops[OPS];
};

static int fd;
static struct batch_page* page;
static uint64_t mmap_offset;
static atomic_int batch_started, batch_done, mmap_done;
static int batch_rc, mmap_ok;

static void fill_batch(struct batch_page* p) {
  memset(p, 0, sizeof(*p));
  for (int i = 0; i < OPS; i++) {
    p->ops[i].dir = DXPU_MMIO_READ;
    p->ops[i].width = 4;
    p->ops[i].offset = kRegId;
  }
  p->batch.ops = (uintptr_t)p->ops;
  p->batch.count = OPS;
}

static void* run_batch(void* arg) {
  (void)arg;
  atomic_store(&batch_started, 1);
  batch_rc = ioctl(fd, DXPU_IOC_MMIO, &page->batch);
  atomic_store(&batch_done, 1);
  return NULL;
}

static void* run_mmap(void* arg) {
  (void)arg;
  void* m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)mmap_offset);
  mmap_ok = m != MAP_FAILED;
  if (mmap_ok) munmap(m, 4096);
  atomic_store(&mmap_done, 1);
  return NULL;
}

static void sleep_s(double s) {
  struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: lock_order_check /dev/dxpuN\n");
    return 2;
  }
  fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  struct dxpu_dma_alloc a = {.size = 4096};
  check(ioctl(fd, DXPU_IOC_DMA_ALLOC, &a) == 0, "a DMA buffer to mmap");
  mmap_offset = a.mmap_offset;
  page =
      mmap(NULL, REGION_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  check(page != MAP_FAILED, "a private region for the batch");
  if (page == MAP_FAILED) return 1;

  // How long a batch takes here: the steps below fall inside the next one. The timing is the
  // guest's, on a loaded host: an attempt whose steps did not fall inside is made again.
  fill_batch(page);
  double t0 = now_s();
  check(ioctl(fd, DXPU_IOC_MMIO, &page->batch) == 0 && page->batch.done == OPS,
        "a batch of 256 register reads");
  double t = now_s() - t0;
  printf("lock_order_check: a batch of %d reads takes %.3f s\n", OPS, t);
  int attempt, inside = 0;
  for (attempt = 1; attempt <= 20 && !inside; attempt++) {
    fill_batch(page);
    atomic_store(&batch_started, 0);
    atomic_store(&batch_done, 0);
    atomic_store(&mmap_done, 0);
    pthread_t batch_thread, mmap_thread;
    t0 = now_s();
    pthread_create(&batch_thread, NULL, run_batch, NULL);
    while (!atomic_load(&batch_started)) sleep_s(0.001);
    sleep_s(t / 8);
    // The batch runs (its ops were copied in): its page goes, the copy back will fault.
    madvise(page, REGION_PAGES * 4096, MADV_DONTNEED);
    sleep_s(t / 8);
    const int mmap_during_batch = !atomic_load(&batch_done);
    pthread_create(&mmap_thread, NULL, run_mmap, NULL);
    const double start = now_s();
    while ((!atomic_load(&batch_done) || !atomic_load(&mmap_done)) && now_s() - start < t + 10)
      sleep_s(0.01);
    if (!atomic_load(&batch_done) || !atomic_load(&mmap_done)) {
      printf(
          "DXPU-TEST: FAIL a batch copying its results back (faulting) and an mmap of the "
          "device in another thread: deadlock (batch %s, mmap %s)\n",
          atomic_load(&batch_done) ? "done" : "stuck", atomic_load(&mmap_done) ? "done" : "stuck");
      printf("lock_order_check: deadlock\n");
      fflush(stdout);
      return 1;  // the stuck threads cannot be joined
    }
    pthread_join(batch_thread, NULL);
    pthread_join(mmap_thread, NULL);
    // Inside: the mmap began while the batch ran, and the page went before the copy back (the
    // results are in the page that copy faulted in).
    inside = mmap_during_batch && batch_rc == 0 && page->batch.done == OPS &&
             page->ops[OPS - 1].value == kIdValue;
    t = now_s() - t0;
  }
  char line[200];
  snprintf(line, sizeof(line),
           "mmap while a batch ran whose copy back faulted: both returned, the results copied "
           "back (attempt %d)",
           attempt - 1);
  check(inside, line);
  check(mmap_ok, "the mmap succeeded");
  close(fd);
  printf("lock_order_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
