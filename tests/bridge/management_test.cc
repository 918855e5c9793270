// management_test.cc - management datagrams applied to a bridge: ASSIGN, DMA_GRANT, STATUS,
// RELEASE and the errors, each answered with the status its effect deserves.
#include "bridge-fw/management.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace dxpu::bridge
