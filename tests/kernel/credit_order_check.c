// credit_order_check.c - runs in the guest, its NIC behind the host's frame_switch.py: PCIe's
// ordering rule that a posted write may pass a non-posted request waiting for credit
// (docs/protocol.md 4.6). Asks the switch (in band, EtherType 0x88B6) to freeze the bridge's
// non-posted credit, which leaves the guest's session N non-posted TLPs; writes the device's
// Interrupt Line N + 2 times through its configuration space (pci_ops: each write a CfgWr0
// queued without waiting), so the last two find no credit; then posts one MMIO write to BAR0
// through /dev/dxgpuN (DXGPU_IOC_REGS: dxgpu.ko's writel, dxpu's transparent MMIO, which first
// hands the device's queued configuration writes to the bridge's path), thaws the credit and
// reads back from the switch the order in which the guest's TLPs reached the bridge. The write
// must come before the two configuration writes that waited, and all N + 2 must arrive (the
// last value reads back from the shadow).
//   credit_order_check /dev/dxgpuN CONFIG IFNAME BRIDGE_MAC
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dxgpu_guest.h"

#define ETHERTYPE_CONTROL 0x88B6
#define PCI_INTERRUPT_LINE 0x3c

static int sock = -1;
static struct sockaddr_ll to;
static uint8_t own_mac[6];

// A command to the switch and its answer (into reply); 0 when none came within 2 s.
static int ask(const char* command, char* reply, size_t cap) {
  uint8_t frame[1600];
  const size_t n = strlen(command);
  memset(frame, 0xff, 6);         // the switch takes it whatever its destination
  memcpy(frame + 6, own_mac, 6);  // and answers to its source
  frame[12] = ETHERTYPE_CONTROL >> 8;
  frame[13] = ETHERTYPE_CONTROL & 0xff;
  memcpy(frame + 14, command, n);
  if (sendto(sock, frame, 14 + n, 0, (struct sockaddr*)&to, sizeof(to)) < 0) return 0;
  const double start = now_s();
  while (now_s() - start < 2.0) {
    struct pollfd p = {sock, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t got = recv(sock, frame, sizeof(frame) - 1, 0);
    if (got < 14) continue;
    size_t len = (size_t)got - 14;
    if (len >= cap) len = cap - 1;
    memcpy(reply, frame + 14, len);
    reply[len] = 0;
    reply[strcspn(reply, "\n")] = 0;
    return 1;
  }
  return 0;
}

static int open_control(const char* ifname) {
  struct ifreq ifr = {0};
  int one = 1;
  sock = socket(AF_PACKET, SOCK_RAW, htons(ETHERTYPE_CONTROL));
  if (sock < 0) return 0;
  setsockopt(sock, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
  snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
  if (ioctl(sock, SIOCGIFHWADDR, &ifr) < 0) return 0;
  memcpy(own_mac, ifr.ifr_hwaddr.sa_data, 6);
  to.sll_family = AF_PACKET;
  to.sll_protocol = htons(ETHERTYPE_CONTROL);
  to.sll_ifindex = (int)if_nametoindex(ifname);
  to.sll_halen = 6;
  memset(to.sll_addr, 0xff, 6);
  return to.sll_ifindex > 0 && bind(sock, (struct sockaddr*)&to, sizeof(to)) == 0;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: credit_order_check /dev/dxgpuN CONFIG IFNAME BRIDGE_MAC\n");
    return 2;
  }
  char command[64], reply[1600], line[2048];
  int fd = open(argv[1], O_RDWR);
  int cfg = open(argv[2], O_RDWR);
  check(fd >= 0 && cfg >= 0, "open the device and its configuration space");
  if (fd < 0 || cfg < 0) return 1;
  check(open_control(argv[3]), "a raw socket for the switch's control frames");
  // A register whose write changes nothing: the GPFIFO base, written back as it reads.
  const uint32_t base = reg_read(fd, kRegGpfifoLo);

  snprintf(command, sizeof(command), "freeze %s", argv[4]);
  unsigned long credit = 0;
  char* end = NULL;
  const int frozen = ask(command, reply, sizeof(reply)) && strncmp(reply, "frozen ", 7) == 0 &&
                     (credit = strtoul(reply + 7, &end, 10), *end == 0);
  snprintf(line, sizeof(line), "the switch froze the bridge's non-posted credit: '%s'",
           frozen ? reply : "no answer");
  check(frozen && credit > 0 && credit <= 4096, line);
  if (!frozen || credit == 0 || credit > 4096) return 1;

  // credit writes take what is left; the last two wait for credit in dxpu.ko's ordering queue.
  const unsigned long writes = credit + 2;
  for (unsigned long i = 0; i < writes; i++) {
    const uint8_t v = i + 2 == writes ? 0xa5 : i + 1 == writes ? 0x5a : (uint8_t)(i & 0x7f);
    if (pwrite(cfg, &v, 1, PCI_INTERRUPT_LINE) != 1) {
      check(0, "a configuration write through sysfs");
      return 1;
    }
    if (i % 16 == 15) usleep(2000);  // completions come back: tags never run out
  }
  // writel through transparent MMIO: a write that cannot be sent is dropped and counted.
  const long long write_errors0 = mmio_counter("write_errors");
  const double posted_at = now_s();
  const int wrote = reg_write(fd, kRegGpfifoLo, base) == 0;
  snprintf(line, sizeof(line), "the posted write queued in %.3f s (write_errors %lld -> %lld)",
           now_s() - posted_at, write_errors0, mmio_counter("write_errors"));
  check(wrote && write_errors0 >= 0 && mmio_counter("write_errors") == write_errors0, line);

  snprintf(command, sizeof(command), "thaw %s", argv[4]);
  check(ask(command, reply, sizeof(reply)) && !strcmp(reply, "thawed"), "the credit thawed");

  // What reached the bridge, in order; the writes that waited go once credit comes.
  snprintf(command, sizeof(command), "trace %s", argv[4]);
  unsigned long w_before = 0, w_after = 0, m = 0;
  const double start = now_s();
  do {
    usleep(20000);
    if (!ask(command, reply, sizeof(reply)) || strncmp(reply, "trace ", 6) != 0) continue;
    w_before = w_after = m = 0;
    for (const char* c = reply + 6; *c; c++) {
      if (*c == 'M') m++;
      if (*c == 'W') *(m ? &w_after : &w_before) += 1;
    }
  } while (w_before + w_after < writes && now_s() - start < 3.0);
  snprintf(line, sizeof(line),
           "all %lu configuration writes reached the bridge, %lu before the posted write and %lu "
           "after it (%lu posted writes)",
           writes, w_before, w_after, m);
  check(w_before + w_after == writes && m == 1, line);
  snprintf(line, sizeof(line),
           "the posted write passed the configuration writes waiting for credit (%lu after it)",
           w_after);
  check(m == 1 && w_after >= 2, line);
  uint8_t last = 0;
  check(pread(cfg, &last, 1, PCI_INTERRUPT_LINE) == 1 && last == 0x5a,
        "the last configuration write's value reads back");
  check(reg_read(fd, kRegId) == kIdValue, "the device answers after");
  printf("credit_order_check: %d failures (credit %lu)\n", failures, credit);
  return failures ? 1 : 0;
}
