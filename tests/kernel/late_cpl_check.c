// late_cpl_check.c - runs in the guest while the host's switch withholds a completion from
// the bridge: holds every frame (frame_switch.py PATH.hold), so the completion comes late, or
// forges it (PATH.forge: its Tag changed). Reads the GPU's ID register in a loop through
// /dev/dxgpuN (DXGPU_IOC_REGS: dxgpu.ko's readl, dxpu's transparent MMIO), prints
// "MARKER: reading" for the host to act on, and checks that the read whose completion never
// came ends at dxpu.ko's request timeout (request_timeout_ms) as a master abort does (all ones,
// counted in read_errors of /sys/devices/dxpu/mmio) instead of hanging, and that the device
// answers again after. The completion that did arrive was for a tag not in flight: dxpu.ko must
// drop and count it (unexpected_cpl in /sys/devices/dxpu/bridges; scenario_late_cpl.sh checks
// that).
//   late_cpl_check /dev/dxgpuN SECONDS MARKER
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dxgpu_guest.h"

// dxpu.ko's request_timeout_ms in seconds; 0 if it cannot be read.
static double request_timeout_s(void) {
  FILE* f = fopen("/sys/module/dxpu/parameters/request_timeout_ms", "r");
  unsigned ms = 0;
  if (!f) return 0;
  if (fscanf(f, "%u", &ms) != 1) ms = 0;
  fclose(f);
  return ms / 1000.0;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: late_cpl_check /dev/dxgpuN SECONDS MARKER\n");
    return 2;
  }
  const double limit = atof(argv[2]);
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  check(reg_read(fd, kRegId) == kIdValue, "the ID register reads");
  const double timeout = request_timeout_s();
  check(timeout > 0 && mmio_counter("read_errors") >= 0,
        "dxpu.ko's request_timeout_ms and /sys/devices/dxpu/mmio's read_errors");
  printf("%s: reading\n", argv[3]);
  fflush(stdout);
  const double start = now_s();
  unsigned long answered = 0;
  int ended = 0;
  while (now_s() - start < limit) {
    const long long errors0 = mmio_counter("read_errors");
    struct dxgpu_reg_op op = {.offset = kRegId};
    const double t0 = now_s();
    const int rc = regs(fd, &op, 1, NULL);
    const int e = errno;
    const double took = now_s() - t0;
    if (took > timeout + 5.0) {  // both ends' link-down is 10 s
      check(0, "a register read took more than the request timeout and 5 s");
      break;
    }
    if (rc == 0 && op.value == kIdValue) {
      answered++;
      continue;
    }
    const long long errors = mmio_counter("read_errors") - errors0;
    char line[200];
    snprintf(line, sizeof(line),
             "a read whose completion never came ends at the request timeout (%.2f s): rc %d "
             "(%s) value 0x%x after %.2f s, read_errors +%lld",
             timeout, rc, rc ? strerror(e) : "ok", op.value, took, errors);
    // At its deadline, not before (another cause, a UR), all ones, counted by dxpu.ko.
    check(rc == 0 && op.value == 0xffffffffu && took >= 0.95 * timeout && errors >= 1, line);
    ended = 1;
    break;
  }
  check(ended, "a read ended unanswered");
  // The device answers again (once the switch lets the frames through, after a hold).
  uint32_t id = 0;
  const double healed = now_s();
  while (now_s() - healed < limit && (id = reg_read(fd, kRegId)) != kIdValue) usleep(10000);
  char line[160];
  snprintf(line, sizeof(line), "the ID register reads again %.2f s after the timed-out read",
           now_s() - healed);
  check(id == kIdValue, line);
  printf("late_cpl_check: %lu reads answered before, %d failures\n", answered, failures);
  close(fd);
  return failures ? 1 : 0;
}
