// late_cpl_check.c - runs in the guest while the host's switch withholds a completion from
// the bridge: holds every frame (frame_switch.py PATH.hold), so the completion comes late, or
// forges it (PATH.forge: its Tag changed). Reads the device's ID register in a loop, prints
// "MARKER: reading" for the host to act on, and checks that the read whose completion never
// came ends at the request timeout (EIO, DXPU_MMIO_UR, all-ones) instead of hanging, and that
// the device answers again after. The completion that did arrive was for a tag not in flight:
// dxpu.ko must drop and count it (unexpected_cpl in /sys/devices/dxpu/bridges;
// scenario_late_cpl.sh checks that).
//   late_cpl_check /dev/dxpuN SECONDS MARKER
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "guest_check.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: late_cpl_check /dev/dxpuN SECONDS MARKER\n");
    return 2;
  }
  const double limit = atof(argv[2]);
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  check(reg_read(fd, kRegId) == kIdValue, "the ID register reads");
  printf("%s: reading\n", argv[3]);
  fflush(stdout);
  const double start = now_s();
  unsigned long answered = 0;
  int ended = 0;
  while (now_s() - start < limit) {
    uint8_t status = DXPU_MMIO_OK;
    const double t0 = now_s();
    const uint32_t id = reg_read_status(fd, kRegId, &status);
    if (now_s() - t0 > 6.0) {  // the request timeout is 1 s, both ends' link-down 10 s
      check(0, "an MMIO read took more than 6 s");
      break;
    }
    if (id == kIdValue && status == DXPU_MMIO_OK) {
      answered++;
      continue;
    }
    char line[160];
    snprintf(line, sizeof(line),
             "a read whose completion never came ends: errno %d status %u value 0x%x", errno,
             status, id);
    check(errno == EIO && status == DXPU_MMIO_UR && id == 0xffffffffu, line);
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
