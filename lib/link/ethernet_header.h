// ethernet_header.h - the Ethernet header that precedes a DxFP frame on raw Ethernet and
// on AF_UNIX datagrams (docs/protocol.md, section 4.1).
#ifndef DXPU_LIB_LINK_ETHERNET_HEADER_H_
#define DXPU_LIB_LINK_ETHERNET_HEADER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "link/link_address.h"

namespace dxpu::link {

constexpr size_t kEthernetHeaderSize = 14;  // destination MAC, source MAC, EtherType
constexpr size_t kVlanTagSize = 4;          // 802.1Q TPID 0x8100 (in the EtherType) + TCI
constexpr uint16_t kEtherTypeVlan = 0x8100;

using EthernetHeader = std::array<uint8_t, kEthernetHeaderSize>;

EthernetHeader MakeEthernetHeader(const MacAddress& dst, const MacAddress& src, uint16_t ethertype);

MacAddress EthernetDestination(std::span<const uint8_t, kEthernetHeaderSize> header);
MacAddress EthernetSource(std::span<const uint8_t, kEthernetHeaderSize> header);
uint16_t EthernetType(std::span<const uint8_t, kEthernetHeaderSize> header);

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_ETHERNET_HEADER_H_
