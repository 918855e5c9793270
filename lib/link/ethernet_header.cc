// ethernet_header.cc - the Ethernet header that precedes a DxFP frame.
#include "link/ethernet_header.h"

#include <algorithm>

namespace dxpu::link {

EthernetHeader MakeEthernetHeader(const MacAddress& dst, const MacAddress& src,
                                  uint16_t ethertype) {
  EthernetHeader h{};
  std::copy(dst.begin(), dst.end(), h.begin());
  std::copy(src.begin(), src.end(), h.begin() + 6);
  h[12] = static_cast<uint8_t>(ethertype >> 8);
  h[13] = static_cast<uint8_t>(ethertype & 0xff);
  return h;
}

MacAddress EthernetDestination(std::span<const uint8_t, kEthernetHeaderSize> header) {
  MacAddress mac{};
  std::copy(header.begin(), header.begin() + 6, mac.begin());
  return mac;
}

MacAddress EthernetSource(std::span<const uint8_t, kEthernetHeaderSize> header) {
  MacAddress mac{};
  std::copy(header.begin() + 6, header.begin() + 12, mac.begin());
  return mac;
}

uint16_t EthernetType(std::span<const uint8_t, kEthernetHeaderSize> header) {
  return static_cast<uint16_t>((header[12] << 8) | header[13]);
}

}  // namespace dxpu::link
