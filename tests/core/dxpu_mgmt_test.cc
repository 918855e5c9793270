// DxPU management messages (lib/core/dxpu_mgmt.c): messages laid out by hand from
// docs/protocol.md section 15, round trips of every type against a reference writer in this
// file, every decode and encode error, argument checks, the largest STATUS and INVENTORY
// reports, profile names at and past their limit, and random and mutated datagrams (seed
// printed; DXPU_SEED replays).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "core/dxpu_mgmt.h"
#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

using Bytes = std::vector<uint8_t>;

// ---- a reference writer, byte by byte from the spec (independent of the encoder) ----

void Put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void Put32(Bytes& b, uint32_t v) {
  Put16(b, static_cast<uint16_t>(v >> 16));
  Put16(b, static_cast<uint16_t>(v));
}
void Put64(Bytes& b, uint64_t v) {
  Put32(b, static_cast<uint32_t>(v >> 32));
  Put32(b, static_cast<uint32_t>(v));
}

Bytes Header(uint8_t type, uint16_t flags, uint32_t request_id, uint16_t body_length,
             uint16_t status) {
  Bytes b;
  Put32(b, 0x44584d47);
  b.push_back(1);
  b.push_back(type);
  Put16(b, flags);
  Put32(b, request_id);
  Put16(b, body_length);
  Put16(b, status);
  return b;
}

Bytes Join(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes AssignBody(uint16_t device, uint16_t host_bdf, uint64_t node) {
  Bytes b;
  Put16(b, device);
  Put16(b, host_bdf);
  Put32(b, 0);
  Put64(b, node);
  return b;
}

Bytes DeviceRefBody(uint16_t device) {
  Bytes b;
  Put16(b, device);
  Put16(b, 0);
  Put32(b, 0);
  return b;
}

Bytes GrantBody(uint16_t device, uint64_t device_base, uint64_t host_base, uint64_t size) {
  Bytes b = DeviceRefBody(device);
  Put64(b, device_base);
  Put64(b, host_base);
  Put64(b, size);
  return b;
}

Bytes EntryBytes(const dxpu_mgmt_device_entry& e) {
  Bytes b;
  Put16(b, e.device);
  Put16(b, e.box_bdf);
  Put16(b, e.host_bdf);
  b.push_back(e.state);
  b.push_back(0);
  Put64(b, e.owner);
  return b;
}

Bytes ReportBody(uint16_t host_count, const std::vector<dxpu_mgmt_device_entry>& entries) {
  Bytes b;
  Put16(b, static_cast<uint16_t>(entries.size()));
  Put16(b, host_count);
  Put32(b, 0);
  for (const auto& e : entries) {
    const Bytes entry = EntryBytes(e);
    b.insert(b.end(), entry.begin(), entry.end());
  }
  return b;
}

// An INVENTORY entry: the name's bytes as given (a test may break the rules), NUL-padded to 32.
struct InvEntry {
  uint16_t device, box_bdf, vendor, device_id;
  uint64_t memory;
  std::string name;
};

Bytes InventoryEntryBytes(const InvEntry& e) {
  Bytes b;
  Put16(b, e.device);
  Put16(b, e.box_bdf);
  Put16(b, e.vendor);
  Put16(b, e.device_id);
  Put64(b, e.memory);
  Bytes name(e.name.begin(), e.name.end());
  name.resize(32, 0);
  b.insert(b.end(), name.begin(), name.end());
  return b;
}

Bytes InventoryBody(uint64_t node, const std::vector<InvEntry>& entries) {
  Bytes b;
  Put64(b, node);
  Put16(b, static_cast<uint16_t>(entries.size()));
  Put16(b, 0);
  Put32(b, 0);
  for (const auto& e : entries) {
    const Bytes entry = InventoryEntryBytes(e);
    b.insert(b.end(), entry.begin(), entry.end());
  }
  return b;
}

Bytes WindowBytes(const dxpu_mgmt_dma_window& w) {
  Bytes b;
  Put64(b, w.device_base);
  Put64(b, w.host_base);
  Put64(b, w.size);
  return b;
}

// A DMA_LIST report's body; `count` overrides the window count field (a test may lie).
Bytes DmaListBody(uint16_t device, const std::vector<dxpu_mgmt_dma_window>& windows,
                  int count = -1) {
  Bytes b;
  Put16(b, device);
  Put16(b, static_cast<uint16_t>(count >= 0 ? count : static_cast<int>(windows.size())));
  Put32(b, 0);
  for (const auto& w : windows) {
    const Bytes one = WindowBytes(w);
    b.insert(b.end(), one.begin(), one.end());
  }
  return b;
}

// A whole message: the header with the body's length, then the body.
Bytes Message(uint8_t type, uint16_t flags, uint32_t request_id, uint16_t status,
              const Bytes& body) {
  return Join(Header(type, flags, request_id, static_cast<uint16_t>(body.size()), status), body);
}

// ---- helpers around the library ----

// Decodes from a heap buffer of exactly the datagram's size, so ASan catches any read past it.
// A STATUS report's entries point into that buffer, which lives until the next Decode.
dxpu_mgmt_err Decode(const Bytes& b, dxpu_mgmt_msg* m) {
  static std::unique_ptr<uint8_t[]> exact;
  exact = std::make_unique<uint8_t[]>(b.empty() ? 1 : b.size());
  std::copy(b.begin(), b.end(), exact.get());
  return dxpu_mgmt_decode(exact.get(), b.size(), m);
}

dxpu_mgmt_err Decode(const Bytes& b) {
  dxpu_mgmt_msg m{};
  return Decode(b, &m);
}

Bytes Encode(const dxpu_mgmt_msg& m) {
  Bytes buf(64);  // most messages; the largest only when needed
  size_t len = 0;
  dxpu_mgmt_err err = dxpu_mgmt_encode(&m, buf.data(), buf.size(), &len);
  if (err == DXPU_MGMT_ERR_NO_SPACE) {
    buf.resize(DXPU_MGMT_MAX_MSG);
    err = dxpu_mgmt_encode(&m, buf.data(), buf.size(), &len);
  }
  EXPECT_EQ(err, DXPU_MGMT_ERR_OK) << dxpu_mgmt_err_name(err);
  buf.resize(err == DXPU_MGMT_ERR_OK ? len : 0);
  return buf;
}

dxpu_mgmt_err EncodeErr(const dxpu_mgmt_msg& m, size_t cap = DXPU_MGMT_MAX_MSG) {
  Bytes buf(cap);
  size_t len = 0;
  return dxpu_mgmt_encode(&m, buf.data(), buf.size(), &len);
}

dxpu_mgmt_msg Request(uint8_t type, uint32_t request_id) {
  dxpu_mgmt_msg m{};
  m.type = type;
  m.request_id = request_id;
  return m;
}

dxpu_mgmt_msg Response(uint8_t type, uint32_t request_id, uint16_t status) {
  dxpu_mgmt_msg m{};
  m.type = type;
  m.flags = DXPU_MGMT_F_RESPONSE;
  m.request_id = request_id;
  m.status = status;
  return m;
}

dxpu_mgmt_device_entry Entry(uint16_t device, uint16_t box_bdf, uint16_t host_bdf, uint8_t state,
                             uint64_t owner) {
  dxpu_mgmt_device_entry e{};
  e.device = device;
  e.box_bdf = box_bdf;
  e.host_bdf = host_bdf;
  e.state = state;
  e.owner = owner;
  return e;
}

bool SameEntry(const dxpu_mgmt_device_entry& a, const dxpu_mgmt_device_entry& b) {
  return a.device == b.device && a.box_bdf == b.box_bdf && a.host_bdf == b.host_bdf &&
         a.state == b.state && a.owner == b.owner;
}

// The library's struct for an InvEntry; the name truncated to what the struct holds.
dxpu_mgmt_inventory_device ToStruct(const InvEntry& e) {
  dxpu_mgmt_inventory_device s{};
  s.device = e.device;
  s.box_bdf = e.box_bdf;
  s.vendor_id = e.vendor;
  s.device_id = e.device_id;
  s.memory_bytes = e.memory;
  e.name.copy(s.profile, sizeof(s.profile) - 1);
  return s;
}

// Entry i of a decoded inventory equals e (whose name must fit).
void ExpectInventoryEntry(const dxpu_mgmt_msg& m, size_t i, const InvEntry& e) {
  dxpu_mgmt_inventory_device got{};
  ASSERT_TRUE(dxpu_mgmt_inventory_entry(&m.body.inventory, i, &got)) << i;
  EXPECT_EQ(got.device, e.device) << i;
  EXPECT_EQ(got.box_bdf, e.box_bdf) << i;
  EXPECT_EQ(got.vendor_id, e.vendor) << i;
  EXPECT_EQ(got.device_id, e.device_id) << i;
  EXPECT_EQ(got.memory_bytes, e.memory) << i;
  EXPECT_EQ(std::string(got.profile), e.name) << i;
}

// dxpu_mgmt_encode_inventory into a buffer of the largest message; the bytes, or empty on error.
Bytes EncodeInventory(uint32_t id, uint64_t node, const std::vector<InvEntry>& entries,
                      dxpu_mgmt_err* err = nullptr) {
  std::vector<dxpu_mgmt_inventory_device> structs;
  structs.reserve(entries.size());
  for (const InvEntry& e : entries) structs.push_back(ToStruct(e));
  Bytes out(DXPU_MGMT_MAX_MSG + 64);
  size_t len = 0;
  const dxpu_mgmt_err e = dxpu_mgmt_encode_inventory(id, node, nullptr, structs.data(),
                                                     structs.size(), out.data(), out.size(), &len);
  if (err != nullptr) *err = e;
  out.resize(e == DXPU_MGMT_ERR_OK ? len : 0);
  return out;
}

// ---- golden bytes ----

// ASSIGN, laid out by hand from section 15:
//   +0  magic 44 58 4d 47 ("DXMG")
//   +4  version 01, type 01 (ASSIGN), flags 00 00 (request)
//   +8  request ID 0x0000002a
//   +12 body length 0x0010 (16), status 0x0000
//   +16 device 0x0003, host BDF 0x0100 (01:00.0), reserved 00 00 00 00
//   +24 host node ID 0x0123456789abcdef
const char* const kAssignHex =
    "44 58 4d 47  01 01 00 00  00 00 00 2a  00 10 00 00"
    "00 03 01 00  00 00 00 00  01 23 45 67  89 ab cd ef";

TEST(MgmtGolden, DecodesHandBuiltAssign) {
  const Bytes b = from_hex(kAssignHex);
  ASSERT_EQ(b.size(), 32u);
  dxpu_mgmt_msg m{};
  ASSERT_EQ(Decode(b, &m), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.type, DXPU_MGMT_ASSIGN);
  EXPECT_EQ(m.flags, 0);
  EXPECT_FALSE(dxpu_mgmt_is_response(&m));
  EXPECT_EQ(m.request_id, 42u);
  EXPECT_EQ(m.body_length, 16);
  EXPECT_EQ(m.status, 0);
  EXPECT_EQ(m.body.assign.device, 3);
  EXPECT_EQ(m.body.assign.host_bdf, 0x0100);
  EXPECT_EQ(m.body.assign.host_node_id, 0x0123456789abcdefULL);
}

TEST(MgmtGolden, EncoderProducesTheHandBuiltAssign) {
  dxpu_mgmt_msg m = Request(DXPU_MGMT_ASSIGN, 42);
  m.body.assign.device = 3;
  m.body.assign.host_bdf = 0x0100;
  m.body.assign.host_node_id = 0x0123456789abcdefULL;
  EXPECT_EQ(to_hex(Encode(m)), to_hex(from_hex(kAssignHex)));
}

// A STATUS response by hand: request ID 7, two devices, one host.
//   +0  "DXMG", version 01, type 05, flags 00 01 (RESPONSE)
//   +8  request ID 7, body length 0x0028 (8 + 2 * 16 = 40), status 0 (ok)
//   +16 device count 2, host count 1, reserved 0
//   +24 device 0, box BDF 01:00.0, host BDF 02:00.0, state 1 (assigned), rsvd, owner 0xb0b0
//   +40 device 1, box BDF 41:00.0, host BDF 0, state 0 (free), rsvd, owner 0
TEST(MgmtGolden, HandBuiltStatusReport) {
  const Bytes b = from_hex(
      "44 58 4d 47  01 05 00 01  00 00 00 07  00 28 00 00"
      "00 02 00 01  00 00 00 00"
      "00 00 01 00  02 00 01 00  00 00 00 00  00 00 b0 b0"
      "00 01 41 00  00 00 00 00  00 00 00 00  00 00 00 00");
  dxpu_mgmt_msg m{};
  ASSERT_EQ(Decode(b, &m), DXPU_MGMT_ERR_OK);
  EXPECT_TRUE(dxpu_mgmt_is_response(&m));
  EXPECT_EQ(m.type, DXPU_MGMT_STATUS);
  EXPECT_EQ(m.request_id, 7u);
  EXPECT_EQ(m.body.status_report.device_count, 2);
  EXPECT_EQ(m.body.status_report.host_count, 1);
  dxpu_mgmt_device_entry e{};
  ASSERT_TRUE(dxpu_mgmt_status_entry(&m.body.status_report, 0, &e));
  EXPECT_TRUE(SameEntry(e, Entry(0, 0x0100, 0x0200, DXPU_MGMT_DEV_ASSIGNED, 0xb0b0)));
  ASSERT_TRUE(dxpu_mgmt_status_entry(&m.body.status_report, 1, &e));
  EXPECT_TRUE(SameEntry(e, Entry(1, 0x4100, 0, DXPU_MGMT_DEV_FREE, 0)));
  EXPECT_FALSE(dxpu_mgmt_status_entry(&m.body.status_report, 2, &e));

  const std::vector<dxpu_mgmt_device_entry> entries = {
      Entry(0, 0x0100, 0x0200, DXPU_MGMT_DEV_ASSIGNED, 0xb0b0),
      Entry(1, 0x4100, 0, DXPU_MGMT_DEV_FREE, 0)};
  Bytes out(DXPU_MGMT_MAX_MSG);
  size_t len = 0;
  ASSERT_EQ(dxpu_mgmt_encode_status_report(7, 1, entries.data(), entries.size(), out.data(),
                                           out.size(), &len),
            DXPU_MGMT_ERR_OK);
  out.resize(len);
  EXPECT_EQ(to_hex(out), to_hex(b));
}

// An INVENTORY response by hand: request ID 9, bridge node 0xb0c5, two devices.
//   +0  "DXMG", version 01, type 06, flags 00 01 (RESPONSE)
//   +8  request ID 9, body length 0x0070 (16 + 2 * 48 = 112), status 0 (ok)
//   +16 node ID 0x000000000000b0c5, device count 2, reserved 00 00 00 00 00 00
//   +32 device 0, box BDF 01:00.0, vendor 0x1de5, device 0x0001, memory 0x40000000 (1 GiB),
//       "dxgpu" and 27 NULs
//   +80 device 1, box BDF 02:00.0, vendor 0x10de, device 0x20b0, memory 0xa00000000 (40 GiB),
//       "a100-40g" and 24 NULs
TEST(MgmtGolden, HandBuiltInventory) {
  const Bytes b = from_hex(
      "44 58 4d 47  01 06 00 01  00 00 00 09  00 70 00 00"
      "00 00 00 00  00 00 b0 c5  00 02 00 00  00 00 00 00"
      "00 00 01 00  1d e5 00 01  00 00 00 00  40 00 00 00"
      "64 78 67 70  75 00 00 00  00 00 00 00  00 00 00 00"
      "00 00 00 00  00 00 00 00  00 00 00 00  00 00 00 00"
      "00 01 02 00  10 de 20 b0  00 00 00 0a  00 00 00 00"
      "61 31 30 30  2d 34 30 67  00 00 00 00  00 00 00 00"
      "00 00 00 00  00 00 00 00  00 00 00 00  00 00 00 00");
  ASSERT_EQ(b.size(), 128u);
  dxpu_mgmt_msg m{};
  ASSERT_EQ(Decode(b, &m), DXPU_MGMT_ERR_OK);
  EXPECT_TRUE(dxpu_mgmt_is_response(&m));
  EXPECT_EQ(m.type, DXPU_MGMT_INVENTORY);
  EXPECT_EQ(m.request_id, 9u);
  EXPECT_EQ(m.body.inventory.node_id, 0xb0c5u);
  ASSERT_EQ(m.body.inventory.device_count, 2);
  const std::vector<InvEntry> entries = {
      {0, 0x0100, 0x1de5, 0x0001, uint64_t{1} << 30, "dxgpu"},
      {1, 0x0200, 0x10de, 0x20b0, uint64_t{40} << 30, "a100-40g"}};
  ExpectInventoryEntry(m, 0, entries[0]);
  ExpectInventoryEntry(m, 1, entries[1]);
  dxpu_mgmt_inventory_device e{};
  EXPECT_FALSE(dxpu_mgmt_inventory_entry(&m.body.inventory, 2, &e));

  EXPECT_EQ(to_hex(EncodeInventory(9, 0xb0c5, entries)), to_hex(b));
  EXPECT_EQ(to_hex(Encode(m)), to_hex(b));  // the generic encoder, from the decoded message
  EXPECT_EQ(
      b, Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 9, 0, InventoryBody(0xb0c5, entries)));
}

// ---- round trips ----

// Every request type, every empty OK response and error responses with every status: the
// encoder matches the reference writer, and decoding gives back every field.
TEST(MgmtRoundTrip, EveryType) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("DXPU_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    const auto id = static_cast<uint32_t>(rng());
    const auto device = static_cast<uint16_t>(rng());
    const auto bdf = static_cast<uint16_t>(rng());
    const uint64_t node = rng() | 1;
    const uint64_t a = rng(), h = rng(), size = rng() | 1;

    dxpu_mgmt_msg m = Request(DXPU_MGMT_ASSIGN, id);
    m.body.assign = {device, bdf, node};
    Bytes want = Message(DXPU_MGMT_ASSIGN, 0, id, 0, AssignBody(device, bdf, node));
    ASSERT_EQ(Encode(m), want);
    dxpu_mgmt_msg d{};
    ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
    EXPECT_EQ(d.request_id, id);
    EXPECT_EQ(d.body.assign.device, device);
    EXPECT_EQ(d.body.assign.host_bdf, bdf);
    EXPECT_EQ(d.body.assign.host_node_id, node);

    for (uint8_t type : {DXPU_MGMT_RELEASE, DXPU_MGMT_DMA_REVOKE_ALL}) {
      m = Request(type, id);
      m.body.release.device = device;
      want = Message(type, 0, id, 0, DeviceRefBody(device));
      ASSERT_EQ(Encode(m), want) << dxpu_mgmt_type_name(type);
      ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
      EXPECT_EQ(d.type, type);
      EXPECT_EQ(type == DXPU_MGMT_RELEASE ? d.body.release.device : d.body.dma_revoke_all.device,
                device);
    }

    m = Request(DXPU_MGMT_DMA_GRANT, id);
    m.body.dma_grant = {device, a, h, size};
    want = Message(DXPU_MGMT_DMA_GRANT, 0, id, 0, GrantBody(device, a, h, size));
    ASSERT_EQ(Encode(m), want);
    ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
    EXPECT_EQ(d.body.dma_grant.device, device);
    EXPECT_EQ(d.body.dma_grant.device_base, a);
    EXPECT_EQ(d.body.dma_grant.host_base, h);
    EXPECT_EQ(d.body.dma_grant.size, size);

    for (uint8_t type : {DXPU_MGMT_STATUS, DXPU_MGMT_INVENTORY}) {
      m = Request(type, id);
      want = Message(type, 0, id, 0, {});
      ASSERT_EQ(Encode(m), want) << dxpu_mgmt_type_name(type);
      ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
      EXPECT_EQ(d.type, type);
      EXPECT_EQ(d.body_length, 0);
    }

    for (uint8_t type = DXPU_MGMT_ASSIGN; type <= DXPU_MGMT_DMA_REVOKE_ALL; ++type) {
      want = Message(type, DXPU_MGMT_F_RESPONSE, id, 0, {});
      ASSERT_EQ(Encode(Response(type, id, DXPU_MGMT_OK)), want);
      ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
      EXPECT_TRUE(dxpu_mgmt_is_response(&d));
      EXPECT_EQ(d.type, type);
      EXPECT_EQ(d.status, DXPU_MGMT_OK);
    }
    for (uint8_t type = DXPU_MGMT_ASSIGN; type <= DXPU_MGMT_TYPE_MAX; ++type) {
      for (uint16_t st = 1; st < DXPU_MGMT_STATUS_COUNT; ++st) {
        want = Message(type, DXPU_MGMT_F_RESPONSE, id, st, {});
        ASSERT_EQ(Encode(Response(type, id, st)), want);
        ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
        EXPECT_EQ(d.status, st);
        EXPECT_EQ(d.request_id, id);
      }
    }
  }
}

TEST(MgmtRoundTrip, StatusReportFromDecodedEntriesReencodesIdentically) {
  const std::vector<dxpu_mgmt_device_entry> entries = {
      Entry(0, 0x0100, 0x0300, DXPU_MGMT_DEV_ASSIGNED, 0x1111),
      Entry(1, 0x0200, 0, DXPU_MGMT_DEV_SCRUBBING, 0x1111),
      Entry(2, 0x0300, 0, DXPU_MGMT_DEV_SCRUBBING, 0), Entry(3, 0x0400, 0, DXPU_MGMT_DEV_FREE, 0)};
  const Bytes want = Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 99, 0, ReportBody(3, entries));
  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
  // The decoded message points into `want`; the generic encoder copies its entries.
  EXPECT_EQ(Encode(d), want);
  for (size_t i = 0; i < entries.size(); ++i) {
    dxpu_mgmt_device_entry e{};
    ASSERT_TRUE(dxpu_mgmt_status_entry(&d.body.status_report, i, &e));
    EXPECT_TRUE(SameEntry(e, entries[i])) << i;
  }
  // The generic encoder with entries the caller wrote with dxpu_mgmt_status_entry_write.
  Bytes wire(entries.size() * DXPU_MGMT_STATUS_ENTRY_SIZE);
  for (size_t i = 0; i < entries.size(); ++i) {
    dxpu_mgmt_status_entry_write(&wire[i * DXPU_MGMT_STATUS_ENTRY_SIZE], &entries[i]);
  }
  dxpu_mgmt_msg m = Response(DXPU_MGMT_STATUS, 99, DXPU_MGMT_OK);
  m.body.status_report = {static_cast<uint16_t>(entries.size()), 3, wire.data()};
  EXPECT_EQ(Encode(m), want);
  // An empty report.
  m.body.status_report = {0, 0, nullptr};
  EXPECT_EQ(Encode(m), Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 99, 0, ReportBody(0, {})));
}

// The largest report fills a 65507-byte datagram exactly; one more device does not fit.
TEST(MgmtRoundTrip, StatusReportWithTheMostDevices) {
  static_assert(DXPU_MGMT_STATUS_MAX_DEVICES == 4092);
  std::vector<dxpu_mgmt_device_entry> entries;
  for (uint32_t i = 0; i < DXPU_MGMT_STATUS_MAX_DEVICES + 1; ++i) {
    const auto d = static_cast<uint16_t>(i);
    entries.push_back(
        i % 3 == 0   ? Entry(d, d, 0, DXPU_MGMT_DEV_FREE, 0)
        : i % 3 == 1 ? Entry(d, d, static_cast<uint16_t>(~d), DXPU_MGMT_DEV_ASSIGNED, 0x1000 + i)
                     : Entry(d, d, 0, DXPU_MGMT_DEV_SCRUBBING, i));
  }
  Bytes buf(DXPU_MGMT_MAX_MSG + 64);
  size_t len = 0;
  ASSERT_EQ(dxpu_mgmt_encode_status_report(5, 64, entries.data(), DXPU_MGMT_STATUS_MAX_DEVICES,
                                           buf.data(), buf.size(), &len),
            DXPU_MGMT_ERR_OK);
  ASSERT_EQ(len, 65496u);  // 16 + 8 + 4092 * 16; one more entry makes 65512 > 65507
  buf.resize(len);
  std::vector<dxpu_mgmt_device_entry> fit(entries.begin(),
                                          entries.begin() + DXPU_MGMT_STATUS_MAX_DEVICES);
  EXPECT_EQ(buf, Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 5, 0, ReportBody(64, fit)));
  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(buf, &d), DXPU_MGMT_ERR_OK);
  ASSERT_EQ(d.body.status_report.device_count, DXPU_MGMT_STATUS_MAX_DEVICES);
  EXPECT_EQ(d.body.status_report.host_count, 64);
  for (size_t i = 0; i < fit.size(); ++i) {
    dxpu_mgmt_device_entry e{};
    ASSERT_TRUE(dxpu_mgmt_status_entry(&d.body.status_report, i, &e));
    ASSERT_TRUE(SameEntry(e, fit[i])) << i;
  }

  // One device more: refused by both encoders, and by the decoder (65512 bytes).
  buf.assign(DXPU_MGMT_MAX_MSG + 64, 0);
  EXPECT_EQ(dxpu_mgmt_encode_status_report(5, 64, entries.data(), entries.size(), buf.data(),
                                           buf.size(), &len),
            DXPU_MGMT_ERR_TOO_LARGE);
  dxpu_mgmt_msg m = Response(DXPU_MGMT_STATUS, 5, DXPU_MGMT_OK);
  m.body.status_report = {static_cast<uint16_t>(entries.size()), 64, buf.data()};
  EXPECT_EQ(EncodeErr(m, buf.size()), DXPU_MGMT_ERR_TOO_LARGE);
  const Bytes over = Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 5, 0, ReportBody(64, entries));
  ASSERT_EQ(over.size(), 65512u);
  EXPECT_EQ(Decode(over), DXPU_MGMT_ERR_TOO_LARGE);
}

// Random inventories: the encoder matches the reference writer and decoding gives every field
// back; the generic encoder re-encodes the decoded message and entries the caller wrote with
// dxpu_mgmt_inventory_entry_write.
TEST(MgmtRoundTrip, Inventory) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("DXPU_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    const auto id = static_cast<uint32_t>(rng());
    const uint64_t node = rng();
    std::vector<InvEntry> entries;
    for (int i = 0, n = static_cast<int>(rng() % 9); i < n; ++i) {
      std::string name(1 + rng() % 31, ' ');
      for (char& c : name) c = static_cast<char>(0x20 + rng() % 95);
      entries.push_back({static_cast<uint16_t>(rng()), static_cast<uint16_t>(rng()),
                         static_cast<uint16_t>(rng()), static_cast<uint16_t>(rng()), rng(), name});
    }
    const Bytes want =
        Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, id, 0, InventoryBody(node, entries));
    ASSERT_EQ(EncodeInventory(id, node, entries), want);
    dxpu_mgmt_msg d{};
    ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
    EXPECT_EQ(d.request_id, id);
    EXPECT_EQ(d.body.inventory.node_id, node);
    ASSERT_EQ(d.body.inventory.device_count, entries.size());
    for (size_t i = 0; i < entries.size(); ++i) ExpectInventoryEntry(d, i, entries[i]);
    EXPECT_EQ(Encode(d), want);

    Bytes wire(entries.size() * DXPU_MGMT_INVENTORY_ENTRY_SIZE);
    for (size_t i = 0; i < entries.size(); ++i) {
      const dxpu_mgmt_inventory_device e = ToStruct(entries[i]);
      dxpu_mgmt_inventory_entry_write(&wire[i * DXPU_MGMT_INVENTORY_ENTRY_SIZE], &e);
    }
    dxpu_mgmt_msg m = Response(DXPU_MGMT_INVENTORY, id, DXPU_MGMT_OK);
    m.body.inventory = {node,
                        static_cast<uint16_t>(entries.size()),
                        entries.empty() ? nullptr : wire.data(),
                        false,
                        {}};
    EXPECT_EQ(Encode(m), want);
  }
}

// A name of 31 characters is sent whole; a longer one is cut to 31 (with its NUL, the field's
// 32 bytes), by both encoders and by the entry writer.
TEST(MgmtRoundTrip, InventoryProfileNameLimits) {
  const std::string n31 = "abcdefghijklmnopqrstuvwxyz-0123";
  const std::string n40 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789-xy";
  ASSERT_EQ(n31.size(), 31u);
  ASSERT_EQ(n40.size(), 40u);

  const std::vector<InvEntry> exact = {{0, 0x0100, 0x10de, 0x2330, uint64_t{80} << 30, n31}};
  const Bytes b31 = EncodeInventory(1, 0xa, exact);
  ASSERT_EQ(b31,
            Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, InventoryBody(0xa, exact)));
  EXPECT_EQ(b31.back(), 0);  // the NUL is the field's last byte
  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(b31, &d), DXPU_MGMT_ERR_OK);
  ExpectInventoryEntry(d, 0, exact[0]);

  // 40 characters in the struct's 32 bytes cannot be given; the struct holds 32 with no NUL,
  // or 31 and a NUL: both are sent as the first 31.
  dxpu_mgmt_inventory_device e = ToStruct(exact[0]);
  n40.copy(e.profile, sizeof(e.profile));  // all 32 bytes, no NUL
  Bytes out(DXPU_MGMT_MAX_MSG);
  size_t len = 0;
  ASSERT_EQ(dxpu_mgmt_encode_inventory(1, 0xa, nullptr, &e, 1, out.data(), out.size(), &len),
            DXPU_MGMT_ERR_OK);
  out.resize(len);
  const std::vector<InvEntry> cut = {
      {0, 0x0100, 0x10de, 0x2330, uint64_t{80} << 30, n40.substr(0, 31)}};
  EXPECT_EQ(out, Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, InventoryBody(0xa, cut)));
  ASSERT_EQ(Decode(out, &d), DXPU_MGMT_ERR_OK);
  ExpectInventoryEntry(d, 0, cut[0]);
  EXPECT_EQ(EncodeInventory(1, 0xa, {{0, 0x0100, 0x10de, 0x2330, uint64_t{80} << 30, n40}}), out);
  Bytes wire(DXPU_MGMT_INVENTORY_ENTRY_SIZE, 0xee);
  dxpu_mgmt_inventory_entry_write(wire.data(), &e);
  EXPECT_EQ(wire, InventoryEntryBytes(cut[0]));

  // On the wire a name has no room for more: 32 characters without a NUL (the 31-character
  // name with its NUL overwritten, or the first 32 of the 40) are refused.
  Bytes body = InventoryBody(0xa, exact);
  body.back() = 'x';
  EXPECT_EQ(Decode(Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
            DXPU_MGMT_ERR_BAD_ENTRY);
  const std::vector<InvEntry> no_nul = {{0, 1, 2, 3, 4, "dxgpu"}, {1, 1, 2, 3, 4, n40}};
  body = InventoryBody(0xa, no_nul);  // the reference writer keeps 32 bytes of the 40
  EXPECT_EQ(Decode(Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
            DXPU_MGMT_ERR_BAD_ENTRY);
}

// The largest inventory fits a datagram; one more device does not.
TEST(MgmtRoundTrip, InventoryWithTheMostDevices) {
  static_assert(DXPU_MGMT_INVENTORY_MAX_DEVICES == 1363);
  std::vector<InvEntry> entries;
  for (uint32_t i = 0; i < DXPU_MGMT_INVENTORY_MAX_DEVICES + 1; ++i) {
    const auto d = static_cast<uint16_t>(i);
    entries.push_back(
        {d, d, 0x10de, static_cast<uint16_t>(~d), uint64_t{i} << 20, "gpu-" + std::to_string(i)});
  }
  const std::vector<InvEntry> fit(entries.begin(),
                                  entries.begin() + DXPU_MGMT_INVENTORY_MAX_DEVICES);
  const Bytes b = EncodeInventory(3, 0xb0, fit);
  ASSERT_EQ(b.size(), 65456u);  // 16 + 16 + 1363 * 48; with a key 32 more: 65488
  EXPECT_EQ(b, Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 3, 0, InventoryBody(0xb0, fit)));
  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(b, &d), DXPU_MGMT_ERR_OK);
  ASSERT_EQ(d.body.inventory.device_count, DXPU_MGMT_INVENTORY_MAX_DEVICES);
  for (size_t i = 0; i < fit.size(); i += 97) ExpectInventoryEntry(d, i, fit[i]);
  ExpectInventoryEntry(d, fit.size() - 1, fit.back());

  dxpu_mgmt_err err = DXPU_MGMT_ERR_OK;
  EXPECT_TRUE(EncodeInventory(3, 0xb0, entries, &err).empty());
  EXPECT_EQ(err, DXPU_MGMT_ERR_TOO_LARGE);
  Bytes wire(entries.size() * DXPU_MGMT_INVENTORY_ENTRY_SIZE);
  dxpu_mgmt_msg m = Response(DXPU_MGMT_INVENTORY, 3, DXPU_MGMT_OK);
  m.body.inventory = {0xb0, static_cast<uint16_t>(entries.size()), wire.data(), false, {}};
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_TOO_LARGE);
  const Bytes over =
      Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 3, 0, InventoryBody(0xb0, entries));
  ASSERT_EQ(over.size(), 65504u);  // fits a datagram without a key, but is more than the most
  EXPECT_EQ(Decode(over), DXPU_MGMT_ERR_OK);
}

// The bridge's fabric public key rides in an INVENTORY between the fixed part and the entries,
// flagged; a flag this version does not define is reserved; the most devices fit with a key.
TEST(MgmtRoundTrip, InventoryWithTheBridgesFabricKey) {
  std::array<uint8_t, DXPU_MGMT_FABRIC_KEY_SIZE> key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(0xa0 + i);
  const std::vector<InvEntry> entries = {{0, 0x100, 0x10de, 0x2330, 1ull << 34, "h100"},
                                         {1, 0x200, 0x10de, 0x2330, 1ull << 34, "h100"}};
  std::vector<dxpu_mgmt_inventory_device> structs;
  for (const InvEntry& e : entries) structs.push_back(ToStruct(e));
  Bytes out(DXPU_MGMT_MAX_MSG);
  size_t len = 0;
  ASSERT_EQ(dxpu_mgmt_encode_inventory(9, 0xb0, key.data(), structs.data(), structs.size(),
                                       out.data(), out.size(), &len),
            DXPU_MGMT_ERR_OK);
  out.resize(len);
  Bytes body;
  Put64(body, 0xb0);
  Put16(body, 2);
  Put16(body, DXPU_MGMT_INVENTORY_F_FABRIC_KEY);
  Put32(body, 0);
  body.insert(body.end(), key.begin(), key.end());
  for (const InvEntry& e : entries) {
    const Bytes one = InventoryEntryBytes(e);
    body.insert(body.end(), one.begin(), one.end());
  }
  const Bytes want = Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 9, 0, body);
  ASSERT_EQ(out, want);
  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
  EXPECT_TRUE(d.body.inventory.has_fabric_key);
  EXPECT_TRUE(std::equal(key.begin(), key.end(), d.body.inventory.fabric_key));
  ExpectInventoryEntry(d, 0, entries[0]);
  ExpectInventoryEntry(d, 1, entries[1]);
  // Re-encoded from the decoded message: the same bytes.
  d.flags = DXPU_MGMT_F_RESPONSE;
  EXPECT_EQ(Encode(d), want);
  // Without the flag, the same bytes are 32 too many for two entries.
  Bytes unflagged = want;
  unflagged[DXPU_MGMT_HDR_SIZE + 11] = 0;
  EXPECT_EQ(Decode(unflagged), DXPU_MGMT_ERR_BODY_SIZE);
  Bytes other_flag = want;
  other_flag[DXPU_MGMT_HDR_SIZE + 11] = 0x03;
  EXPECT_EQ(Decode(other_flag), DXPU_MGMT_ERR_RESERVED);
  // Without a key: no flag, no key bytes.
  ASSERT_EQ(Decode(EncodeInventory(9, 0xb0, entries), &d), DXPU_MGMT_ERR_OK);
  EXPECT_FALSE(d.body.inventory.has_fabric_key);
  // The most devices still fit a datagram with the key.
  std::vector<dxpu_mgmt_inventory_device> most(DXPU_MGMT_INVENTORY_MAX_DEVICES, structs[0]);
  out.assign(DXPU_MGMT_MAX_MSG, 0);
  ASSERT_EQ(dxpu_mgmt_encode_inventory(9, 0xb0, key.data(), most.data(), most.size(), out.data(),
                                       out.size(), &len),
            DXPU_MGMT_ERR_OK);
  EXPECT_EQ(len, 65488u);
}

// HOST_KEY_SET: node ID then key; HOST_KEY_REMOVE: node ID. Node 0 and the zero key are bad
// arguments; both change state (signed).
TEST(MgmtHostKey, ByHandAndBack) {
  std::array<uint8_t, DXPU_MGMT_FABRIC_KEY_SIZE> key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i + 1);
  Bytes body;
  Put64(body, 0x0123456789abcdefull);
  body.insert(body.end(), key.begin(), key.end());
  const Bytes set = Message(DXPU_MGMT_HOST_KEY_SET, 0, 5, 0, body);
  dxpu_mgmt_msg m = Request(DXPU_MGMT_HOST_KEY_SET, 5);
  m.body.host_key.node_id = 0x0123456789abcdefull;
  std::copy(key.begin(), key.end(), m.body.host_key.public_key);
  ASSERT_EQ(Encode(m), set);
  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(set, &d), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(d.body.host_key.node_id, 0x0123456789abcdefull);
  EXPECT_TRUE(std::equal(key.begin(), key.end(), d.body.host_key.public_key));
  EXPECT_EQ(dxpu_mgmt_check_args(&d), DXPU_MGMT_OK);
  Bytes short_body(body.begin(), body.end() - 1);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_HOST_KEY_SET, 0, 5, 0, short_body)), DXPU_MGMT_ERR_BODY_SIZE);

  Bytes remove_body;
  Put64(remove_body, 0x77);
  const Bytes remove = Message(DXPU_MGMT_HOST_KEY_REMOVE, 0, 6, 0, remove_body);
  m = Request(DXPU_MGMT_HOST_KEY_REMOVE, 6);
  m.body.host_key.node_id = 0x77;
  ASSERT_EQ(Encode(m), remove);
  ASSERT_EQ(Decode(remove, &d), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(d.body.host_key.node_id, 0x77u);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_HOST_KEY_REMOVE, 0, 6, 0, body)), DXPU_MGMT_ERR_BODY_SIZE);

  m = Request(DXPU_MGMT_HOST_KEY_SET, 1);
  std::copy(key.begin(), key.end(), m.body.host_key.public_key);
  EXPECT_EQ(dxpu_mgmt_check_args(&m), DXPU_MGMT_BAD_ARGUMENT);  // node 0
  m.body.host_key.node_id = 2;
  std::fill(std::begin(m.body.host_key.public_key), std::end(m.body.host_key.public_key), 0);
  EXPECT_EQ(dxpu_mgmt_check_args(&m), DXPU_MGMT_BAD_ARGUMENT);  // the zero key
  m = Request(DXPU_MGMT_HOST_KEY_REMOVE, 1);
  EXPECT_EQ(dxpu_mgmt_check_args(&m), DXPU_MGMT_BAD_ARGUMENT);  // node 0
  EXPECT_TRUE(dxpu_mgmt_changes_state(DXPU_MGMT_HOST_KEY_SET));
  EXPECT_TRUE(dxpu_mgmt_changes_state(DXPU_MGMT_HOST_KEY_REMOVE));
}

// ---- every decode error, from hand-built bytes ----

TEST(MgmtDecode, ShortAndBadMagic) {
  const Bytes good = from_hex(kAssignHex);
  for (size_t n = 0; n < 16; ++n) {
    dxpu_mgmt_msg m{};
    m.request_id = 1234;
    EXPECT_EQ(Decode(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)), &m),
              DXPU_MGMT_ERR_SHORT)
        << n;
    EXPECT_EQ(m.request_id, 0u);  // cleared: nothing to answer
  }
  for (size_t at = 0; at < 4; ++at) {
    Bytes b = good;
    b[at] ^= 0x20;  // "dXMG", "DxMG", ...
    EXPECT_EQ(Decode(b), DXPU_MGMT_ERR_BAD_MAGIC) << at;
  }
  // The DxFP header of a HELLO frame is not a management message.
  EXPECT_EQ(Decode(from_hex("01 01 00 00  00 24 00 01  00 00 00 00  00 00 00 01")),
            DXPU_MGMT_ERR_BAD_MAGIC);
}

TEST(MgmtDecode, BadVersionStillReportsTheHeader) {
  for (uint8_t version : {0, 2, 0xff}) {
    // A version-2 ASSIGN whose body this end cannot know: length mismatch is not checked.
    Bytes b = from_hex("44 58 4d 47  00 01 00 00  00 00 01 00  00 40 00 00");
    b[4] = version;
    dxpu_mgmt_msg m{};
    ASSERT_EQ(Decode(b, &m), DXPU_MGMT_ERR_BAD_VERSION) << int(version);
    EXPECT_EQ(m.version, version);
    EXPECT_EQ(m.type, DXPU_MGMT_ASSIGN);
    EXPECT_EQ(m.request_id, 0x100u);
    EXPECT_EQ(m.body_length, 0x40);
    enum dxpu_mgmt_status st = DXPU_MGMT_OK;
    EXPECT_TRUE(dxpu_mgmt_error_reply(DXPU_MGMT_ERR_BAD_VERSION, &m, &st));
    EXPECT_EQ(st, DXPU_MGMT_UNSUPPORTED_VERSION);
  }
}

TEST(MgmtDecode, ReservedFlags) {
  // SIGNED belongs to requests: a response with it is refused.
  EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_SIGNED | DXPU_MGMT_F_RESPONSE, 1, 0,
                           ReportBody(0, {}))),
            DXPU_MGMT_ERR_RESERVED);
  for (uint16_t flag = 0x0004; flag != 0; flag = static_cast<uint16_t>(flag << 1)) {
    EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, flag, 1, 0, {})), DXPU_MGMT_ERR_RESERVED) << flag;
    EXPECT_EQ(
        Decode(Message(DXPU_MGMT_STATUS, flag | DXPU_MGMT_F_RESPONSE, 1, 0, ReportBody(0, {}))),
        DXPU_MGMT_ERR_RESERVED)
        << flag;
  }
}

TEST(MgmtDecode, StatusFieldRules) {
  // A request carries status 0.
  EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, 0, 1, 1, {})), DXPU_MGMT_ERR_REQUEST_STATUS);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_RELEASE, 0, 1, 0x8000, DeviceRefBody(1))),
            DXPU_MGMT_ERR_REQUEST_STATUS);
  // A response carries a status this version defines.
  for (uint16_t st :
       {static_cast<uint16_t>(DXPU_MGMT_STATUS_COUNT), uint16_t{0x100}, uint16_t{0xffff}}) {
    EXPECT_EQ(Decode(Message(DXPU_MGMT_ASSIGN, DXPU_MGMT_F_RESPONSE, 1, st, {})),
              DXPU_MGMT_ERR_BAD_STATUS)
        << st;
  }
}

TEST(MgmtDecode, UnknownType) {
  for (uint8_t type : {0, 16, 0x7f, 0xff}) {
    dxpu_mgmt_msg m{};
    ASSERT_EQ(Decode(Message(type, 0, 77, 0, {}), &m), DXPU_MGMT_ERR_UNKNOWN_TYPE) << int(type);
    EXPECT_EQ(m.type, type);
    EXPECT_EQ(m.request_id, 77u);
    enum dxpu_mgmt_status st = DXPU_MGMT_OK;
    EXPECT_TRUE(dxpu_mgmt_error_reply(DXPU_MGMT_ERR_UNKNOWN_TYPE, &m, &st));
    EXPECT_EQ(st, DXPU_MGMT_UNKNOWN_TYPE);
    // Also with a body: the type is judged before the length.
    EXPECT_EQ(Decode(Message(type, 0, 77, 0, Bytes(24, 0xee))), DXPU_MGMT_ERR_UNKNOWN_TYPE);
    // An OK response of an unknown type is refused too...
    EXPECT_EQ(Decode(Message(type, DXPU_MGMT_F_RESPONSE, 77, 0, {})), DXPU_MGMT_ERR_UNKNOWN_TYPE);
    // ...but the error response a server sends back echoes it and decodes.
    ASSERT_EQ(Decode(Message(type, DXPU_MGMT_F_RESPONSE, 77, DXPU_MGMT_UNKNOWN_TYPE, {}), &m),
              DXPU_MGMT_ERR_OK);
    EXPECT_EQ(m.type, type);
    EXPECT_EQ(m.status, DXPU_MGMT_UNKNOWN_TYPE);
  }
}

TEST(MgmtDecode, TooLarge) {
  // 65508 bytes: one more than the largest message; checked before the length field.
  Bytes b = Header(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0xffff, 0);
  b.resize(DXPU_MGMT_MAX_MSG + 1);
  EXPECT_EQ(Decode(b), DXPU_MGMT_ERR_TOO_LARGE);
}

TEST(MgmtDecode, LengthMismatch) {
  const Bytes good = from_hex(kAssignHex);
  Bytes b = good;
  b.push_back(0);  // a byte after the body
  EXPECT_EQ(Decode(b), DXPU_MGMT_ERR_LENGTH_MISMATCH);
  b = good;
  b.pop_back();  // a byte short
  EXPECT_EQ(Decode(b), DXPU_MGMT_ERR_LENGTH_MISMATCH);
  b = good;
  b[13] = 0x0f;  // Body length 15 with 16 bytes after the header
  EXPECT_EQ(Decode(b), DXPU_MGMT_ERR_LENGTH_MISMATCH);
  b[12] = 0xff;  // Body length far beyond the datagram
  b[13] = 0xff;
  EXPECT_EQ(Decode(b), DXPU_MGMT_ERR_LENGTH_MISMATCH);
}

TEST(MgmtDecode, BodySizeWrongForTheType) {
  struct Case {
    Bytes msg;
    const char* what;
  };
  const Case cases[] = {
      {Message(DXPU_MGMT_ASSIGN, 0, 1, 0, Bytes(8, 0)), "ASSIGN with 8 bytes"},
      {Message(DXPU_MGMT_ASSIGN, 0, 1, 0, Bytes(20, 0)), "ASSIGN with 20 bytes"},
      {Message(DXPU_MGMT_RELEASE, 0, 1, 0, Bytes(16, 0)), "RELEASE with 16 bytes"},
      {Message(DXPU_MGMT_RELEASE, 0, 1, 0, {}), "RELEASE without a body"},
      {Message(DXPU_MGMT_DMA_GRANT, 0, 1, 0, Bytes(24, 0)), "DMA_GRANT with 24 bytes"},
      {Message(DXPU_MGMT_DMA_REVOKE_ALL, 0, 1, 0, Bytes(4, 0)), "DMA_REVOKE_ALL with 4 bytes"},
      {Message(DXPU_MGMT_STATUS, 0, 1, 0, Bytes(8, 0)), "STATUS request with a body"},
      {Message(DXPU_MGMT_ASSIGN, DXPU_MGMT_F_RESPONSE, 1, 0, Bytes(16, 0)),
       "ASSIGN response with a body"},
      {Message(DXPU_MGMT_RELEASE, DXPU_MGMT_F_RESPONSE, 1, DXPU_MGMT_DEVICE_BUSY, Bytes(4, 0)),
       "error response with a body"},
      {Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 1, DXPU_MGMT_INTERNAL, ReportBody(0, {})),
       "STATUS error response with a report"},
      {Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, {}), "STATUS report without a body"},
      {Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, Bytes(7, 0)),
       "STATUS report shorter than its fixed part"},
      {Message(DXPU_MGMT_INVENTORY, 0, 1, 0, Bytes(8, 0)), "INVENTORY request with a body"},
      {Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, {}), "INVENTORY without a body"},
      {Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, Bytes(15, 0)),
       "INVENTORY shorter than its fixed part"},
      {Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, DXPU_MGMT_INTERNAL,
               InventoryBody(1, {})),
       "INVENTORY error response with an inventory"},
  };
  for (const Case& c : cases) EXPECT_EQ(Decode(c.msg), DXPU_MGMT_ERR_BODY_SIZE) << c.what;

  // A device count that disagrees with the entries.
  const std::vector<dxpu_mgmt_device_entry> two = {Entry(0, 1, 0, DXPU_MGMT_DEV_FREE, 0),
                                                   Entry(1, 2, 0, DXPU_MGMT_DEV_FREE, 0)};
  Bytes body = ReportBody(1, two);
  body[1] = 3;
  EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
            DXPU_MGMT_ERR_BODY_SIZE);
  body[1] = 1;
  EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
            DXPU_MGMT_ERR_BODY_SIZE);
  body = ReportBody(1, two);
  body.pop_back();  // a partial entry
  EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
            DXPU_MGMT_ERR_BODY_SIZE);

  // An INVENTORY whose device count is not its entries': every size but 16 + 2 * 48.
  const std::vector<InvEntry> inv = {{0, 0x0100, 0x10de, 0x2330, 1 << 20, "h100-80g"},
                                     {1, 0x0200, 0x10de, 0x20b0, 1 << 20, "a100-40g"}};
  const Bytes good = InventoryBody(0xb0, inv);
  ASSERT_EQ(good.size(), 112u);
  ASSERT_EQ(Decode(Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, good)),
            DXPU_MGMT_ERR_OK);
  for (size_t n = 0; n < good.size() + 60; ++n) {
    if (n == good.size()) continue;
    Bytes cut = good;
    cut.resize(n, 0);  // truncated, or with bytes after the last entry
    EXPECT_EQ(Decode(Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, cut)),
              DXPU_MGMT_ERR_BODY_SIZE)
        << n;
  }
  for (uint16_t count : {0, 1, 3, 0xffff}) {
    body = good;
    body[8] = static_cast<uint8_t>(count >> 8);
    body[9] = static_cast<uint8_t>(count);
    EXPECT_EQ(Decode(Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
              DXPU_MGMT_ERR_BODY_SIZE)
        << count;
  }
}

TEST(MgmtDecode, ReservedBodyFields) {
  struct Case {
    uint8_t type;
    Bytes body;
    size_t first, last;  // the reserved bytes of the body
  };
  const Case cases[] = {
      {DXPU_MGMT_ASSIGN, AssignBody(1, 0x100, 5), 4, 7},
      {DXPU_MGMT_RELEASE, DeviceRefBody(1), 2, 7},
      {DXPU_MGMT_DMA_GRANT, GrantBody(1, 0x1000, 0x2000, 0x1000), 2, 7},
      {DXPU_MGMT_DMA_REVOKE_ALL, DeviceRefBody(1), 2, 7},
  };
  for (const Case& c : cases) {
    ASSERT_EQ(Decode(Message(c.type, 0, 1, 0, c.body)), DXPU_MGMT_ERR_OK);
    for (size_t at = c.first; at <= c.last; ++at) {
      Bytes body = c.body;
      body[at] = 0x01;
      EXPECT_EQ(Decode(Message(c.type, 0, 1, 0, body)), DXPU_MGMT_ERR_RESERVED)
          << dxpu_mgmt_type_name(c.type) << " byte " << at;
    }
  }
  const std::vector<dxpu_mgmt_device_entry> one = {Entry(0, 1, 0, DXPU_MGMT_DEV_FREE, 0)};
  for (size_t at : {4, 5, 6, 7, 8 + 7}) {  // the report's reserved u32, the entry's reserved u8
    Bytes body = ReportBody(1, one);
    body[at] = 0x80;
    EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
              DXPU_MGMT_ERR_RESERVED)
        << at;
  }
  // The inventory's reserved u16 and u32, and the padding after an entry's name.
  const std::vector<InvEntry> inv = {{0, 1, 2, 3, 4, "dxgpu"}};
  for (size_t at : {10, 11, 12, 13, 14, 15, 16 + 16 + 5 + 1, 16 + 47}) {
    Bytes body = InventoryBody(0xb0, inv);
    body[at] = 'x';
    EXPECT_EQ(Decode(Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
              DXPU_MGMT_ERR_RESERVED)
        << at;
  }
}

// A profile name is 1..31 printable ASCII characters and a NUL; refused on the wire and by the
// encoder otherwise.
TEST(MgmtDecode, BadInventoryNames) {
  const std::string bad[] = {"", std::string("gp\x01u"), "tab\there", "caf\xc3\xa9",
                             std::string("del\x7f")};
  for (const std::string& name : bad) {
    const std::vector<InvEntry> entries = {{0, 1, 2, 3, 4, "dxgpu"}, {1, 2, 2, 3, 4, name}};
    EXPECT_EQ(Decode(Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, 1, 0,
                             InventoryBody(0xb0, entries))),
              DXPU_MGMT_ERR_BAD_ENTRY)
        << to_hex(Bytes(name.begin(), name.end()));
    dxpu_mgmt_err err = DXPU_MGMT_ERR_OK;
    EXPECT_TRUE(EncodeInventory(1, 0xb0, entries, &err).empty());
    EXPECT_EQ(err, DXPU_MGMT_ERR_BAD_ENTRY);
    // The generic encoder refuses the same entries (written without a check).
    Bytes wire;
    for (const InvEntry& e : entries) {
      const Bytes one = InventoryEntryBytes(e);
      wire.insert(wire.end(), one.begin(), one.end());
    }
    dxpu_mgmt_msg m = Response(DXPU_MGMT_INVENTORY, 1, DXPU_MGMT_OK);
    m.body.inventory = {0xb0, 2, wire.data(), false, {}};
    EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_BAD_ENTRY);
  }
  // The generic encoder: entries missing, or padding not zero.
  dxpu_mgmt_msg m = Response(DXPU_MGMT_INVENTORY, 1, DXPU_MGMT_OK);
  m.body.inventory = {0xb0, 1, nullptr, false, {}};
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_BAD_ENTRY);
  Bytes wire = InventoryEntryBytes({0, 1, 2, 3, 4, "dxgpu"});
  wire[16 + 20] = 1;
  m.body.inventory.entries = wire.data();
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_RESERVED);
}

TEST(MgmtDecode, BadStatusEntries) {
  const std::vector<dxpu_mgmt_device_entry> bad = {
      Entry(0, 1, 0, 3, 0),                           // no such state
      Entry(0, 1, 0, 0xff, 5),                        // no such state
      Entry(0, 1, 0, DXPU_MGMT_DEV_FREE, 9),          // free with an owner
      Entry(0, 1, 0x200, DXPU_MGMT_DEV_ASSIGNED, 0),  // assigned to nobody
  };
  for (const auto& e : bad) {
    // The bad entry second, after a good one.
    const std::vector<dxpu_mgmt_device_entry> entries = {Entry(1, 2, 0, DXPU_MGMT_DEV_SCRUBBING, 0),
                                                         e};
    EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, ReportBody(1, entries))),
              DXPU_MGMT_ERR_BAD_ENTRY)
        << int(e.state) << " " << e.owner;
    Bytes buf(256);
    size_t len = 0;
    EXPECT_EQ(dxpu_mgmt_encode_status_report(1, 1, entries.data(), entries.size(), buf.data(),
                                             buf.size(), &len),
              DXPU_MGMT_ERR_BAD_ENTRY);
    EXPECT_EQ(len, 0u);
  }
}

// The order of the checks, where a datagram breaks several rules (section 15.4).
TEST(MgmtDecode, ChecksComeInTheDocumentedOrder) {
  // Bad version beats everything after it: reserved flags, status, type, length.
  Bytes b = Message(0x99, 0x8000, 1, 5, Bytes(3, 0));
  b[4] = 2;
  EXPECT_EQ(Decode(b), DXPU_MGMT_ERR_BAD_VERSION);
  // Reserved flags before the status and the type.
  EXPECT_EQ(Decode(Message(0x99, 0x8000, 1, 5, {})), DXPU_MGMT_ERR_RESERVED);
  // A request's status before its type.
  EXPECT_EQ(Decode(Message(0x99, 0, 1, 5, {})), DXPU_MGMT_ERR_REQUEST_STATUS);
  // Type before length.
  Bytes t = Message(0x99, 0, 1, 0, {});
  t.push_back(1);
  EXPECT_EQ(Decode(t), DXPU_MGMT_ERR_UNKNOWN_TYPE);
  // Body size before reserved body fields.
  Bytes body = AssignBody(1, 2, 3);
  body[5] = 1;
  body.push_back(0);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_ASSIGN, 0, 1, 0, body)), DXPU_MGMT_ERR_BODY_SIZE);
}

// ---- encoder errors ----

TEST(MgmtEncode, RefusesWhatTheDecoderRefuses) {
  dxpu_mgmt_msg m = Request(DXPU_MGMT_STATUS, 1);
  m.flags = 0x0004;
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_RESERVED);
  m.flags = DXPU_MGMT_F_SIGNED | DXPU_MGMT_F_RESPONSE;  // only requests are signed
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_RESERVED);
  m = Request(DXPU_MGMT_STATUS, 1);
  m.status = DXPU_MGMT_INTERNAL;
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_REQUEST_STATUS);
  EXPECT_EQ(EncodeErr(Response(DXPU_MGMT_STATUS, 1, DXPU_MGMT_STATUS_COUNT)),
            DXPU_MGMT_ERR_BAD_STATUS);
  EXPECT_EQ(EncodeErr(Request(0, 1)), DXPU_MGMT_ERR_UNKNOWN_TYPE);
  EXPECT_EQ(EncodeErr(Request(16, 1)), DXPU_MGMT_ERR_UNKNOWN_TYPE);
  EXPECT_EQ(EncodeErr(Response(16, 1, DXPU_MGMT_OK)), DXPU_MGMT_ERR_UNKNOWN_TYPE);
  // The answer to an unknown type echoes it.
  EXPECT_EQ(Encode(Response(16, 1, DXPU_MGMT_UNKNOWN_TYPE)),
            Message(16, DXPU_MGMT_F_RESPONSE, 1, DXPU_MGMT_UNKNOWN_TYPE, {}));

  // A report whose entries break the rules.
  Bytes wire(DXPU_MGMT_STATUS_ENTRY_SIZE);
  const dxpu_mgmt_device_entry e = Entry(0, 1, 0, DXPU_MGMT_DEV_ASSIGNED, 0);
  dxpu_mgmt_status_entry_write(wire.data(), &e);
  m = Response(DXPU_MGMT_STATUS, 1, DXPU_MGMT_OK);
  m.body.status_report = {1, 0, wire.data()};
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_BAD_ENTRY);
  m.body.status_report.entries = nullptr;
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_BAD_ENTRY);
  const dxpu_mgmt_device_entry ok = Entry(0, 1, 0, DXPU_MGMT_DEV_FREE, 0);
  dxpu_mgmt_status_entry_write(wire.data(), &ok);
  wire[7] = 1;  // the entry's reserved byte
  m.body.status_report.entries = wire.data();
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_RESERVED);
}

TEST(MgmtEncode, NoSpaceWritesNothing) {
  dxpu_mgmt_msg m = Request(DXPU_MGMT_DMA_GRANT, 1);
  m.body.dma_grant = {1, 0x1000, 0x2000, 0x3000};
  EXPECT_EQ(EncodeErr(m, 47), DXPU_MGMT_ERR_NO_SPACE);
  EXPECT_EQ(EncodeErr(m, 48), DXPU_MGMT_ERR_OK);
  Bytes buf(31, 0xaa);
  size_t len = 99;
  m = Request(DXPU_MGMT_ASSIGN, 1);
  m.body.assign = {1, 2, 3};
  EXPECT_EQ(dxpu_mgmt_encode(&m, buf.data(), buf.size(), &len), DXPU_MGMT_ERR_NO_SPACE);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(buf, Bytes(31, 0xaa));
  const std::vector<dxpu_mgmt_device_entry> one = {Entry(0, 1, 0, DXPU_MGMT_DEV_FREE, 0)};
  EXPECT_EQ(dxpu_mgmt_encode_status_report(1, 0, one.data(), 1, buf.data(), 39, &len),
            DXPU_MGMT_ERR_NO_SPACE);
  Bytes big(40);
  EXPECT_EQ(dxpu_mgmt_encode_status_report(1, 0, one.data(), 1, big.data(), 40, &len),
            DXPU_MGMT_ERR_OK);
  EXPECT_EQ(len, 40u);
  const dxpu_mgmt_inventory_device inv = ToStruct({0, 1, 2, 3, 4, "dxgpu"});
  Bytes inv_buf(80, 0xaa);
  len = 99;
  EXPECT_EQ(dxpu_mgmt_encode_inventory(1, 2, nullptr, &inv, 1, inv_buf.data(), 79, &len),
            DXPU_MGMT_ERR_NO_SPACE);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(inv_buf, Bytes(80, 0xaa));
  EXPECT_EQ(dxpu_mgmt_encode_inventory(1, 2, nullptr, &inv, 1, inv_buf.data(), 80, &len),
            DXPU_MGMT_ERR_OK);
  EXPECT_EQ(len, 80u);
}

// ---- the authentication record (docs/protocol.md 15.8) ----

// A signed request: the body, then epoch, sequence, key ID and a signature the caller writes;
// the decoder reports them and where the signature lies, Body length counting the body alone.
TEST(MgmtSigned, TheRecordFollowsTheBodyAndRoundTrips) {
  dxpu_mgmt_msg m = Request(DXPU_MGMT_DMA_GRANT, 0x51);
  m.flags = DXPU_MGMT_F_SIGNED;
  m.body.dma_grant = {3, 0x1000, 0x2000, 0x3000};
  m.auth.epoch = 0x0102030405060708ull;
  m.auth.sequence = 0x1112131415161718ull;
  for (size_t i = 0; i < DXPU_MGMT_KEY_ID_SIZE; ++i)
    m.auth.key_id[i] = static_cast<uint8_t>(0xa0 + i);
  Bytes b = Encode(m);
  ASSERT_EQ(b.size(), DXPU_MGMT_HDR_SIZE + DXPU_MGMT_DMA_GRANT_SIZE + DXPU_MGMT_AUTH_SIZE);
  EXPECT_EQ(b[12] << 8 | b[13], static_cast<int>(DXPU_MGMT_DMA_GRANT_SIZE));  // the body alone
  const size_t rec = DXPU_MGMT_HDR_SIZE + DXPU_MGMT_DMA_GRANT_SIZE;
  EXPECT_EQ(b[rec], 0x01);
  EXPECT_EQ(b[rec + 8], 0x11);
  EXPECT_EQ(b[rec + 16], 0xa0);
  for (size_t i = rec + 24; i < b.size(); ++i)
    EXPECT_EQ(b[i], 0) << "the signature is the caller's";
  for (size_t i = rec + 24; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i);

  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(b, &d), DXPU_MGMT_ERR_OK);
  EXPECT_TRUE(dxpu_mgmt_is_signed(&d));
  EXPECT_EQ(d.body.dma_grant.host_base, 0x2000u);
  EXPECT_EQ(d.auth.epoch, m.auth.epoch);
  EXPECT_EQ(d.auth.sequence, m.auth.sequence);
  EXPECT_TRUE(std::equal(d.auth.key_id, d.auth.key_id + DXPU_MGMT_KEY_ID_SIZE, m.auth.key_id));
  ASSERT_NE(d.auth.signature, nullptr);
  EXPECT_EQ(d.auth.signature[0], static_cast<uint8_t>(rec + 24));
  EXPECT_EQ(d.auth.signature[63], static_cast<uint8_t>(b.size() - 1));

  // The record cut short, or the flag on a datagram without one: the lengths disagree.
  Bytes cut(b.begin(), b.end() - 1);
  EXPECT_EQ(Decode(cut), DXPU_MGMT_ERR_LENGTH_MISMATCH);
  Bytes unsigned_one = b;
  unsigned_one[7] = 0;  // SIGNED cleared: 88 bytes too many
  EXPECT_EQ(Decode(unsigned_one), DXPU_MGMT_ERR_LENGTH_MISMATCH);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_SIGNED, 1, 0, Bytes(87, 0))),
            DXPU_MGMT_ERR_LENGTH_MISMATCH);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_SIGNED, 1, 0, {})),
            DXPU_MGMT_ERR_LENGTH_MISMATCH);
  // A signed request with an empty body: the record alone after the header.
  Bytes status = Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_SIGNED, 1, 0, {});
  status.resize(status.size() + DXPU_MGMT_AUTH_SIZE, 0);
  EXPECT_EQ(Decode(status), DXPU_MGMT_ERR_OK);
}

TEST(MgmtSigned, TheLargestSignedChunkFitsADatagram) {
  const Bytes data(DXPU_MGMT_FW_CHUNK_MAX_DATA, 0x5a);
  dxpu_mgmt_msg m = Request(DXPU_MGMT_FW_CHUNK, 2);
  m.flags = DXPU_MGMT_F_SIGNED;
  m.body.fw_chunk = {0, dxpu_crc32c(0, data.data(), data.size()),
                     static_cast<uint16_t>(data.size()), data.data()};
  const Bytes b = Encode(m);
  EXPECT_EQ(b.size(), DXPU_MGMT_MAX_MSG);
  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(b, &d), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(d.body.fw_chunk.length, DXPU_MGMT_FW_CHUNK_MAX_DATA);
}

TEST(MgmtSigned, WhatChangesState) {
  for (int t :
       std::initializer_list<int>{DXPU_MGMT_ASSIGN, DXPU_MGMT_RELEASE, DXPU_MGMT_DMA_GRANT,
                                  DXPU_MGMT_DMA_REVOKE_ALL, DXPU_MGMT_FW_BEGIN, DXPU_MGMT_FW_CHUNK,
                                  DXPU_MGMT_FW_COMMIT, DXPU_MGMT_FW_REBOOT, 0, 13, 0xff})
    EXPECT_TRUE(dxpu_mgmt_changes_state(static_cast<uint8_t>(t))) << t;
  for (int t : std::initializer_list<int>{DXPU_MGMT_STATUS, DXPU_MGMT_INVENTORY,
                                          DXPU_MGMT_FW_STATUS, DXPU_MGMT_DMA_LIST})
    EXPECT_FALSE(dxpu_mgmt_changes_state(static_cast<uint8_t>(t))) << t;
  // Reads a tenant's display: signed as the requests that change state.
  EXPECT_TRUE(dxpu_mgmt_changes_state(DXPU_MGMT_SCREENSHOT));
}

// ---- arguments, answers, names ----

TEST(MgmtArgs, BadArguments) {
  dxpu_mgmt_msg m = Request(DXPU_MGMT_ASSIGN, 1);
  m.body.assign = {0, 0x100, 0};
  EXPECT_EQ(dxpu_mgmt_check_args(&m), DXPU_MGMT_BAD_ARGUMENT);  // node 0
  m.body.assign.host_node_id = 1;
  EXPECT_EQ(dxpu_mgmt_check_args(&m), DXPU_MGMT_OK);

  const uint64_t top = ~uint64_t{0};
  const uint64_t limit = DXPU_MGMT_DMA_ADDR_LIMIT;  // 2^52: both ranges end at or below it
  struct Grant {
    uint64_t device_base, host_base, size;
    dxpu_mgmt_status want;
  };
  const Grant grants[] = {
      {0x1000, 0x2000, 0, DXPU_MGMT_BAD_ARGUMENT},              // zero size
      {0x1000, 0x2000, 0x1000, DXPU_MGMT_OK},                   // ordinary
      {limit - 0x1000, 0x2000, 0x1000, DXPU_MGMT_OK},           // device range ends at 2^52
      {limit - 0xfff, 0x2000, 0x1000, DXPU_MGMT_BAD_ARGUMENT},  // one byte past it
      {0x2000, limit - 0x1000, 0x1000, DXPU_MGMT_OK},           // host range ends at 2^52
      {0x2000, limit - 0xfff, 0x1000, DXPU_MGMT_BAD_ARGUMENT},  // one byte past it
      {0, 0, limit, DXPU_MGMT_OK},                              // the whole width
      {1, 1, limit, DXPU_MGMT_BAD_ARGUMENT},                    // one byte too many
      {0, 0, uint64_t{1} << 63, DXPU_MGMT_BAD_ARGUMENT},        // issue 32: 2^63 from 0
      {top - 0xfff, 0x2000, 0x1000, DXPU_MGMT_BAD_ARGUMENT},    // far past, up to 2^64
      {top - 0xffe, 0x2000, 0x1000, DXPU_MGMT_BAD_ARGUMENT},    // wraps
      {0x2000, top - 0xffe, 0x1000, DXPU_MGMT_BAD_ARGUMENT},    // wraps
      {0, 0, top, DXPU_MGMT_BAD_ARGUMENT},                      // all of 2^64
      {top, top, 1, DXPU_MGMT_BAD_ARGUMENT},                    // the last byte of 2^64
      {limit - 1, limit - 1, 1, DXPU_MGMT_OK},                  // the last byte below 2^52
  };
  for (const Grant& g : grants) {
    m = Request(DXPU_MGMT_DMA_GRANT, 1);
    m.body.dma_grant = {0, g.device_base, g.host_base, g.size};
    EXPECT_EQ(dxpu_mgmt_check_args(&m), g.want)
        << std::hex << g.device_base << " " << g.host_base << " " << g.size;
  }
  for (uint8_t type :
       {DXPU_MGMT_RELEASE, DXPU_MGMT_DMA_REVOKE_ALL, DXPU_MGMT_STATUS, DXPU_MGMT_INVENTORY}) {
    const dxpu_mgmt_msg other = Request(type, 1);
    EXPECT_EQ(dxpu_mgmt_check_args(&other), DXPU_MGMT_OK) << int(type);
  }
}

TEST(MgmtArgs, WhatAServerAnswers) {
  dxpu_mgmt_msg req = Request(DXPU_MGMT_ASSIGN, 1);
  dxpu_mgmt_msg resp = Response(DXPU_MGMT_ASSIGN, 1, DXPU_MGMT_OK);
  enum dxpu_mgmt_status st = DXPU_MGMT_INTERNAL;
  EXPECT_FALSE(dxpu_mgmt_error_reply(DXPU_MGMT_ERR_OK, &req, &st));
  EXPECT_FALSE(dxpu_mgmt_error_reply(DXPU_MGMT_ERR_SHORT, &req, &st));
  EXPECT_FALSE(dxpu_mgmt_error_reply(DXPU_MGMT_ERR_BAD_MAGIC, &req, &st));
  for (int e = DXPU_MGMT_ERR_BAD_VERSION; e < DXPU_MGMT_ERR_NO_SPACE; ++e) {
    const auto err = static_cast<dxpu_mgmt_err>(e);
    st = DXPU_MGMT_OK;
    ASSERT_TRUE(dxpu_mgmt_error_reply(err, &req, &st)) << dxpu_mgmt_err_name(err);
    EXPECT_EQ(st, err == DXPU_MGMT_ERR_BAD_VERSION    ? DXPU_MGMT_UNSUPPORTED_VERSION
                  : err == DXPU_MGMT_ERR_UNKNOWN_TYPE ? DXPU_MGMT_UNKNOWN_TYPE
                                                      : DXPU_MGMT_MALFORMED)
        << dxpu_mgmt_err_name(err);
    EXPECT_FALSE(dxpu_mgmt_error_reply(err, &resp, &st)) << "never answer a response";
  }
}

TEST(MgmtNames, StableAndDistinct) {
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_ASSIGN), "assign");
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_RELEASE), "release");
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_DMA_GRANT), "dma-grant");
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_DMA_REVOKE_ALL), "dma-revoke-all");
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_STATUS), "status");
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_INVENTORY), "inventory");
  EXPECT_EQ(DXPU_MGMT_INVENTORY, 6);
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_FW_BEGIN), "fw-begin");
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_FW_CHUNK), "fw-chunk");
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_FW_STATUS), "fw-status");
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_FW_COMMIT), "fw-commit");
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_FW_REBOOT), "fw-reboot");
  EXPECT_EQ(DXPU_MGMT_FW_REBOOT, 11);
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_DMA_LIST), "dma-list");
  EXPECT_EQ(DXPU_MGMT_DMA_LIST, 12);
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_HOST_KEY_SET), "host-key-set");
  EXPECT_EQ(DXPU_MGMT_HOST_KEY_SET, 13);
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_HOST_KEY_REMOVE), "host-key-remove");
  EXPECT_EQ(DXPU_MGMT_HOST_KEY_REMOVE, 14);
  EXPECT_STREQ(dxpu_mgmt_type_name(DXPU_MGMT_SCREENSHOT), "screenshot");
  EXPECT_EQ(DXPU_MGMT_SCREENSHOT, 15);
  EXPECT_EQ(DXPU_MGMT_TYPE_MAX, DXPU_MGMT_SCREENSHOT);
  EXPECT_STREQ(dxpu_mgmt_type_name(0), "unknown");
  EXPECT_STREQ(dxpu_mgmt_type_name(16), "unknown");
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_NO_DISPLAY), "no-display");
  EXPECT_EQ(DXPU_MGMT_NO_DISPLAY, 28);
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_BAD_CRC), "bad-crc");
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_FLASH_ERROR), "flash-error");
  EXPECT_EQ(DXPU_MGMT_FLASH_ERROR, 20);
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_TRIAL_RUNNING), "trial-running");
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_UNAUTHENTICATED), "unauthenticated");
  EXPECT_EQ(DXPU_MGMT_UNAUTHENTICATED, 22);
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_STALE_EPOCH), "stale-epoch");
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_REPLAYED), "replayed");
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_QUARANTINED), "quarantined");
  EXPECT_EQ(DXPU_MGMT_QUARANTINED, 25);
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_NO_IDENTITY), "no-identity");
  EXPECT_EQ(DXPU_MGMT_NO_IDENTITY, 26);
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_KEY_IN_USE), "key-in-use");
  EXPECT_EQ(DXPU_MGMT_KEY_IN_USE, 27);
  EXPECT_EQ(DXPU_MGMT_STATUS_COUNT, 29);
  EXPECT_STREQ(dxpu_mgmt_device_state_name(DXPU_MGMT_DEV_QUARANTINED), "quarantined");
  EXPECT_EQ(DXPU_MGMT_DEV_QUARANTINED, 3);
  EXPECT_STREQ(dxpu_mgmt_fw_transfer_name(DXPU_MGMT_FW_COMMITTED), "committed");
  EXPECT_STREQ(dxpu_mgmt_fw_transfer_name(3), "unknown");
  EXPECT_STREQ(dxpu_mgmt_fw_slot_state_name(DXPU_MGMT_FW_SLOT_BAD), "bad");
  EXPECT_STREQ(dxpu_mgmt_fw_slot_state_name(4), "unknown");
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_DEVICE_BUSY), "device-busy");
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_BAD_ARGUMENT), "bad-argument");
  EXPECT_STREQ(dxpu_mgmt_status_name(DXPU_MGMT_STATUS_COUNT), "unknown");
  EXPECT_STREQ(dxpu_mgmt_err_name(DXPU_MGMT_ERR_LENGTH_MISMATCH), "length-mismatch");
  EXPECT_STREQ(dxpu_mgmt_err_name(DXPU_MGMT_ERR_COUNT), "unknown");
  EXPECT_STREQ(dxpu_mgmt_device_state_name(DXPU_MGMT_DEV_SCRUBBING), "scrubbing");
  EXPECT_STREQ(dxpu_mgmt_device_state_name(4), "unknown");
  std::set<std::string> seen;
  for (uint16_t s = 0; s < DXPU_MGMT_STATUS_COUNT; ++s) {
    const std::string n = dxpu_mgmt_status_name(s);
    EXPECT_NE(n, "unknown");
    EXPECT_TRUE(seen.insert(n).second) << n;
  }
  seen.clear();
  for (int e = 0; e < DXPU_MGMT_ERR_COUNT; ++e) {
    const std::string n = dxpu_mgmt_err_name(static_cast<dxpu_mgmt_err>(e));
    EXPECT_NE(n, "unknown");
    EXPECT_TRUE(seen.insert(n).second) << n;
  }
}

// ---- firmware update messages ----

Bytes FwBeginBody(uint32_t flags, const Bytes& header) {
  Bytes b;
  Put32(b, flags);
  Put32(b, 0);
  return Join(b, header);
}

Bytes FwChunkBody(uint64_t offset, const Bytes& data, int crc_delta = 0) {
  Bytes b;
  Put64(b, offset);
  Put32(b, dxpu_crc32c(0, data.data(), data.size()) + static_cast<uint32_t>(crc_delta));
  Put32(b, 0);
  return Join(b, data);
}

Bytes FwReportBody(const dxpu_mgmt_fw_report& r) {
  Bytes b = {r.running_slot, r.transfer,      r.target_slot,   r.trial_slot,
             r.tries_left,   r.slot_state[0], r.slot_state[1], 0};
  Put32(b, r.slot_version[0]);
  Put32(b, r.slot_version[1]);
  Put32(b, r.running_version);
  Put32(b, r.min_version);
  Put32(b, r.hw_revision);
  Put32(b, 0);
  Put64(b, r.next_offset);
  Put64(b, r.total);
  return b;
}

dxpu_mgmt_fw_report RandomReport(std::mt19937_64& rng) {
  dxpu_mgmt_fw_report r{};
  r.running_slot = static_cast<uint8_t>(rng() % 2);
  r.transfer = static_cast<uint8_t>(rng() % 3);
  r.trial_slot = rng() % 3 == 2 ? DXPU_MGMT_FW_NO_SLOT : static_cast<uint8_t>(rng() % 2);
  r.tries_left = static_cast<uint8_t>(rng() % 4);
  r.slot_state[0] = static_cast<uint8_t>(rng() % 4);
  r.slot_state[1] = static_cast<uint8_t>(rng() % 4);
  r.slot_version[0] = static_cast<uint32_t>(rng());
  r.slot_version[1] = static_cast<uint32_t>(rng());
  r.running_version = static_cast<uint32_t>(rng());
  r.min_version = static_cast<uint32_t>(rng());
  r.hw_revision = static_cast<uint32_t>(rng());
  if (r.transfer == DXPU_MGMT_FW_IDLE) {
    r.target_slot = DXPU_MGMT_FW_NO_SLOT;
  } else {
    r.target_slot = static_cast<uint8_t>(1 - r.running_slot);
    r.total = rng() >> 1;
    r.next_offset = r.total == 0 ? 0 : rng() % (r.total + 1);
  }
  return r;
}

bool SameReport(const dxpu_mgmt_fw_report& a, const dxpu_mgmt_fw_report& b) {
  return FwReportBody(a) == FwReportBody(b);
}

Bytes ImageHeaderBytes() {
  Bytes h(DXPU_MGMT_FW_IMAGE_HEADER_SIZE);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(i * 7 + 3);
  return h;
}

TEST(MgmtFirmware, BeginByHandAndBack) {
  const Bytes header = ImageHeaderBytes();
  const Bytes want = Message(DXPU_MGMT_FW_BEGIN, 0, 0x0a0b0c0d, 0,
                             FwBeginBody(DXPU_MGMT_FW_F_ALLOW_DOWNGRADE, header));
  ASSERT_EQ(want.size(), 16u + 264u);
  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(d.type, DXPU_MGMT_FW_BEGIN);
  EXPECT_EQ(d.body.fw_begin.flags, DXPU_MGMT_FW_F_ALLOW_DOWNGRADE);
  EXPECT_EQ(Bytes(d.body.fw_begin.header, d.body.fw_begin.header + 256), header);
  EXPECT_EQ(dxpu_mgmt_check_args(&d), DXPU_MGMT_OK);

  dxpu_mgmt_msg m = Request(DXPU_MGMT_FW_BEGIN, 0x0a0b0c0d);
  m.body.fw_begin = {DXPU_MGMT_FW_F_ALLOW_DOWNGRADE, header.data()};
  EXPECT_EQ(Encode(m), want);
  m.body.fw_begin.header = nullptr;
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_BODY_SIZE);
  m.body.fw_begin = {2, header.data()};
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_RESERVED);

  // A flag this version does not define, the reserved word, and the wrong sizes.
  EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_BEGIN, 0, 1, 0, FwBeginBody(2, header))),
            DXPU_MGMT_ERR_RESERVED);
  Bytes body = FwBeginBody(0, header);
  body[7] = 1;
  EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_BEGIN, 0, 1, 0, body)), DXPU_MGMT_ERR_RESERVED);
  for (size_t n : {0, 8, 263, 265, 520}) {
    body = FwBeginBody(0, header);
    body.resize(n, 0);
    EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_BEGIN, 0, 1, 0, body)), DXPU_MGMT_ERR_BODY_SIZE) << n;
  }
}

TEST(MgmtFirmware, ChunksRoundTripAndTheirCrcIsAnArgument) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("DXPU_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (size_t len :
       {size_t{1}, size_t{2}, size_t{255}, size_t{4096}, size_t{DXPU_MGMT_FW_CHUNK_MAX_DATA}}) {
    Bytes data(len);
    for (auto& x : data) x = static_cast<uint8_t>(rng());
    const uint64_t offset = rng() >> 8;
    const Bytes want = Message(DXPU_MGMT_FW_CHUNK, 0, 9, 0, FwChunkBody(offset, data));
    ASSERT_LE(want.size(), DXPU_MGMT_MAX_MSG);
    dxpu_mgmt_msg d{};
    ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK) << len;
    EXPECT_EQ(d.body.fw_chunk.offset, offset);
    EXPECT_EQ(d.body.fw_chunk.length, len);
    EXPECT_EQ(Bytes(d.body.fw_chunk.data, d.body.fw_chunk.data + len), data);
    EXPECT_EQ(dxpu_mgmt_check_args(&d), DXPU_MGMT_OK);
    dxpu_mgmt_msg m = Request(DXPU_MGMT_FW_CHUNK, 9);
    m.body.fw_chunk = {offset, dxpu_crc32c(0, data.data(), len), static_cast<uint16_t>(len),
                       data.data()};
    EXPECT_EQ(Encode(m), want);

    // One bit of the data flipped, or the CRC off by one: BAD_CRC, before anything else.
    Bytes bad = want;
    bad[16 + 16 + rng() % len] ^= static_cast<uint8_t>(1u << (rng() % 8));
    ASSERT_EQ(Decode(bad, &d), DXPU_MGMT_ERR_OK);
    EXPECT_EQ(dxpu_mgmt_check_args(&d), DXPU_MGMT_BAD_CRC);
    ASSERT_EQ(Decode(Message(DXPU_MGMT_FW_CHUNK, 0, 9, 0, FwChunkBody(offset, data, 1)), &d),
              DXPU_MGMT_ERR_OK);
    EXPECT_EQ(dxpu_mgmt_check_args(&d), DXPU_MGMT_BAD_CRC);
  }
  // A range that wraps past 2^64.
  dxpu_mgmt_msg d{};
  ASSERT_EQ(
      Decode(Message(DXPU_MGMT_FW_CHUNK, 0, 9, 0, FwChunkBody(~uint64_t{0}, Bytes(2, 1))), &d),
      DXPU_MGMT_ERR_OK);
  EXPECT_EQ(dxpu_mgmt_check_args(&d), DXPU_MGMT_BAD_ARGUMENT);
  ASSERT_EQ(
      Decode(Message(DXPU_MGMT_FW_CHUNK, 0, 9, 0, FwChunkBody(~uint64_t{0}, Bytes(1, 1))), &d),
      DXPU_MGMT_ERR_OK);
  EXPECT_EQ(dxpu_mgmt_check_args(&d), DXPU_MGMT_OK);

  // No data, a short fixed part, the reserved word; the encoder's limits.
  EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_CHUNK, 0, 1, 0, Bytes(16, 0))), DXPU_MGMT_ERR_BODY_SIZE);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_CHUNK, 0, 1, 0, Bytes(9, 0))), DXPU_MGMT_ERR_BODY_SIZE);
  Bytes body = FwChunkBody(0, Bytes(4, 0));
  body[15] = 1;
  EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_CHUNK, 0, 1, 0, body)), DXPU_MGMT_ERR_RESERVED);
  const Bytes big(DXPU_MGMT_FW_CHUNK_MAX_DATA + 1, 0);
  dxpu_mgmt_msg m = Request(DXPU_MGMT_FW_CHUNK, 1);
  m.body.fw_chunk = {0, 0, static_cast<uint16_t>(big.size()), big.data()};
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_TOO_LARGE);
  m.body.fw_chunk.length = 0;
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_BODY_SIZE);
  m.body.fw_chunk = {0, 0, 4, nullptr};
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_BODY_SIZE);
}

TEST(MgmtFirmware, ReportsRoundTrip) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("DXPU_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 500; ++i) {
    const dxpu_mgmt_fw_report r = RandomReport(rng);
    for (uint8_t type :
         {DXPU_MGMT_FW_BEGIN, DXPU_MGMT_FW_CHUNK, DXPU_MGMT_FW_STATUS, DXPU_MGMT_FW_COMMIT}) {
      const Bytes want = Message(type, DXPU_MGMT_F_RESPONSE, 5, 0, FwReportBody(r));
      ASSERT_EQ(want.size(), 16u + DXPU_MGMT_FW_REPORT_SIZE);
      dxpu_mgmt_msg d{};
      ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK);
      EXPECT_TRUE(SameReport(d.body.fw_report, r));
      dxpu_mgmt_msg m = Response(type, 5, DXPU_MGMT_OK);
      m.body.fw_report = r;
      ASSERT_EQ(Encode(m), want);
    }
  }
  // The other firmware messages have empty bodies both ways.
  for (uint8_t type : {DXPU_MGMT_FW_STATUS, DXPU_MGMT_FW_COMMIT, DXPU_MGMT_FW_REBOOT}) {
    EXPECT_EQ(Decode(Message(type, 0, 1, 0, {})), DXPU_MGMT_ERR_OK);
    EXPECT_EQ(Decode(Message(type, 0, 1, 0, Bytes(4, 0))), DXPU_MGMT_ERR_BODY_SIZE);
  }
  EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_REBOOT, DXPU_MGMT_F_RESPONSE, 1, 0, {})), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, {})),
            DXPU_MGMT_ERR_BODY_SIZE);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_STATUS, DXPU_MGMT_F_RESPONSE, 1, DXPU_MGMT_DOWNGRADE, {})),
            DXPU_MGMT_ERR_OK);
}

TEST(MgmtFirmware, ReportRules) {
  dxpu_mgmt_fw_report idle{};
  idle.target_slot = DXPU_MGMT_FW_NO_SLOT;
  idle.trial_slot = DXPU_MGMT_FW_NO_SLOT;
  ASSERT_EQ(Decode(Message(DXPU_MGMT_FW_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, FwReportBody(idle))),
            DXPU_MGMT_ERR_OK);
  dxpu_mgmt_fw_report busy = idle;
  busy.transfer = DXPU_MGMT_FW_RECEIVING;
  busy.target_slot = 1;
  busy.total = 100;
  busy.next_offset = 100;
  ASSERT_EQ(Decode(Message(DXPU_MGMT_FW_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, FwReportBody(busy))),
            DXPU_MGMT_ERR_OK);
  struct Case {
    dxpu_mgmt_fw_report r;
    const char* what;
  };
  std::vector<Case> bad;
  auto with = [](dxpu_mgmt_fw_report r, auto edit, const char* what) {
    edit(r);
    return Case{r, what};
  };
  bad.push_back(with(
      idle, [](auto& r) { r.running_slot = 2; }, "running slot 2"));
  bad.push_back(with(
      idle, [](auto& r) { r.running_slot = 0xff; }, "no running slot"));
  bad.push_back(with(
      idle, [](auto& r) { r.transfer = 3; }, "transfer 3"));
  bad.push_back(with(
      idle, [](auto& r) { r.trial_slot = 2; }, "trial slot 2"));
  bad.push_back(with(
      idle, [](auto& r) { r.slot_state[0] = 4; }, "slot A state 4"));
  bad.push_back(with(
      idle, [](auto& r) { r.slot_state[1] = 0xff; }, "slot B state 255"));
  bad.push_back(with(
      idle, [](auto& r) { r.target_slot = 1; }, "idle with a target"));
  bad.push_back(with(
      idle, [](auto& r) { r.total = 1; }, "idle with bytes"));
  bad.push_back(with(
      busy, [](auto& r) { r.target_slot = DXPU_MGMT_FW_NO_SLOT; }, "no target"));
  bad.push_back(with(
      busy, [](auto& r) { r.next_offset = 101; }, "next past total"));
  for (const Case& c : bad) {
    EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, FwReportBody(c.r))),
              DXPU_MGMT_ERR_BAD_ENTRY)
        << c.what;
    dxpu_mgmt_msg m = Response(DXPU_MGMT_FW_STATUS, 1, DXPU_MGMT_OK);
    m.body.fw_report = c.r;
    EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_BAD_ENTRY) << c.what;
  }
  for (size_t at : {7, 28, 29, 30, 31}) {
    Bytes body = FwReportBody(busy);
    body[at] = 1;
    EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_STATUS, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
              DXPU_MGMT_ERR_RESERVED)
        << at;
  }
  for (size_t n : {0, 47, 49, 96}) {
    Bytes body = FwReportBody(busy);
    body.resize(n, 0);
    EXPECT_EQ(Decode(Message(DXPU_MGMT_FW_COMMIT, DXPU_MGMT_F_RESPONSE, 1, 0, body)),
              DXPU_MGMT_ERR_BODY_SIZE)
        << n;
  }
}

// ---- random and mutated datagrams ----

// A random valid message of any kind, as the reference writer lays it out.
Bytes RandomValid(std::mt19937_64& rng) {
  const auto id = static_cast<uint32_t>(rng());
  const auto dev = static_cast<uint16_t>(rng());
  switch (rng() % 14) {
    case 12:
      return Message(DXPU_MGMT_DMA_LIST, 0, id, 0, DeviceRefBody(dev));
    case 13: {
      std::vector<dxpu_mgmt_dma_window> windows;
      for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i)
        windows.push_back({rng() >> 1, rng() >> 1, 1 + (rng() >> 2)});
      return Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, id, 0, DmaListBody(dev, windows));
    }
    case 0:
      return Message(DXPU_MGMT_ASSIGN, 0, id, 0,
                     AssignBody(dev, static_cast<uint16_t>(rng()), rng()));
    case 1:
      return Message(DXPU_MGMT_RELEASE, 0, id, 0, DeviceRefBody(dev));
    case 2:
      return Message(DXPU_MGMT_DMA_GRANT, 0, id, 0, GrantBody(dev, rng(), rng(), rng()));
    case 3:
      return Message(DXPU_MGMT_DMA_REVOKE_ALL, 0, id, 0, DeviceRefBody(dev));
    case 4:
      return Message(DXPU_MGMT_STATUS, 0, id, 0, {});
    case 5: {
      std::vector<dxpu_mgmt_device_entry> entries;
      for (int i = 0, n = static_cast<int>(rng() % 6); i < n; ++i) {
        const auto state = static_cast<uint8_t>(rng() % 3);
        entries.push_back(Entry(static_cast<uint16_t>(i), static_cast<uint16_t>(rng()),
                                static_cast<uint16_t>(rng()), state,
                                state == DXPU_MGMT_DEV_FREE ? 0 : rng() | 1));
      }
      return Message(DXPU_MGMT_STATUS, DXPU_MGMT_F_RESPONSE, id, 0,
                     ReportBody(static_cast<uint16_t>(rng()), entries));
    }
    case 6:
      return Message(static_cast<uint8_t>(1 + rng() % 4), DXPU_MGMT_F_RESPONSE, id, 0, {});
    case 7:
      return Message(DXPU_MGMT_INVENTORY, 0, id, 0, {});
    case 9: {
      Bytes data(1 + rng() % 64);
      for (auto& x : data) x = static_cast<uint8_t>(rng());
      return Message(DXPU_MGMT_FW_CHUNK, 0, id, 0, FwChunkBody(rng() >> 1, data));
    }
    case 10:
      return Message(DXPU_MGMT_FW_STATUS, DXPU_MGMT_F_RESPONSE, id, 0,
                     FwReportBody(RandomReport(rng)));
    case 8: {
      std::vector<InvEntry> entries;
      for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i) {
        std::string name(1 + rng() % 31, ' ');
        for (char& c : name) c = static_cast<char>(0x20 + rng() % 95);
        entries.push_back({static_cast<uint16_t>(i), static_cast<uint16_t>(rng()),
                           static_cast<uint16_t>(rng()), static_cast<uint16_t>(rng()), rng(),
                           name});
      }
      return Message(DXPU_MGMT_INVENTORY, DXPU_MGMT_F_RESPONSE, id, 0,
                     InventoryBody(rng(), entries));
    }
    default:
      return Message(static_cast<uint8_t>(rng()), DXPU_MGMT_F_RESPONSE, id,
                     static_cast<uint16_t>(1 + rng() % (DXPU_MGMT_STATUS_COUNT - 1)), {});
  }
}

// Whatever the bytes, the decoder returns a defined error and reads nothing outside them
// (ASan). What it accepts is canonical: encoding the decoded message gives the same bytes.
void CheckArbitrary(const Bytes& b, uint64_t seed, int i) {
  dxpu_mgmt_msg m{};
  const dxpu_mgmt_err err = Decode(b, &m);
  ASSERT_GE(static_cast<int>(err), 0);
  ASSERT_LT(static_cast<int>(err), static_cast<int>(DXPU_MGMT_ERR_NO_SPACE))
      << "seed=" << seed << " i=" << i;
  if (err != DXPU_MGMT_ERR_OK) {
    enum dxpu_mgmt_status st = DXPU_MGMT_OK;
    if (dxpu_mgmt_error_reply(err, &m, &st)) {
      // The server's answer always encodes.
      Bytes out(DXPU_MGMT_HDR_SIZE);
      size_t len = 0;
      const dxpu_mgmt_msg reply = Response(m.type, m.request_id, st);
      ASSERT_EQ(dxpu_mgmt_encode(&reply, out.data(), out.size(), &len), DXPU_MGMT_ERR_OK)
          << "seed=" << seed << " i=" << i;
    }
    return;
  }
  (void)dxpu_mgmt_check_args(&m);
  ASSERT_EQ(Encode(m), b) << "seed=" << seed << " i=" << i;
}

// ---- DMA_LIST ----

// DMA_LIST, laid out by hand from section 15: a request for device 2, and the OK answer
// with one window.
//   request: header type 0c, body length 0x0008; device 0x0002, reserved 00 00 00 00 00 00
//   answer:  header type 0c, flags 00 01, body length 0x0020 (8 + 24), status 0;
//            device 0x0002, window count 0x0001, reserved 00 00 00 00;
//            device base 0x0000000100000000, host base 0x0000000080000000, size 0x40000000
const char* const kDmaListRequestHex =
    "44 58 4d 47  01 0c 00 00  00 00 00 07  00 08 00 00"
    "00 02 00 00  00 00 00 00";
const char* const kDmaListAnswerHex =
    "44 58 4d 47  01 0c 00 01  00 00 00 07  00 20 00 00"
    "00 02 00 01  00 00 00 00"
    "00 00 00 01  00 00 00 00  00 00 00 00  80 00 00 00  00 00 00 00  40 00 00 00";

TEST(MgmtDmaList, HandBuiltRequestAndAnswer) {
  dxpu_mgmt_msg m{};
  ASSERT_EQ(Decode(from_hex(kDmaListRequestHex), &m), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(m.type, DXPU_MGMT_DMA_LIST);
  EXPECT_FALSE(dxpu_mgmt_is_response(&m));
  EXPECT_EQ(m.body.dma_list_request.device, 2);
  dxpu_mgmt_msg req = Request(DXPU_MGMT_DMA_LIST, 7);
  req.body.dma_list_request.device = 2;
  EXPECT_EQ(Encode(req), from_hex(kDmaListRequestHex));

  const Bytes answer = from_hex(kDmaListAnswerHex);
  ASSERT_EQ(Decode(answer, &m), DXPU_MGMT_ERR_OK);
  EXPECT_TRUE(dxpu_mgmt_is_response(&m));
  EXPECT_EQ(m.body.dma_list.device, 2);
  ASSERT_EQ(m.body.dma_list.window_count, 1);
  dxpu_mgmt_dma_window w{};
  ASSERT_TRUE(dxpu_mgmt_dma_list_window(&m.body.dma_list, 0, &w));
  EXPECT_EQ(w.device_base, 0x100000000u);
  EXPECT_EQ(w.host_base, 0x80000000u);
  EXPECT_EQ(w.size, 0x40000000u);
  EXPECT_FALSE(dxpu_mgmt_dma_list_window(&m.body.dma_list, 1, &w));

  const dxpu_mgmt_dma_window one = {0x100000000, 0x80000000, 0x40000000};
  Bytes out(DXPU_MGMT_MAX_MSG);
  size_t len = 0;
  ASSERT_EQ(dxpu_mgmt_encode_dma_list(7, 2, &one, 1, out.data(), out.size(), &len),
            DXPU_MGMT_ERR_OK);
  out.resize(len);
  EXPECT_EQ(out, answer);
}

TEST(MgmtDmaList, RoundTripFromNoneToTheMost) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("DXPU_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (size_t n = 0; n <= DXPU_MGMT_DMA_LIST_MAX_WINDOWS; ++n) {
    std::vector<dxpu_mgmt_dma_window> windows;
    for (size_t i = 0; i < n; ++i) windows.push_back({rng() >> 1, rng() >> 1, 1 + (rng() >> 2)});
    const auto device = static_cast<uint16_t>(rng());
    const auto id = static_cast<uint32_t>(rng());
    const Bytes want =
        Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, id, 0, DmaListBody(device, windows));
    ASSERT_EQ(want.size(), 16 + 8 + 24 * n);

    Bytes out(want.size());  // exactly enough
    size_t len = 0;
    ASSERT_EQ(
        dxpu_mgmt_encode_dma_list(id, device, windows.data(), n, out.data(), out.size(), &len),
        DXPU_MGMT_ERR_OK)
        << n;
    EXPECT_EQ(out, want) << n;
    if (len > 0) {
      EXPECT_EQ(dxpu_mgmt_encode_dma_list(id, device, windows.data(), n, out.data(), len - 1, &len),
                DXPU_MGMT_ERR_NO_SPACE);
      EXPECT_EQ(len, 0u);
    }

    dxpu_mgmt_msg d{};
    ASSERT_EQ(Decode(want, &d), DXPU_MGMT_ERR_OK) << n;
    EXPECT_EQ(d.body.dma_list.device, device);
    ASSERT_EQ(d.body.dma_list.window_count, n);
    for (size_t i = 0; i < n; ++i) {
      dxpu_mgmt_dma_window w{};
      ASSERT_TRUE(dxpu_mgmt_dma_list_window(&d.body.dma_list, i, &w));
      EXPECT_EQ(w.device_base, windows[i].device_base) << i;
      EXPECT_EQ(w.host_base, windows[i].host_base) << i;
      EXPECT_EQ(w.size, windows[i].size) << i;
    }
    // The generic encoder re-encodes the decoded report byte for byte.
    EXPECT_EQ(Encode(d), want) << n;
  }
  // The request, and every error answer (empty, whatever the status).
  dxpu_mgmt_msg m = Request(DXPU_MGMT_DMA_LIST, 9);
  m.body.dma_list_request.device = 0xbeef;
  EXPECT_EQ(Encode(m), Message(DXPU_MGMT_DMA_LIST, 0, 9, 0, DeviceRefBody(0xbeef)));
  for (uint16_t st = 1; st < DXPU_MGMT_STATUS_COUNT; ++st)
    EXPECT_EQ(Encode(Response(DXPU_MGMT_DMA_LIST, 9, st)),
              Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 9, st, {}));
}

TEST(MgmtDmaList, TruncatedOrExtended) {
  const std::vector<dxpu_mgmt_dma_window> two = {{0x1000, 0x2000, 0x1000},
                                                 {0x10000, 0x20000, 0x4000}};
  const Bytes good = DmaListBody(3, two);
  ASSERT_EQ(good.size(), 56u);
  ASSERT_EQ(Decode(Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, 0, good)),
            DXPU_MGMT_ERR_OK);
  for (size_t n = 0; n < good.size() + 30; ++n) {
    if (n == good.size()) continue;
    Bytes cut = good;
    cut.resize(n, 0);  // truncated (in the fixed part, or in a window), or extended
    EXPECT_EQ(Decode(Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, 0, cut)),
              DXPU_MGMT_ERR_BODY_SIZE)
        << n;
  }
  // A count that disagrees with the windows there.
  for (int count : {0, 1, 3}) {
    EXPECT_EQ(
        Decode(Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, 0, DmaListBody(3, two, count))),
        DXPU_MGMT_ERR_BODY_SIZE)
        << count;
  }
  // The datagram cut short of its Body length.
  Bytes msg = Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, 0, good);
  msg.pop_back();
  EXPECT_EQ(Decode(msg), DXPU_MGMT_ERR_LENGTH_MISMATCH);
  // The request is 8 bytes exactly.
  EXPECT_EQ(Decode(Message(DXPU_MGMT_DMA_LIST, 0, 1, 0, {})), DXPU_MGMT_ERR_BODY_SIZE);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_DMA_LIST, 0, 1, 0, Bytes(4, 0))), DXPU_MGMT_ERR_BODY_SIZE);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_DMA_LIST, 0, 1, 0, Bytes(16, 0))), DXPU_MGMT_ERR_BODY_SIZE);
  // An error answer carries nothing.
  EXPECT_EQ(
      Decode(Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, DXPU_MGMT_NO_SUCH_DEVICE, good)),
      DXPU_MGMT_ERR_BODY_SIZE);
}

TEST(MgmtDmaList, TooManyWindows) {
  std::vector<dxpu_mgmt_dma_window> windows;
  for (uint64_t i = 0; i <= DXPU_MGMT_DMA_LIST_MAX_WINDOWS; ++i)
    windows.push_back({i << 20, i << 20, 4096});
  // 17 windows, every byte of them there: still refused, before the size is looked at.
  EXPECT_EQ(
      Decode(Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, 0, DmaListBody(0, windows))),
      DXPU_MGMT_ERR_TOO_LARGE);
  for (int count : {17, 0x100, 0xffff}) {
    EXPECT_EQ(
        Decode(Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, 0, DmaListBody(0, {}, count))),
        DXPU_MGMT_ERR_TOO_LARGE)
        << count;
  }
  Bytes out(DXPU_MGMT_MAX_MSG);
  size_t len = 1;
  EXPECT_EQ(
      dxpu_mgmt_encode_dma_list(1, 0, windows.data(), windows.size(), out.data(), out.size(), &len),
      DXPU_MGMT_ERR_TOO_LARGE);
  EXPECT_EQ(len, 0u);
  // Through the generic encoder too.
  Bytes wire;
  for (const auto& w : windows) {
    const Bytes one = WindowBytes(w);
    wire.insert(wire.end(), one.begin(), one.end());
  }
  dxpu_mgmt_msg m = Response(DXPU_MGMT_DMA_LIST, 1, DXPU_MGMT_OK);
  m.body.dma_list.window_count = static_cast<uint16_t>(windows.size());
  m.body.dma_list.windows = wire.data();
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_TOO_LARGE);
  m.body.dma_list.window_count = DXPU_MGMT_DMA_LIST_MAX_WINDOWS;
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_OK);
}

TEST(MgmtDmaList, NonzeroReserved) {
  const Bytes good = DmaListBody(1, {{0x1000, 0x1000, 0x1000}});
  for (size_t at = 4; at < 8; ++at) {
    Bytes b = good;
    b[at] = 0x01;
    EXPECT_EQ(Decode(Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, 0, b)),
              DXPU_MGMT_ERR_RESERVED)
        << at;
  }
  // The request's reserved bytes, as RELEASE's.
  for (size_t at = 2; at < 8; ++at) {
    Bytes b = DeviceRefBody(1);
    b[at] = 0x80;
    EXPECT_EQ(Decode(Message(DXPU_MGMT_DMA_LIST, 0, 1, 0, b)), DXPU_MGMT_ERR_RESERVED) << at;
  }
  // A server answers both with MALFORMED.
  dxpu_mgmt_msg m{};
  Bytes b = DeviceRefBody(1);
  b[7] = 1;
  ASSERT_EQ(Decode(Message(DXPU_MGMT_DMA_LIST, 0, 5, 0, b), &m), DXPU_MGMT_ERR_RESERVED);
  enum dxpu_mgmt_status st = DXPU_MGMT_OK;
  EXPECT_TRUE(dxpu_mgmt_error_reply(DXPU_MGMT_ERR_RESERVED, &m, &st));
  EXPECT_EQ(st, DXPU_MGMT_MALFORMED);
  EXPECT_EQ(m.type, DXPU_MGMT_DMA_LIST);
  EXPECT_EQ(m.request_id, 5u);
}

TEST(MgmtDmaList, WindowsABridgeCannotHave) {
  const uint64_t top = ~uint64_t{0};
  const dxpu_mgmt_dma_window bad[] = {
      {0x1000, 0x1000, 0},            // no size
      {top - 0xfff, 0x1000, 0x2000},  // the device range wraps
      {0x1000, top, 2},               // the host range wraps
  };
  for (const dxpu_mgmt_dma_window& w : bad) {
    const std::vector<dxpu_mgmt_dma_window> windows = {{0x100000, 0x100000, 0x1000}, w};
    EXPECT_EQ(
        Decode(Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, 0, DmaListBody(0, windows))),
        DXPU_MGMT_ERR_BAD_ENTRY)
        << w.device_base << " " << w.host_base << " " << w.size;
    Bytes out(DXPU_MGMT_MAX_MSG);
    size_t len = 0;
    EXPECT_EQ(dxpu_mgmt_encode_dma_list(1, 0, windows.data(), windows.size(), out.data(),
                                        out.size(), &len),
              DXPU_MGMT_ERR_BAD_ENTRY);
  }
  // The last byte of the address space is a window's to reach.
  const std::vector<dxpu_mgmt_dma_window> edge = {{top - 0xfff, top - 0xfff, 0x1000}};
  EXPECT_EQ(Decode(Message(DXPU_MGMT_DMA_LIST, DXPU_MGMT_F_RESPONSE, 1, 0, DmaListBody(0, edge))),
            DXPU_MGMT_ERR_OK);
  // The generic encoder with windows but no pointer to them.
  dxpu_mgmt_msg m = Response(DXPU_MGMT_DMA_LIST, 1, DXPU_MGMT_OK);
  m.body.dma_list.window_count = 1;
  EXPECT_EQ(EncodeErr(m), DXPU_MGMT_ERR_BAD_ENTRY);
}

TEST(MgmtFuzz, RandomAndMutatedDatagrams) {
  const uint64_t seed = test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  int accepted_mutants = 0;
  for (int i = 0; i < 20000; ++i) {
    // Random bytes, often behind a valid magic and version so the later checks are reached.
    Bytes r(rng() % 96);
    for (auto& x : r) x = static_cast<uint8_t>(rng());
    if (r.size() >= 16 && (rng() & 1) != 0) {
      const Bytes h = Header(static_cast<uint8_t>(rng() % 14), static_cast<uint16_t>(rng() % 2), 0,
                             static_cast<uint16_t>(r.size() - 16), 0);
      std::copy(h.begin(), h.end(), r.begin());
    }
    CheckArbitrary(r, seed, i);

    // A valid message, then flipped bits, truncated or extended.
    const Bytes good = RandomValid(rng);
    ASSERT_EQ(Decode(good), DXPU_MGMT_ERR_OK) << "seed=" << seed << " i=" << i;
    Bytes m = good;
    switch (rng() % 4) {
      case 0:
        m.resize(rng() % (m.size() + 1));
        break;
      case 1:
        m.push_back(static_cast<uint8_t>(rng()));
        break;
      default:
        for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
          m[rng() % m.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        }
    }
    if (Decode(m) == DXPU_MGMT_ERR_OK) ++accepted_mutants;
    CheckArbitrary(m, seed, i);
  }
  // Flips inside IDs and addresses keep a message valid: the test does reach the encoder.
  EXPECT_GT(accepted_mutants, 0);
}

// ---- SCREENSHOT ----

// SCREENSHOT, laid out by hand from section 15.10: a request for device 3 from offset 0x10000,
// and the OK answer with 5 bytes of a 0x10005-byte PNG, frame 9.
//   request: header type 0f, body length 0x0008; device 0x0003, reserved 00 00, offset 0x00010000
//   answer:  header type 0f, flags 00 01, body length 0x0015 (16 + 5), status 0; device 0x0003,
//            reserved 00 00, total 0x00010005, offset 0x00010000, frame 0x00000009, 5 bytes
const char* const kScreenshotRequestHex =
    "44 58 4d 47  01 0f 00 00  00 00 00 05  00 08 00 00"
    "00 03 00 00  00 01 00 00";
const char* const kScreenshotAnswerHex =
    "44 58 4d 47  01 0f 00 01  00 00 00 05  00 15 00 00"
    "00 03 00 00  00 01 00 05  00 01 00 00  00 00 00 09"
    "49 45 4e 44  2e";

TEST(MgmtScreenshot, HandBuiltRequestAndAnswer) {
  dxpu_mgmt_msg m{};
  ASSERT_EQ(Decode(from_hex(kScreenshotRequestHex), &m), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(m.type, DXPU_MGMT_SCREENSHOT);
  EXPECT_EQ(m.body.screenshot_request.device, 3);
  EXPECT_EQ(m.body.screenshot_request.offset, 0x10000u);
  dxpu_mgmt_msg req = Request(DXPU_MGMT_SCREENSHOT, 5);
  req.body.screenshot_request = {3, 0x10000};
  EXPECT_EQ(Encode(req), from_hex(kScreenshotRequestHex));

  const Bytes answer = from_hex(kScreenshotAnswerHex);
  ASSERT_EQ(Decode(answer, &m), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(m.body.screenshot.device, 3);
  EXPECT_EQ(m.body.screenshot.total, 0x10005u);
  EXPECT_EQ(m.body.screenshot.offset, 0x10000u);
  EXPECT_EQ(m.body.screenshot.frame, 9u);
  ASSERT_EQ(m.body.screenshot.data_len, 5);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.body.screenshot.data), 5), "IEND.");
  // The generic encoder writes it back byte for byte.
  EXPECT_EQ(Encode(m), answer);
}

TEST(MgmtScreenshot, PiecesOutsideTheirImageAndBadBodiesAreRefused) {
  // An answer whose piece runs past the image's end, or starts past it.
  Bytes past = from_hex(kScreenshotAnswerHex);
  past[16 + 7] = 0x04;  // total 0x10004: 0x10000 + 5 > total
  EXPECT_EQ(Decode(past), DXPU_MGMT_ERR_BAD_ENTRY);
  Bytes start = from_hex(kScreenshotAnswerHex);
  start[16 + 9] = 0x02;  // offset 0x20000 > total
  EXPECT_EQ(Decode(start), DXPU_MGMT_ERR_BAD_ENTRY);
  // Reserved bytes.
  Bytes reserved = from_hex(kScreenshotAnswerHex);
  reserved[16 + 2] = 1;
  EXPECT_EQ(Decode(reserved), DXPU_MGMT_ERR_RESERVED);
  Bytes req_reserved = from_hex(kScreenshotRequestHex);
  req_reserved[16 + 3] = 1;
  EXPECT_EQ(Decode(req_reserved), DXPU_MGMT_ERR_RESERVED);
  // A body shorter than the fixed part, and a request of the wrong size.
  EXPECT_EQ(Decode(Message(DXPU_MGMT_SCREENSHOT, DXPU_MGMT_F_RESPONSE, 1, 0, Bytes(15, 0))),
            DXPU_MGMT_ERR_BODY_SIZE);
  EXPECT_EQ(Decode(Message(DXPU_MGMT_SCREENSHOT, 0, 1, 0, Bytes(4, 0))), DXPU_MGMT_ERR_BODY_SIZE);
  // The encoder refuses what the decoder refuses.
  dxpu_mgmt_msg r = Response(DXPU_MGMT_SCREENSHOT, 1, DXPU_MGMT_OK);
  const uint8_t data[4] = {1, 2, 3, 4};
  r.body.screenshot = {0, 10, 8, 1, 4, data};
  EXPECT_EQ(EncodeErr(r), DXPU_MGMT_ERR_BAD_ENTRY);
  r.body.screenshot = {0, 10, 6, 1, 4, nullptr};
  EXPECT_EQ(EncodeErr(r), DXPU_MGMT_ERR_BAD_ENTRY);
  // The largest piece fits a datagram; one byte more does not encode.
  std::vector<uint8_t> big(DXPU_MGMT_SCREENSHOT_MAX_DATA + 1, 0x42);
  r.body.screenshot = {0,
                       static_cast<uint32_t>(big.size()),
                       0,
                       1,
                       static_cast<uint16_t>(DXPU_MGMT_SCREENSHOT_MAX_DATA),
                       big.data()};
  EXPECT_EQ(Encode(r).size(), DXPU_MGMT_MAX_MSG);
  // The end of the image: an empty piece at offset == total.
  r.body.screenshot = {0, 10, 10, 1, 0, nullptr};
  dxpu_mgmt_msg d{};
  ASSERT_EQ(Decode(Encode(r), &d), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(d.body.screenshot.data_len, 0);
}

}  // namespace
}  // namespace dxpu::test
