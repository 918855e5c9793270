// stall_check.c - runs in the guest: the slot of /dev/dxgpuN (dxgpu.ko's device of the model GPU)
// powered off while the network is slow (when this program prints its marker the host delays
// every frame from the bridge by 400 ms: each request takes that long and completes; the
// session's link-down time is far longer). A process is in a DXGPU_IOC_REGS batch of 256 ID
// reads (the driver's readl through dxpu's transparent MMIO: 100 s at that pace) when the power
// goes off; meanwhile this program rescans the PCI buses (echo 1 > /sys/bus/pci/rescan) in a
// loop. Power-off must not wait for the network under pci_lock_rescan_remove(): every rescan
// returns within 2 s. The batch ends at its next op: dxgpu's remove marks the device lost first
// (the batch then answers ENODEV) and waits for the op in flight. The power-off itself takes
// what the driver's remove asks of the device at the network's pace (its MMIO stays routed to
// the bridge until the device is off the bus, as a driver's remove needs: virtio_pci's polls
// the device's status; dxgpu's MSI-X teardown reads back each vector's mask): under 30 s. The
// power-off is atomic against the rescans: no rescan brings the device back from its shadow.
// Then it prints the marker on which the host ends the delay.
//   stall_check /dev/dxgpuN /sys/bus/pci/slots/dxpuN/power
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dxgpu_guest.h"

#define OPS DXGPU_REGS_MAX

// What the children report: the power-off's duration, the rescans', the batch's end.
struct shared {
  double power_off_s;
  int power_off_ok;
  volatile int stop;          // the rescanner stops
  volatile double rescan_at;  // when the rescan under way began (0: none)
  double worst;
  int rescans;
  volatile double batch_end;  // when the batch returned (0: not yet)
};

static int write_file(const char* path, const char* text) {
  int f = open(path, O_WRONLY);
  if (f < 0) return 0;
  int ok = write(f, text, strlen(text)) == (ssize_t)strlen(text);
  close(f);
  return ok;
}

// Rescans every PCI bus.
static void rescan(void) { write_file("/sys/bus/pci/rescan", "1"); }

// Rescans in a loop until told to stop, each one's start and the slowest kept in sh.
static void run_rescans(struct shared* sh) {
  while (!sh->stop) {
    sh->rescan_at = now_s();
    rescan();
    double t = now_s() - sh->rescan_at;
    sh->rescan_at = 0;
    sh->worst = t > sh->worst ? t : sh->worst;
    sh->rescans++;
    usleep(50000);
  }
  _exit(0);
}

// A batch of 256 ID reads. The first ones answer the ID, every one after the device left dxpu's
// routes ends all ones, counted as a read error; all 256 run (dxgpu's remove waits for the batch
// to set lost) or, if remove came between two ops, it ends with ENODEV. Exits 0 for those, 1
// for anything else.
static void run_batch(int fd, struct shared* sh) {
  static struct dxgpu_reg_op ops[OPS];
  for (int i = 0; i < OPS; i++) ops[i] = (struct dxgpu_reg_op){.offset = kRegId};
  const long long errors0 = mmio_counter("read_errors");
  uint32_t done = 0;
  int rc = regs(fd, ops, OPS, &done);
  int e = errno;
  sh->batch_end = now_s();
  const long long errors = mmio_counter("read_errors") - errors0;
  uint32_t ids = 0, ones = 0;
  while (ids < done && ops[ids].value == kIdValue) ids++;
  while (ids + ones < done && ops[ids + ones].value == 0xffffffffu) ones++;
  printf(
      "stall_check: the batch ended after %u ops (%u the ID, then %u all ones, read_errors "
      "+%lld): %s\n",
      done, ids, ones, errors, rc ? strerror(e) : "done");
  fflush(stdout);
  int ok = (rc ? e == ENODEV : done == OPS && ids > 0 && ones > 0) && ids + ones == done &&
           errors >= ones;
  _exit(ok ? 0 : 1);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: stall_check /dev/dxgpuN POWER_FILE\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  struct dxgpu_info info;
  check(ioctl(fd, DXGPU_IOC_INFO, &info) == 0 && info.pci_name[0] == '1', "INFO");
  check(reg_read(fd, kRegId) == kIdValue, "a register read before the stall");
  check(mmio_counter("read_errors") >= 0, "/sys/devices/dxpu/mmio has read_errors");
  struct shared* sh =
      mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;

  printf("DXPU-STALL: slow the bridge\n");
  fflush(stdout);
  // Slow: a read takes over 0.2 s, and completes.
  int slow = 0;
  for (double start = now_s(); !slow && now_s() - start < 15;) {
    double t0 = now_s();
    slow = reg_read(fd, kRegId) == kIdValue && now_s() - t0 > 0.2;
  }
  check(slow, "the bridge slowed down: a read takes over 0.2 s and completes");

  pid_t batch = fork();
  if (batch == 0) run_batch(fd, sh);
  usleep(1500000);  // its reads wait for the network
  const double off_start = now_s();
  pid_t power = fork();
  if (power == 0) {
    sh->power_off_ok = write_file(argv[2], "0");
    sh->power_off_s = now_s() - off_start;
    _exit(0);
  }
  pid_t rescanner = fork();
  if (rescanner == 0) run_rescans(sh);
  // Up to 40 s for the power-off; a rescan still under way counts for what it took so far.
  int wstatus = 0, off_in_time = 0;
  while (!(off_in_time = waitpid(power, &wstatus, WNOHANG) == power) && now_s() - off_start < 40)
    usleep(20000);
  const double at = sh->rescan_at;
  const double worst = at && now_s() - at > sh->worst ? now_s() - at : sh->worst;
  const int rescans = sh->rescans;
  sh->stop = 1;
  char line[256];
  snprintf(line, sizeof(line), "power off with the network stalled: done in %.2f s (under 30 s)",
           off_in_time ? sh->power_off_s : now_s() - off_start);
  check(off_in_time && sh->power_off_ok && sh->power_off_s < 30, line);
  snprintf(line, sizeof(line),
           "%d rescans while it ran: the slowest took %.2f s (under 2 s: no network wait under "
           "pci_lock_rescan_remove)",
           rescans, worst);
  check(rescans > 0 && worst < 2, line);
  // dxgpu's remove waits for the batch: it ended before the power-off did.
  snprintf(line, sizeof(line), "the batch in flight returned %.2f s into the power-off",
           sh->batch_end ? sh->batch_end - off_start : -1.0);
  check(sh->batch_end > 0 && sh->batch_end - off_start < 5, line);
  if (off_in_time) {
    waitpid(rescanner, &wstatus, 0);
    rescan();
  }
  char path[128];
  snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", info.pci_name);
  check(access(path, F_OK) != 0 && access(argv[1], F_OK) != 0,
        "no rescan brought the device back (no pci_dev, no /dev/dxgpuN)");
  struct dxgpu_reg_op op = {.offset = kRegId};
  expect_errno(regs(fd, &op, 1, NULL), ENODEV, "REGS after the power-off");

  printf("DXPU-STALL: resume the bridge\n");
  fflush(stdout);
  if (!off_in_time) {
    waitpid(power, &wstatus, 0);
    waitpid(rescanner, &wstatus, 0);
  }
  check(waitpid(batch, &wstatus, 0) == batch && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
        "the batch in flight ended: the ID, then all ones (counted) or ENODEV");
  close(fd);
  printf("stall_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
