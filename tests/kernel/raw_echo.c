// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * raw_echo.c - a guest test program (linked statically): sends Ethernet frames of
 * EtherType 0x88B5 (DxFP's) on an interface through AF_PACKET and checks that each comes
 * back byte for byte from an echoing peer. Prints DXPU-TEST lines and the median round trip.
 *
 *	raw_echo IFNAME COUNT
 */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ETHERTYPE_DXFP 0x88B5
#define FRAME_LEN 1014

static uint64_t now_ns(void) {
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  const char* ifname = argc > 1 ? argv[1] : "eth0";
  int count = argc > 2 ? atoi(argv[2]) : 100;
  struct sockaddr_ll addr = {0};
  struct ifreq ifr = {0};
  uint8_t tx[FRAME_LEN], rx[2048];
  uint64_t* rtt;
  int fd, one = 1, i, ok = 0;

  if (count < 1 || count > 100000) count = 100;
  rtt = calloc((size_t)count, sizeof(*rtt));
  fd = socket(AF_PACKET, SOCK_RAW, htons(ETHERTYPE_DXFP));
  if (fd < 0 || !rtt) {
    printf("DXPU-TEST: FAIL raw socket: %m\n");
    return 1;
  }
  setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
  snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
  if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
    printf("DXPU-TEST: FAIL no interface %s: %m\n", ifname);
    return 1;
  }
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETHERTYPE_DXFP);
  addr.sll_ifindex = (int)if_nametoindex(ifname);
  if (bind(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
    printf("DXPU-TEST: FAIL bind %s: %m\n", ifname);
    return 1;
  }
  for (i = 0; i < count; i++) {
    struct pollfd p = {fd, POLLIN, 0};
    uint64_t t0;
    ssize_t n;
    int j;

    memset(tx, 0xff, 6); /* broadcast: the peer answers whatever it is */
    memcpy(tx + 6, ifr.ifr_hwaddr.sa_data, 6);
    tx[12] = ETHERTYPE_DXFP >> 8;
    tx[13] = ETHERTYPE_DXFP & 0xff;
    for (j = 14; j < FRAME_LEN; j++) tx[j] = (uint8_t)(i * 7 + j);
    t0 = now_ns();
    if (send(fd, tx, sizeof(tx), 0) != (ssize_t)sizeof(tx)) {
      printf("DXPU-TEST: FAIL send %d: %m\n", i);
      return 1;
    }
    if (poll(&p, 1, 2000) != 1) {
      printf("DXPU-TEST: FAIL no echo of frame %d within 2 s\n", i);
      return 1;
    }
    n = recv(fd, rx, sizeof(rx), 0);
    rtt[i] = now_ns() - t0;
    if (n == (ssize_t)sizeof(tx) && memcmp(rx + 14, tx + 14, sizeof(tx) - 14) == 0) ok++;
  }
  qsort(rtt, (size_t)count, sizeof(*rtt), cmp_u64);
  if (ok == count)
    printf("DXPU-TEST: PASS %d raw DxFP-type frames echoed intact, median round trip %llu us\n",
           count, (unsigned long long)(rtt[count / 2] / 1000));
  else
    printf("DXPU-TEST: FAIL %d of %d frames came back intact\n", ok, count);
  return ok == count ? 0 : 1;
}
