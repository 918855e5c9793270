// late_cpl_check.c - runs in the guest while the host's switch holds every frame from the
// bridge (frame_switch.py PATH.hold): reads the device's ID register in a loop, prints the
// marker the host waits for before it holds, and checks that a read whose completion is held
// past the request timeout ends (EIO, DXPU_MMIO_UR, all-ones) instead of hanging, and that the
// device answers again once the held frames, that late completion among them, are delivered.
// The completion arrives for a tag no longer in flight: dxpu.ko must drop and count it
// (unexpected_cpl in /sys/devices/dxpu/bridges; scenario_late_cpl.sh checks that).
//   late_cpl_check /dev/dxpuN SECONDS
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "guest_check.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: late_cpl_check /dev/dxpuN SECONDS\n");
    return 2;
  }
  const double limit = atof(argv[2]);
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open");
  if (fd < 0) return 1;
  check(reg_read(fd, kRegId) == kIdValue, "the ID register reads before the hold");
  printf("DXPU-HOLD: reading, hold the bridge's frames now\n");
  fflush(stdout);
  const double start = now_s();
  unsigned long answered = 0;
  int ended = 0;
  while (now_s() - start < limit) {
    uint8_t status = DXPU_MMIO_OK;
    const double t0 = now_s();
    const uint32_t id = reg_read_status(fd, kRegId, &status);
    if (now_s() - t0 > 3.0) {
      check(0, "an MMIO read took more than 3 s");
      break;
    }
    if (id == kIdValue && status == DXPU_MMIO_OK) {
      answered++;
      continue;
    }
    char line[160];
    snprintf(line, sizeof(line), "a read held past its timeout ends: errno %d status %u value 0x%x",
             errno, status, id);
    check(errno == EIO && status == DXPU_MMIO_UR && id == 0xffffffffu, line);
    ended = 1;
    break;
  }
  check(ended, "a read met the hold (ended unanswered)");
  // The device answers again once the switch lets the frames through.
  uint32_t id = 0;
  const double healed = now_s();
  while (now_s() - healed < limit && (id = reg_read(fd, kRegId)) != kIdValue) usleep(10000);
  char line[160];
  snprintf(line, sizeof(line), "the ID register reads again %.2f s after the timed-out read",
           now_s() - healed);
  check(id == kIdValue, line);
  printf("late_cpl_check: %lu reads answered before the hold, %d failures\n", answered, failures);
  close(fd);
  return failures ? 1 : 0;
}
