// management_test.cc - management datagrams applied to a bridge: ASSIGN, DMA_GRANT, DMA_LIST,
// STATUS, INVENTORY, RELEASE and the errors, each answered with the status its effect deserves.
#include "bridge-fw/management.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bridge-fw/management_auth.h"

#include "core/dxpu_mgmt.h"
#include "gpu/device_profile.h"

namespace dxpu::bridge {
namespace {

std::unique_ptr<BridgeBox> Box() {
  BridgeBoxConfig c;
  c.node_id = 0xb0c5;
  for (uint16_t i = 0; i < 2; ++i) {
    BoxDeviceConfig d;
    d.profile = *gpu::FindProfile("dxgpu");
    d.box_bdf = static_cast<uint16_t>(0x0100 + (i << 8));
    d.memory_bytes = 1 << 20;
    c.devices.push_back(d);
  }
  std::string error;
  auto box = BridgeBox::Create(c, &error);
  EXPECT_NE(box, nullptr) << error;
  return box;
}

std::vector<uint8_t> Encode(const dxpu_mgmt_msg& m) {
  std::vector<uint8_t> buf(256);
  size_t len = 0;
  EXPECT_EQ(dxpu_mgmt_encode(&m, buf.data(), buf.size(), &len), DXPU_MGMT_ERR_OK);
  buf.resize(len);
  return buf;
}

dxpu_mgmt_msg Request(uint8_t type, uint32_t id) {
  dxpu_mgmt_msg m{};
  m.type = type;
  m.request_id = id;
  return m;
}

// The decoded response to `request`; fails the test when there is none. A STATUS report's
// entries point into the reply's bytes, which `keep` receives (when given) to keep them alive.
dxpu_mgmt_msg Ask(BridgeBox& box, const dxpu_mgmt_msg& request, ManagementCounters* c,
                  std::vector<uint8_t>* keep = nullptr) {
  std::vector<uint8_t> local;
  std::vector<uint8_t>& reply = keep != nullptr ? *keep : local;
  reply = HandleManagement(box, Encode(request), 1000, c);
  dxpu_mgmt_msg r{};
  EXPECT_EQ(dxpu_mgmt_decode(reply.data(), reply.size(), &r), DXPU_MGMT_ERR_OK);
  EXPECT_TRUE(dxpu_mgmt_is_response(&r));
  EXPECT_EQ(r.request_id, request.request_id);
  EXPECT_EQ(r.type, request.type);
  return r;
}

TEST(Management, AssignGrantStatusRelease) {
  auto box = Box();
  ManagementCounters c;
  dxpu_mgmt_msg assign = Request(DXPU_MGMT_ASSIGN, 1);
  assign.body.assign = {1, 0x0300, 0xa0};
  EXPECT_EQ(Ask(*box, assign, &c).status, DXPU_MGMT_OK);
  EXPECT_EQ(Ask(*box, assign, &c).status, DXPU_MGMT_OK);  // again: the same, OK
  assign.body.assign.host_node_id = 0xb0;
  EXPECT_EQ(Ask(*box, assign, &c).status, DXPU_MGMT_DEVICE_BUSY);
  assign.body.assign.device = 7;
  EXPECT_EQ(Ask(*box, assign, &c).status, DXPU_MGMT_NO_SUCH_DEVICE);
  assign.body.assign = {0, 0x0300, 0};
  EXPECT_EQ(Ask(*box, assign, &c).status, DXPU_MGMT_BAD_ARGUMENT);

  dxpu_mgmt_msg grant = Request(DXPU_MGMT_DMA_GRANT, 2);
  grant.body.dma_grant = {1, 0x1000, 0x1000, 0x1000};
  EXPECT_EQ(Ask(*box, grant, &c).status, DXPU_MGMT_OK);
  EXPECT_EQ(Ask(*box, grant, &c).status, DXPU_MGMT_OK);  // retried: the same grant, OK
  EXPECT_EQ(box->Devices()[1].dma_windows, 1U);
  grant.body.dma_grant.device_base = 0x1800;
  EXPECT_EQ(Ask(*box, grant, &c).status, DXPU_MGMT_OVERLAP);
  grant.body.dma_grant.device = 0;
  EXPECT_EQ(Ask(*box, grant, &c).status, DXPU_MGMT_NOT_ASSIGNED);

  std::vector<uint8_t> status_bytes;
  const dxpu_mgmt_msg status = Ask(*box, Request(DXPU_MGMT_STATUS, 3), &c, &status_bytes);
  ASSERT_EQ(status.status, DXPU_MGMT_OK);
  ASSERT_EQ(status.body.status_report.device_count, 2);
  dxpu_mgmt_device_entry e{};
  ASSERT_TRUE(dxpu_mgmt_status_entry(&status.body.status_report, 1, &e));
  EXPECT_EQ(e.box_bdf, 0x0200);
  EXPECT_EQ(e.host_bdf, 0x0300);
  EXPECT_EQ(e.state, DXPU_MGMT_DEV_ASSIGNED);
  EXPECT_EQ(e.owner, 0xa0U);
  ASSERT_TRUE(dxpu_mgmt_status_entry(&status.body.status_report, 0, &e));
  EXPECT_EQ(e.state, DXPU_MGMT_DEV_FREE);

  dxpu_mgmt_msg release = Request(DXPU_MGMT_RELEASE, 4);
  release.body.release.device = 1;
  EXPECT_EQ(Ask(*box, release, &c).status, DXPU_MGMT_OK);
  EXPECT_EQ(box->Devices()[1].state, DeviceState::kFree);
  EXPECT_EQ(box->Devices()[1].resets, 1U);
  EXPECT_EQ(Ask(*box, release, &c).status, DXPU_MGMT_OK);  // a free device: OK
  EXPECT_EQ(box->Devices()[1].resets, 1U);                 // and nothing more happens
}

// INVENTORY reports the bridge's node ID and every device with its profile, PCI IDs and memory
// (the configuration's, or the profile's when it gives none), and changes nothing.
TEST(Management, InventoryListsEveryDeviceWithItsProfile) {
  struct Want {
    const char* profile;
    uint16_t box_bdf;
    uint64_t memory;  // configured; 0: the profile's
  };
  const Want want[] = {{"dxgpu", 0x0100, 1 << 20},
                       {"a100-40g", 0x4100, 0},
                       {"h100-80g", 0x8100, uint64_t{16} << 20}};
  BridgeBoxConfig c;
  c.node_id = 0x0123456789abcdefULL;
  for (const Want& w : want) {
    BoxDeviceConfig d;
    d.profile = *gpu::FindProfile(w.profile);
    d.box_bdf = w.box_bdf;
    d.memory_bytes = w.memory;
    c.devices.push_back(d);
  }
  std::string error;
  auto box = BridgeBox::Create(c, &error);
  ASSERT_NE(box, nullptr) << error;
  ManagementCounters counters;
  dxpu_mgmt_msg assign = Request(DXPU_MGMT_ASSIGN, 1);
  assign.body.assign = {2, 0x0300, 0xa0};
  ASSERT_EQ(Ask(*box, assign, &counters).status, DXPU_MGMT_OK);

  std::vector<uint8_t> bytes;
  const dxpu_mgmt_msg r = Ask(*box, Request(DXPU_MGMT_INVENTORY, 77), &counters, &bytes);
  ASSERT_EQ(r.status, DXPU_MGMT_OK);
  EXPECT_EQ(bytes.size(), DXPU_MGMT_HDR_SIZE + DXPU_MGMT_INVENTORY_FIXED_SIZE +
                              3 * DXPU_MGMT_INVENTORY_ENTRY_SIZE);
  EXPECT_EQ(r.body.inventory.node_id, 0x0123456789abcdefULL);
  ASSERT_EQ(r.body.inventory.device_count, 3);
  for (uint16_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(want[i].profile);
    const gpu::DeviceProfile p = *gpu::FindProfile(want[i].profile);
    dxpu_mgmt_inventory_device e{};
    ASSERT_TRUE(dxpu_mgmt_inventory_entry(&r.body.inventory, i, &e));
    EXPECT_EQ(e.device, i);
    EXPECT_EQ(e.box_bdf, want[i].box_bdf);
    EXPECT_EQ(e.vendor_id, p.vendor_id);
    EXPECT_EQ(e.device_id, p.device_id);
    EXPECT_EQ(e.memory_bytes, want[i].memory != 0 ? want[i].memory : p.roofline.memory_bytes);
    EXPECT_EQ(e.memory_bytes, box->device(i).memory_bytes());
    EXPECT_EQ(std::string(e.profile), want[i].profile);
  }
  EXPECT_EQ(r.body.inventory.device_count, box->Devices().size());
  EXPECT_EQ(box->Devices()[2].owner_node, 0xa0U);  // nothing changed
  EXPECT_EQ(counters.requests, 2U);
  EXPECT_EQ(counters.refused, 0U);

  // A request with a body is malformed; the answer has none.
  std::vector<uint8_t> with_body = Encode(Request(DXPU_MGMT_INVENTORY, 78));
  with_body.resize(with_body.size() + 8, 0);
  with_body[DXPU_MGMT_OFF_BODY_LENGTH + 1] = 8;
  const std::vector<uint8_t> reply = HandleManagement(*box, with_body, 0, &counters);
  dxpu_mgmt_msg m{};
  ASSERT_EQ(dxpu_mgmt_decode(reply.data(), reply.size(), &m), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(m.type, DXPU_MGMT_INVENTORY);
  EXPECT_EQ(m.status, DXPU_MGMT_MALFORMED);
  EXPECT_EQ(m.body_length, 0);
}

// The windows of a DMA_LIST answer, as (device base, host base, size).
struct Window {
  uint64_t device_base, host_base, size;
  bool operator==(const Window&) const = default;
};

std::vector<Window> ListDma(BridgeBox& box, uint16_t device, uint32_t id, ManagementCounters* c,
                            uint16_t* status = nullptr) {
  dxpu_mgmt_msg req = Request(DXPU_MGMT_DMA_LIST, id);
  req.body.dma_list_request.device = device;
  std::vector<uint8_t> bytes;
  const dxpu_mgmt_msg r = Ask(box, req, c, &bytes);
  if (status != nullptr) *status = r.status;
  std::vector<Window> out;
  if (r.status != DXPU_MGMT_OK) {
    EXPECT_EQ(r.body_length, 0);
    return out;
  }
  EXPECT_EQ(r.body.dma_list.device, device);
  EXPECT_EQ(bytes.size(), DXPU_MGMT_HDR_SIZE + DXPU_MGMT_DMA_LIST_FIXED_SIZE +
                              size_t{r.body.dma_list.window_count} * DXPU_MGMT_DMA_WINDOW_SIZE);
  for (size_t i = 0; i < r.body.dma_list.window_count; ++i) {
    dxpu_mgmt_dma_window w{};
    EXPECT_TRUE(dxpu_mgmt_dma_list_window(&r.body.dma_list, i, &w));
    out.push_back({w.device_base, w.host_base, w.size});
  }
  return out;
}

uint16_t Grant(BridgeBox& box, uint16_t device, const Window& w, ManagementCounters* c) {
  dxpu_mgmt_msg grant = Request(DXPU_MGMT_DMA_GRANT, 20);
  grant.body.dma_grant = {device, w.device_base, w.host_base, w.size};
  return Ask(box, grant, c).status;
}

// DMA_LIST reports a device's windows as DMA_GRANT gave them, in grant order; a revoke empties
// them, a free device has none (OK, empty), a device the bridge lacks is no-such-device.
TEST(Management, DmaListReportsTheGrants) {
  auto box = Box();
  ManagementCounters c;
  dxpu_mgmt_msg assign = Request(DXPU_MGMT_ASSIGN, 1);
  assign.body.assign = {0, 0x0100, 0xa0};
  ASSERT_EQ(Ask(*box, assign, &c).status, DXPU_MGMT_OK);
  assign.body.assign = {1, 0x0200, 0xa1};
  ASSERT_EQ(Ask(*box, assign, &c).status, DXPU_MGMT_OK);

  uint16_t status = 0xffff;
  EXPECT_EQ(ListDma(*box, 0, 2, &c, &status), std::vector<Window>{});  // none granted yet
  EXPECT_EQ(status, DXPU_MGMT_OK);

  const Window a{0x1'0000'0000, 0x8000'0000, 1 << 30};
  const Window b{0x1000, 0x7fff'f000, 0x1000};
  const Window other{0x2000, 0x3000, 0x4000};
  ASSERT_EQ(Grant(*box, 0, a, &c), DXPU_MGMT_OK);
  ASSERT_EQ(Grant(*box, 0, b, &c), DXPU_MGMT_OK);
  ASSERT_EQ(Grant(*box, 1, other, &c), DXPU_MGMT_OK);
  EXPECT_EQ(ListDma(*box, 0, 3, &c), (std::vector<Window>{a, b}));
  EXPECT_EQ(ListDma(*box, 1, 4, &c), std::vector<Window>{other});
  // A refused grant changes nothing listed.
  ASSERT_EQ(Grant(*box, 0, {0x1800, 0x1800, 0x100}, &c), DXPU_MGMT_OVERLAP);
  EXPECT_EQ(ListDma(*box, 0, 5, &c), (std::vector<Window>{a, b}));

  // Revoking device 0's windows leaves device 1's.
  dxpu_mgmt_msg revoke = Request(DXPU_MGMT_DMA_REVOKE_ALL, 6);
  revoke.body.dma_revoke_all.device = 0;
  ASSERT_EQ(Ask(*box, revoke, &c).status, DXPU_MGMT_OK);
  EXPECT_EQ(ListDma(*box, 0, 7, &c, &status), std::vector<Window>{});
  EXPECT_EQ(status, DXPU_MGMT_OK);
  EXPECT_EQ(ListDma(*box, 1, 8, &c), std::vector<Window>{other});

  // The most windows a device has all fit one answer; one more is table-full.
  std::vector<Window> many;
  for (uint64_t i = 0; i < DXPU_MGMT_DMA_LIST_MAX_WINDOWS; ++i) {
    many.push_back({i << 20, (i << 20) + 0x1000, 0x1000});
    ASSERT_EQ(Grant(*box, 0, many.back(), &c), DXPU_MGMT_OK) << i;
  }
  EXPECT_EQ(Grant(*box, 0, {1ULL << 40, 0, 0x1000}, &c), DXPU_MGMT_TABLE_FULL);
  EXPECT_EQ(ListDma(*box, 0, 9, &c), many);

  // Released: the device is free, with no windows: OK and empty, not an error.
  dxpu_mgmt_msg release = Request(DXPU_MGMT_RELEASE, 10);
  release.body.release.device = 1;
  ASSERT_EQ(Ask(*box, release, &c).status, DXPU_MGMT_OK);
  EXPECT_EQ(ListDma(*box, 1, 11, &c, &status), std::vector<Window>{});
  EXPECT_EQ(status, DXPU_MGMT_OK);
  // No such device.
  EXPECT_EQ(ListDma(*box, 2, 12, &c, &status), std::vector<Window>{});
  EXPECT_EQ(status, DXPU_MGMT_NO_SUCH_DEVICE);
  // Listing changed nothing.
  EXPECT_EQ(box->Devices()[0].dma_windows, DXPU_MGMT_DMA_LIST_MAX_WINDOWS);
  EXPECT_EQ(box->Devices()[0].owner_node, 0xa0U);
}

// A type past DMA_LIST is answered unknown-type, echoing it: what an older bridge answers
// DMA_LIST with (`dxpu bridge status` then says the grants are not reported).
TEST(Management, UnknownTypeIsAnsweredUnknownType) {
  auto box = Box();
  ManagementCounters c;
  dxpu_mgmt_msg req = Request(DXPU_MGMT_RELEASE, 42);
  std::vector<uint8_t> bytes = Encode(req);
  bytes[DXPU_MGMT_OFF_TYPE] = DXPU_MGMT_TYPE_MAX + 1;
  const std::vector<uint8_t> reply = HandleManagement(*box, bytes, 0, &c);
  dxpu_mgmt_msg r{};
  ASSERT_EQ(dxpu_mgmt_decode(reply.data(), reply.size(), &r), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(r.type, DXPU_MGMT_TYPE_MAX + 1);
  EXPECT_EQ(r.request_id, 42U);
  EXPECT_EQ(r.status, DXPU_MGMT_UNKNOWN_TYPE);
  EXPECT_EQ(c.refused, 1U);
}

TEST(Management, GarbageIsDroppedOrRefusedNeverApplied) {
  auto box = Box();
  ManagementCounters c;
  EXPECT_TRUE(HandleManagement(*box, std::vector<uint8_t>{1, 2, 3}, 0, &c).empty());
  std::vector<uint8_t> not_dxmg(16, 0);
  EXPECT_TRUE(HandleManagement(*box, not_dxmg, 0, &c).empty());
  EXPECT_EQ(c.dropped, 2U);
  // A wrong version is answered UNSUPPORTED_VERSION, and changes nothing.
  dxpu_mgmt_msg assign = Request(DXPU_MGMT_ASSIGN, 9);
  assign.body.assign = {0, 0x0100, 0xa0};
  std::vector<uint8_t> bytes = Encode(assign);
  bytes[4] = 2;
  const std::vector<uint8_t> reply = HandleManagement(*box, bytes, 0, &c);
  dxpu_mgmt_msg r{};
  ASSERT_EQ(dxpu_mgmt_decode(reply.data(), reply.size(), &r), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(r.status, DXPU_MGMT_UNSUPPORTED_VERSION);
  EXPECT_EQ(box->Devices()[0].state, DeviceState::kFree);
  // A response sent to the bridge is not answered.
  dxpu_mgmt_msg resp{};
  resp.type = DXPU_MGMT_RELEASE;
  resp.flags = DXPU_MGMT_F_RESPONSE;
  EXPECT_TRUE(HandleManagement(*box, Encode(resp), 0, &c).empty());
}

// Issue 32 item 4: a DMA window must fit a host's address width (2^52), so a window of 2^63
// bytes from address 0 is refused before any table is looked at; so is one that wraps.
TEST(Management, DmaGrantsBeyondTheAddressWidthAreRefused) {
  auto box = Box();
  ManagementCounters c;
  dxpu_mgmt_msg assign = Request(DXPU_MGMT_ASSIGN, 1);
  assign.body.assign = {0, 0x0300, 0xa0};
  ASSERT_EQ(Ask(*box, assign, &c).status, DXPU_MGMT_OK);
  dxpu_mgmt_msg grant = Request(DXPU_MGMT_DMA_GRANT, 2);
  const uint64_t limit = DXPU_MGMT_DMA_ADDR_LIMIT;
  const struct {
    uint64_t device_base, host_base, size;
    uint16_t status;
  } cases[] = {
      {0, 0, uint64_t{1} << 63, DXPU_MGMT_BAD_ARGUMENT},
      {0, 0, ~uint64_t{0}, DXPU_MGMT_BAD_ARGUMENT},
      {limit - 4096, limit - 4096, 8192, DXPU_MGMT_BAD_ARGUMENT},
      {0x1000, limit - 4096, 8192, DXPU_MGMT_BAD_ARGUMENT},
      {~uint64_t{0} - 10, 0x1000, 4096, DXPU_MGMT_BAD_ARGUMENT},
      {0x1000, 0x1000, 0, DXPU_MGMT_BAD_ARGUMENT},
      {limit - 4096, limit - 4096, 4096, DXPU_MGMT_OK},  // ends at the limit exactly
  };
  for (const auto& k : cases) {
    grant.body.dma_grant = {0, k.device_base, k.host_base, k.size};
    EXPECT_EQ(Ask(*box, grant, &c).status, k.status)
        << std::hex << k.device_base << " " << k.host_base << " " << k.size;
  }
  EXPECT_EQ(box->Devices()[0].dma_windows, 1U);
}

// Sign `m` as a controller does: the datagram's bytes.
std::vector<uint8_t> Signed(ManagementSigner& signer, dxpu_mgmt_msg m) {
  signer.Prepare(&m);
  std::vector<uint8_t> buf(512);
  size_t len = 0;
  EXPECT_EQ(dxpu_mgmt_encode(&m, buf.data(), buf.size(), &len), DXPU_MGMT_ERR_OK);
  buf.resize(len);
  signer.Sign(buf);
  return buf;
}

AuthVerdict Judge(ManagementAuthenticator& auth, const std::vector<uint8_t>& bytes) {
  dxpu_mgmt_msg m{};
  EXPECT_EQ(dxpu_mgmt_decode(bytes.data(), bytes.size(), &m), DXPU_MGMT_ERR_OK);
  return auth.Check(m, bytes);
}

dxpu_mgmt_msg Release(uint16_t device) {
  dxpu_mgmt_msg m = Request(DXPU_MGMT_RELEASE, device);
  m.body.release.device = device;
  return m;
}

// Issue 32 item 3: the fence. Requests of one epoch may arrive in any order within the window
// (the manager's workers run at once) and each is taken once; one older than the window, one
// seen before, one from a lower epoch are refused; a higher epoch takes over.
TEST(ManagementAuth, TheFenceTakesEachRequestOnceFromTheNewestEpoch) {
  const firmware::KeyPair k = firmware::GenerateKeyPair();
  ManagementSigner signer(k.secret_key, 5);
  ManagementAuthenticator auth({k.public_key}, false);
  std::vector<std::vector<uint8_t>> sent;
  for (uint16_t i = 0; i < ManagementAuthenticator::kWindow; ++i)
    sent.push_back(Signed(signer, Release(i)));
  std::mt19937_64 rng(7);
  std::shuffle(sent.begin(), sent.end(), rng);
  for (const auto& d : sent) EXPECT_EQ(Judge(auth, d), AuthVerdict::kOk);
  for (const auto& d : sent) EXPECT_EQ(Judge(auth, d), AuthVerdict::kReplayed);
  // One request held back past the window: too old to tell, refused.
  const std::vector<uint8_t> late = Signed(signer, Release(0));
  for (uint64_t i = 0; i < ManagementAuthenticator::kWindow; ++i)
    EXPECT_EQ(Judge(auth, Signed(signer, Release(1))), AuthVerdict::kOk);
  EXPECT_EQ(Judge(auth, late), AuthVerdict::kReplayed);

  // A lower epoch is stale; a higher one takes over and fences the old one out.
  ManagementSigner old_manager(k.secret_key, 4);
  EXPECT_EQ(Judge(auth, Signed(old_manager, Release(0))), AuthVerdict::kStaleEpoch);
  ManagementSigner new_manager(k.secret_key, 6);
  EXPECT_EQ(Judge(auth, Signed(new_manager, Release(0))), AuthVerdict::kOk);
  EXPECT_EQ(Judge(auth, Signed(signer, Release(0))), AuthVerdict::kStaleEpoch);
  EXPECT_EQ(auth.counters().stale_epoch, 2U);
  EXPECT_EQ(auth.counters().replayed, ManagementAuthenticator::kWindow + 1);
}

TEST(ManagementAuth, UnsignedUnknownAndForgedRequestsAreRefused) {
  const firmware::KeyPair k = firmware::GenerateKeyPair();
  const firmware::KeyPair other = firmware::GenerateKeyPair();
  ManagementSigner signer(k.secret_key, 1);
  ManagementSigner stranger(other.secret_key, 1);
  ManagementAuthenticator auth({k.public_key}, false);
  EXPECT_EQ(Judge(auth, Encode(Release(0))), AuthVerdict::kUnsigned);
  EXPECT_EQ(Judge(auth, Encode(Request(DXPU_MGMT_STATUS, 1))), AuthVerdict::kOk);  // read-only
  EXPECT_EQ(Judge(auth, Encode(Request(DXPU_MGMT_FW_REBOOT, 1))), AuthVerdict::kUnsigned);
  EXPECT_EQ(Judge(auth, Signed(stranger, Release(0))), AuthVerdict::kUnknownKey);
  // Every byte of a signed request is bound: any one flipped, it no longer verifies.
  const std::vector<uint8_t> good = Signed(signer, Release(3));
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x40;
    dxpu_mgmt_msg m{};
    if (dxpu_mgmt_decode(bad.data(), bad.size(), &m) != DXPU_MGMT_ERR_OK) continue;
    const AuthVerdict v = auth.Check(m, bad);
    EXPECT_TRUE(v == AuthVerdict::kBadSignature || v == AuthVerdict::kUnknownKey ||
                v == AuthVerdict::kUnsigned)
        << "byte " << i << ": " << AuthVerdictName(v);
  }
  EXPECT_EQ(Judge(auth, good), AuthVerdict::kOk);
  EXPECT_EQ(auth.counters().accepted_signed, 1U);

  // insecure_unsigned: unsigned requests pass, signed ones are still verified.
  ManagementAuthenticator lab({}, true);
  EXPECT_EQ(Judge(lab, Encode(Release(0))), AuthVerdict::kOk);
  EXPECT_EQ(Judge(lab, Signed(stranger, Release(0))), AuthVerdict::kUnknownKey);
  // No key and not insecure: every state-changing request is refused.
  ManagementAuthenticator none({}, false);
  EXPECT_EQ(Judge(none, Signed(signer, Release(0))), AuthVerdict::kUnknownKey);
  EXPECT_EQ(Judge(none, Encode(Release(0))), AuthVerdict::kUnsigned);
}

// RELEASE of a virtio-blk disk (issue 33 item 4): the operator's policy, through the same
// message as a GPU's release. A disk released under "zero" reads back all zeros and holds no
// blocks (sparse again); one under "keep" keeps what its tenant wrote; both count the bytes.
TEST(Management, ReleasedDisksFollowTheirPolicy) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dxpu-mgmt-disks-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  constexpr uint64_t kDiskBytes = 4 << 20;
  BridgeBoxConfig c;
  c.node_id = 0xb0c7;
  for (const DiskReleasePolicy policy : {DiskReleasePolicy::kZero, DiskReleasePolicy::kKeep}) {
    BoxDeviceConfig disk;
    disk.kind = DeviceKind::kVirtioBlk;
    disk.box_bdf = static_cast<uint16_t>((c.devices.size() + 1) << 8);
    disk.blk = {(dir / ("disk" + std::to_string(c.devices.size()))).string(), kDiskBytes, 1,
                policy};
    c.devices.push_back(disk);
  }
  std::string error;
  auto box = BridgeBox::Create(c, &error);
  ASSERT_NE(box, nullptr) << error;
  ManagementCounters counters;
  // Each disk lent to a host, which writes 1 MiB of its own at 1 MiB (here: into the backing
  // file, as the device would).
  std::vector<char> tenant(1 << 20);
  for (size_t i = 0; i < tenant.size(); ++i) tenant[i] = static_cast<char>(i * 31 + 7);
  for (uint16_t d = 0; d < 2; ++d) {
    dxpu_mgmt_msg assign = Request(DXPU_MGMT_ASSIGN, 10 + d);
    assign.body.assign = {d, static_cast<uint16_t>(0x0300 + d * 0x100), 0xa0};
    ASSERT_EQ(Ask(*box, assign, &counters).status, DXPU_MGMT_OK);
    std::fstream f(c.devices[d].blk.backing, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1 << 20);
    f.write(tenant.data(), static_cast<std::streamsize>(tenant.size()));
    ASSERT_TRUE(f.good());
  }
  const auto contents = [&](uint16_t d) {
    std::ifstream f(c.devices[d].blk.backing, std::ios::binary);
    std::vector<char> all(kDiskBytes);
    f.read(all.data(), static_cast<std::streamsize>(all.size()));
    EXPECT_EQ(f.gcount(), static_cast<std::streamsize>(kDiskBytes));
    return all;
  };
  for (uint16_t d = 0; d < 2; ++d) {
    dxpu_mgmt_msg release = Request(DXPU_MGMT_RELEASE, 20 + d);
    release.body.release.device = d;
    ASSERT_EQ(Ask(*box, release, &counters).status, DXPU_MGMT_OK);
    EXPECT_EQ(box->Devices()[d].state, DeviceState::kFree);
    EXPECT_EQ(box->Devices()[d].resets, 1U);
  }
  const std::vector<char> zeroed = contents(0);
  EXPECT_TRUE(std::all_of(zeroed.begin(), zeroed.end(), [](char b) { return b == 0; }));
  EXPECT_EQ(box->Devices()[0].scrubbed_bytes, kDiskBytes);
  struct stat st {};
  ASSERT_EQ(::stat(c.devices[0].blk.backing.c_str(), &st), 0);
  EXPECT_LT(uint64_t(st.st_blocks) * 512, uint64_t{1} << 20);  // the tenant's blocks are gone
  const std::vector<char> kept = contents(1);
  EXPECT_TRUE(std::equal(tenant.begin(), tenant.end(), kept.begin() + (1 << 20)));
  EXPECT_EQ(box->Devices()[1].scrubbed_bytes, 0U);
  box.reset();
  std::filesystem::remove_all(dir);
}

// SCREENSHOT (docs/protocol.md 15.10): a virtio-gpu's display as a PNG, in pieces that fit a
// datagram; the pieces of one image put together decode as that image (a disabled display:
// black at the mode's size); a GPU model has no display; an offset past the end is refused.
TEST(Management, ScreenshotOfAVirtioGpuInPieces) {
  BridgeBoxConfig c;
  c.node_id = 0xb0c6;
  BoxDeviceConfig gpu;
  gpu.profile = *gpu::FindProfile("dxgpu");
  gpu.box_bdf = 0x0100;
  gpu.memory_bytes = 1 << 20;
  c.devices.push_back(gpu);
  BoxDeviceConfig display;
  display.kind = DeviceKind::kVirtioGpu;
  display.box_bdf = 0x0200;
  display.display = {320, 200};
  c.devices.push_back(display);
  std::string error;
  auto box = BridgeBox::Create(c, &error);
  ASSERT_NE(box, nullptr) << error;
  ManagementCounters counters;

  dxpu_mgmt_msg q = Request(DXPU_MGMT_SCREENSHOT, 1);
  q.body.screenshot_request = {0, 0};
  EXPECT_EQ(Ask(*box, q, &counters).status, DXPU_MGMT_NO_DISPLAY);
  q.body.screenshot_request = {9, 0};
  EXPECT_EQ(Ask(*box, q, &counters).status, DXPU_MGMT_NO_SUCH_DEVICE);

  std::vector<uint8_t> png, reply;
  uint32_t total = 0, frame = 0;
  int pieces = 0;
  do {
    q.body.screenshot_request = {1, static_cast<uint32_t>(png.size())};
    const dxpu_mgmt_msg r = Ask(*box, q, &counters, &reply);
    ASSERT_EQ(r.status, DXPU_MGMT_OK);
    ASSERT_EQ(r.body.screenshot.offset, png.size());
    if (pieces++ == 0) {
      total = r.body.screenshot.total;
      frame = r.body.screenshot.frame;
    }
    EXPECT_EQ(r.body.screenshot.total, total);
    EXPECT_EQ(r.body.screenshot.frame, frame);  // nothing changed the display meanwhile
    ASSERT_GT(r.body.screenshot.data_len, 0);
    png.insert(png.end(), r.body.screenshot.data,
               r.body.screenshot.data + r.body.screenshot.data_len);
  } while (png.size() < total);
  // 320 x 200 RGB stored: about 192 KB, so several datagrams.
  EXPECT_GT(pieces, 2);
  ASSERT_GE(png.size(), 24u);
  EXPECT_EQ(std::vector<uint8_t>(png.begin(), png.begin() + 8),
            (std::vector<uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}));
  // IHDR: width and height, big-endian, at bytes 16..23.
  auto be32 = [&](size_t at) {
    return uint32_t{png[at]} << 24 | uint32_t{png[at + 1]} << 16 | uint32_t{png[at + 2]} << 8 |
           png[at + 3];
  };
  EXPECT_EQ(be32(16), 320u);
  EXPECT_EQ(be32(20), 200u);
  // The end of the image is an empty piece; past it, refused.
  q.body.screenshot_request = {1, total};
  const dxpu_mgmt_msg end = Ask(*box, q, &counters, &reply);
  ASSERT_EQ(end.status, DXPU_MGMT_OK);
  EXPECT_EQ(end.body.screenshot.data_len, 0);
  q.body.screenshot_request = {1, total + 1};
  EXPECT_EQ(Ask(*box, q, &counters).status, DXPU_MGMT_BAD_ARGUMENT);
}

}  // namespace
}  // namespace dxpu::bridge
