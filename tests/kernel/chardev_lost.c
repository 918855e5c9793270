// chardev_lost.c - runs in the guest: opens /dev/dxgpuN, then powers its slot off while the file
// is open (writes 0 to the slot's power file) and while a second process hammers the device
// with register writes and reads (DXGPU_IOC_REGS: the CPU's MMIO through dxpu), and checks the
// file reports the device lost: POLLHUP, read() says lost, every ioctl but INFO answers ENODEV,
// INFO says lost and describes the same device as before (the test boots with slub_debug=P, so
// anything freed under the file would read 0x6b); a buffer mapped before stays usable; the
// racing process ends with ENODEV, not a hang or a crash (a register read the removal overtook
// reads all ones: a master abort, not an error).
//   chardev_lost /dev/dxgpuN /sys/bus/pci/slots/dxpuN/power
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dxgpu_guest.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: chardev_lost /dev/dxgpuN POWER_FILE\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR);
  check(fd >= 0, "open before power off");
  if (fd < 0) return 1;
  struct dxgpu_info before;
  check(ioctl(fd, DXGPU_IOC_INFO, &before) == 0 && !(before.flags & DXGPU_INFO_F_LOST),
        "INFO before power off");
  struct dxgpu_buf_alloc a;
  uint8_t* mem = buf_alloc_map(fd, 4096, &a);
  check(mem != NULL, "a buffer mapped before power off");
  // The racing process: register writes and reads until the device goes; its exit status says
  // how (0: ENODEV after some batches; 1: another error; 2: ENODEV at once; 3: a read-back that
  // was neither the value written nor all ones).
  pid_t child = fork();
  if (child == 0) {
    int cfd = open(argv[1], O_RDWR);
    unsigned long n = 0, aborts = 0;
    int wrong = 0;
    for (;; n++) {
      struct dxgpu_reg_op ops[2] = {
          {.offset = kRegGpfifoLo, .value = (uint32_t)(n << 4), .flags = DXGPU_REG_WRITE},
          {.offset = kRegGpfifoLo},
      };
      if (regs(cfd, ops, 2, NULL) != 0) break;
      if (ops[1].value == 0xffffffffu)
        aborts++;
      else if (ops[1].value != (uint32_t)(n << 4))
        wrong = 1;
    }
    int e = errno;
    printf("racing process: %lu batches (%lu read all ones) before %s\n", n, aborts, strerror(e));
    _exit(wrong ? 3 : e == ENODEV ? (n > 0 ? 0 : 2) : 1);
  }
  usleep(300000);  // let it run
  int power = open(argv[2], O_WRONLY);
  check(power >= 0 && write(power, "0", 1) == 1, "power off with the file open");
  close(power);
  struct pollfd p = {.fd = fd, .events = POLLIN};
  check(poll(&p, 1, 2000) == 1 && (p.revents & POLLHUP), "poll reports POLLHUP");
  struct dxgpu_event ev;
  check(read(fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev) && (ev.flags & DXGPU_INFO_F_LOST),
        "read says lost");
  struct dxgpu_reg_op op = {.offset = kRegId};
  expect_errno(regs(fd, &op, 1, NULL), ENODEV, "REGS after removal");
  struct dxgpu_buf_alloc b = {.size = 4096};
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_ALLOC, &b), ENODEV, "BUF_ALLOC after removal");
  struct dxgpu_buf_import im = {.fd = fd, .handle = a.handle};
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_IMPORT, &im), ENODEV, "BUF_IMPORT after removal");
  expect_errno(ioctl(fd, DXGPU_IOC_BUF_FREE, &a.handle), ENODEV, "BUF_FREE after removal");
  struct dxgpu_info info;
  check(ioctl(fd, DXGPU_IOC_INFO, &info) == 0 && (info.flags & DXGPU_INFO_F_LOST),
        "INFO says lost");
  char line[200];
  snprintf(line, sizeof(line),
           "INFO after removal describes the device as before: %04x:%04x %s (vectors %u -> %u)",
           info.vendor_id, info.device_id, info.pci_name, before.msix_vectors, info.msix_vectors);
  // Not compared: flags (lost), and msix_vectors, "the vectors the driver has": none after
  // its removal freed them.
  info.flags = before.flags;
  info.msix_vectors = before.msix_vectors;
  check(memcmp(&info, &before, sizeof(info)) == 0, line);
  if (mem) {
    mem[0] = 7;  // the pages stay until unmapped
    check(mem[0] == 7 && munmap(mem, 4096) == 0, "the buffer's mapping outlives the device");
  }
  check(close(fd) == 0, "close");
  int wstatus = 0;
  check(waitpid(child, &wstatus, 0) == child && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
        "the process racing the removal with register batches ended with ENODEV");
  printf("chardev_lost: %d failures\n", failures);
  return failures ? 1 : 0;
}
