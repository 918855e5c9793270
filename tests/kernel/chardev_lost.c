// chardev_lost.c - runs in the guest: opens /dev/dxpuN, then powers its slot off while the file
// is open (writes 0 to the slot's power file) and while a second process hammers the device
// with MMIO writes and reads, and checks the file reports the device lost: POLLHUP, read()
// says lost, ioctls answer ENODEV, DXPU_IOC_INFO still works, says lost and describes the same
// device as before (the pci_dev it reads is gone from the bus: the driver holds a reference;
// the test boots with slub_debug=P, so freed memory would read 0x6b); the racing process ends
// with ENODEV, not a hang or a crash.
//   chardev_lost /dev/dxpuN /sys/bus/pci/slots/dxpuN/power
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest_check.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: chardev_lost /dev/dxpuN POWER_FILE\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open before power off");
  if (fd < 0) return 1;
  struct dxpu_device_info before;
  check(ioctl(fd, DXPU_IOC_INFO, &before) == 0 && !(before.flags & DXPU_INFO_F_LOST),
        "INFO before power off");
  // The racing process: MMIO writes and reads until the device goes; its exit status says how.
  pid_t child = fork();
  if (child == 0) {
    int cfd = open(argv[1], O_RDWR);
    unsigned long n = 0;
    for (;; n++) {
      struct dxpu_mmio_op ops[2] = {
          {.bar = 0, .dir = DXPU_MMIO_WRITE, .width = 4, .offset = 0x10, .value = n << 4},
          {.bar = 0, .dir = DXPU_MMIO_READ, .width = 4, .offset = 0x10},
      };
      struct dxpu_mmio_batch b = {.ops = (unsigned long)ops, .count = 2};
      if (ioctl(cfd, DXPU_IOC_MMIO, &b) != 0) break;
    }
    int e = errno;
    printf("racing process: %lu batches before %s\n", n, strerror(e));
    _exit(e == ENODEV ? (n > 0 ? 0 : 2) : 1);
  }
  usleep(300000);  // let it run
  int power = open(argv[2], O_WRONLY);
  check(power >= 0 && write(power, "0", 1) == 1, "power off with the file open");
  close(power);
  struct pollfd p = {.fd = fd, .events = POLLIN};
  check(poll(&p, 1, 2000) == 1 && (p.revents & POLLHUP), "poll reports POLLHUP");
  struct dxpu_event ev;
  check(read(fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev) && ev.lost == 1, "read says lost");
  struct dxpu_mmio_op op = {.bar = 0, .dir = DXPU_MMIO_READ, .width = 4};
  struct dxpu_mmio_batch b = {.ops = (unsigned long)&op, .count = 1};
  check(ioctl(fd, DXPU_IOC_MMIO, &b) == -1 && errno == ENODEV, "MMIO answers ENODEV");
  struct dxpu_dma_alloc a = {.size = 4096};
  check(ioctl(fd, DXPU_IOC_DMA_ALLOC, &a) == -1 && errno == ENODEV, "DMA alloc answers ENODEV");
  struct dxpu_device_info info;
  check(ioctl(fd, DXPU_IOC_INFO, &info) == 0 && (info.flags & DXPU_INFO_F_LOST), "INFO says lost");
  char line[200];
  snprintf(line, sizeof(line), "INFO after removal describes the device as before: %04x:%04x %s",
           info.vendor_id, info.device_id, info.pci_name);
  info.flags = before.flags;
  check(memcmp(&info, &before, sizeof(info)) == 0, line);
  check(close(fd) == 0, "close");
  int wstatus = 0;
  check(waitpid(child, &wstatus, 0) == child && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
        "the process racing the removal with MMIO ended with ENODEV");
  return failures ? 1 : 0;
}
