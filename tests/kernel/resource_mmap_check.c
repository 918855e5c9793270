// SPDX-License-Identifier: GPL-2.0
/*
 * resource_mmap_check - a userspace mapping of a dxpu device's BAR (its sysfs resourceN file)
 * must be refused with a clear error, never silently reach nothing (docs/kernel-module.md,
 * "Transparent MMIO"): mmap fails with EOPNOTSUPP.
 *   resource_mmap_check /sys/bus/pci/devices/DEV/resource0
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char** argv) {
  void* p;
  int fd;

  if (argc != 2) {
    fprintf(stderr, "usage: resource_mmap_check RESOURCE_FILE\n");
    return 2;
  }
  fd = open(argv[1], O_RDWR);
  if (fd < 0) {
    printf("DXPU-TEST: FAIL open %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p != MAP_FAILED) {
    printf("DXPU-TEST: FAIL mmap of %s succeeded (reads %#x)\n", argv[1],
           *(volatile unsigned int*)p);
    return 1;
  }
  if (errno != EOPNOTSUPP) {
    printf("DXPU-TEST: FAIL mmap of %s: %s, not EOPNOTSUPP\n", argv[1], strerror(errno));
    return 1;
  }
  printf("DXPU-TEST: PASS mmap of %s refused: %s\n", argv[1], strerror(errno));
  close(fd);
  return 0;
}
