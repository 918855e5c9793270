// host_keys_test.cc - the hosts a bridge with identity lets in, set and removed at runtime by
// signed management messages (HOST_KEY_SET, HOST_KEY_REMOVE; docs/protocol.md 15.9), and its
// fabric public key in INVENTORY. A key applies from the next HELLO: a live session opened with
// the old key keeps working through a rotation and a removal; the next HELLO needs the new key,
// and after removal none opens. Bad keys, node 0, a key bound to another node, unsigned
// requests and a bridge without identity are refused and counted.
#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <vector>

#include "box_world.h"
#include "bridge-fw/firmware/signing.h"
#include "bridge-fw/management.h"
#include "bridge-fw/management_auth.h"
#include "bridge-fw/management_client.h"
#include "core/dxpu_mgmt.h"
#include "crypto/fabric_keys.h"

namespace dxpu::test::host_keys {
namespace {

using bridge::HelloRefusal;
using crypto::KeyPair;
using crypto::NewKeyPair;

constexpr uint64_t kHost = 0x1111, kOtherHost = 0x2222;
constexpr uint16_t kHostBdf = 0x0100;

// A bridge whose identity lists no hosts: the manager provisions them.
bridge::BridgeBoxConfig BoxConfig(const std::optional<KeyPair>& bridge_keys) {
  if (!bridge_keys) return OneGpuBoxConfig();
  bridge::BoxIdentity id;
  id.keys = *bridge_keys;
  return OneGpuBoxConfig(id);
}

dxfp_session_config HostSession(const KeyPair& host, const crypto::Key& bridge_public) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  crypto::SetHostAuth(&c, host, bridge_public);
  return c;
}

dxpu_mgmt_msg HostKeySet(uint32_t id, uint64_t node, const crypto::Key& key) {
  dxpu_mgmt_msg m{};
  m.type = DXPU_MGMT_HOST_KEY_SET;
  m.request_id = id;
  m.body.host_key.node_id = node;
  std::copy(key.begin(), key.end(), m.body.host_key.public_key);
  return m;
}

dxpu_mgmt_msg HostKeyRemove(uint32_t id, uint64_t node) {
  dxpu_mgmt_msg m{};
  m.type = DXPU_MGMT_HOST_KEY_REMOVE;
  m.request_id = id;
  m.body.host_key.node_id = node;
  return m;
}

std::vector<uint8_t> Encode(const dxpu_mgmt_msg& m) {
  std::vector<uint8_t> buf(DXPU_MGMT_MAX_MSG);
  size_t len = 0;
  EXPECT_EQ(dxpu_mgmt_encode(&m, buf.data(), buf.size(), &len), DXPU_MGMT_ERR_OK);
  buf.resize(len);
  return buf;
}

// The bridge's management path as the daemon runs it: authentication first, then the request.
class ManagedBox {
 public:
  explicit ManagedBox(bridge::BridgeBox* box)
      : box_(box),
        manager_keys_(firmware::GenerateKeyPair()),
        auth_({manager_keys_.public_key}, false),
        signer_(manager_keys_.secret_key, 1) {}

  // The status of the answer to `m`, signed by the trusted manager key or sent unsigned.
  uint16_t Ask(dxpu_mgmt_msg m, bool sign = true, std::vector<uint8_t>* reply = nullptr) {
    std::vector<uint8_t> bytes;
    if (sign) {
      signer_.Prepare(&m);
      bytes = Encode(m);
      signer_.Sign(bytes);
    } else {
      bytes = Encode(m);
    }
    std::vector<uint8_t> out;
    if (auto refused = bridge::CheckAuthentication(auth_, bytes, 0, &counters_, &log_)) {
      out = std::move(*refused);
    } else {
      out = bridge::HandleManagement(*box_, bytes, 0, &counters_);
    }
    dxpu_mgmt_msg r{};
    EXPECT_EQ(dxpu_mgmt_decode(out.data(), out.size(), &r), DXPU_MGMT_ERR_OK);
    EXPECT_EQ(r.type, m.type);
    if (reply != nullptr) *reply = out;
    return r.status;
  }
  const bridge::ManagementCounters& counters() const { return counters_; }

 private:
  bridge::BridgeBox* box_;
  firmware::KeyPair manager_keys_;
  bridge::ManagementAuthenticator auth_;
  bridge::ManagementSigner signer_;
  bridge::ManagementCounters counters_;
  util::RateLimitedLog log_{1'000'000'000, 4};
};

uint64_t Refused(bridge::BridgeBox& box, HelloRefusal r) {
  return box.hello_refusals()[static_cast<size_t>(r)];
}

crypto::Key KeyFromHex(const char* hex) {
  crypto::Key k{};
  for (size_t i = 0; i < k.size(); ++i) {
    unsigned v = 0;
    sscanf(hex + 2 * i, "%2x", &v);  // NOLINT(cert-err34-c): test constants
    k[i] = static_cast<uint8_t>(v);
  }
  return k;
}

TEST(HostKeys, OnlyASignedRequestSetsAKeyAndBadOnesAreRefusedAndCounted) {
  const KeyPair bridge_keys = NewKeyPair();
  std::string error;
  auto box = bridge::BridgeBox::Create(BoxConfig(bridge_keys), &error);
  ASSERT_NE(box, nullptr) << error;
  ManagedBox m(box.get());
  const KeyPair host = NewKeyPair(), other = NewKeyPair();

  EXPECT_EQ(m.Ask(HostKeySet(1, kHost, host.pub), false), DXPU_MGMT_UNAUTHENTICATED);
  EXPECT_EQ(m.Ask(HostKeyRemove(2, kHost), false), DXPU_MGMT_UNAUTHENTICATED);
  EXPECT_EQ(box->host_keys(), 0u);
  EXPECT_EQ(m.Ask(HostKeySet(3, kHost, host.pub)), DXPU_MGMT_OK);
  EXPECT_EQ(m.Ask(HostKeySet(4, kHost, host.pub)), DXPU_MGMT_OK);  // again: the same
  EXPECT_EQ(box->host_keys(), 1u);
  const uint64_t refused_before = m.counters().refused;

  // Not keys a host can have: zero, low-order points (order 4 and 8), bit 255 set.
  crypto::Key top = host.pub;
  top[31] |= 0x80;
  for (const crypto::Key& bad : {crypto::Key{},
                                 KeyFromHex("01000000000000000000000000000000"
                                            "00000000000000000000000000000000"),
                                 KeyFromHex("e0eb7a7c3b41b8ae1656e3faf19fc46a"
                                            "da098deb9c32b1fd866205165f49b800"),
                                 top})
    EXPECT_EQ(m.Ask(HostKeySet(5, kOtherHost, bad)), DXPU_MGMT_BAD_ARGUMENT) << crypto::KeyHex(bad);
  EXPECT_EQ(m.Ask(HostKeySet(6, 0, other.pub)), DXPU_MGMT_BAD_ARGUMENT);  // node 0
  EXPECT_EQ(m.Ask(HostKeyRemove(7, 0)), DXPU_MGMT_BAD_ARGUMENT);
  // One key is one host's: bound to kHost, it cannot be kOtherHost's.
  EXPECT_EQ(m.Ask(HostKeySet(8, kOtherHost, host.pub)), DXPU_MGMT_KEY_IN_USE);
  EXPECT_EQ(m.counters().refused, refused_before + 7);
  EXPECT_EQ(box->host_keys(), 1u);

  // A datagram whose key is cut short is malformed (and refused before the signature).
  std::vector<uint8_t> cut = Encode(HostKeySet(9, kHost, other.pub));
  cut.pop_back();
  dxpu_put_be16(&cut[DXPU_MGMT_OFF_BODY_LENGTH], DXPU_MGMT_HOST_KEY_SET_SIZE - 1);
  bridge::ManagementCounters c;
  const std::vector<uint8_t> reply = bridge::HandleManagement(*box, cut, 0, &c);
  dxpu_mgmt_msg r{};
  ASSERT_EQ(dxpu_mgmt_decode(reply.data(), reply.size(), &r), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(r.status, DXPU_MGMT_MALFORMED);

  EXPECT_EQ(m.Ask(HostKeyRemove(10, kHost)), DXPU_MGMT_OK);
  EXPECT_EQ(m.Ask(HostKeyRemove(11, kHost)), DXPU_MGMT_OK);  // again: nothing to remove, OK
  EXPECT_EQ(box->host_keys(), 0u);
  // Removed, the key may be bound again, to another node.
  EXPECT_EQ(m.Ask(HostKeySet(12, kOtherHost, host.pub)), DXPU_MGMT_OK);
}

TEST(HostKeys, ABridgeWithoutIdentityListsNoKeysAndItsInventoryHasNone) {
  std::string error;
  auto box = bridge::BridgeBox::Create(BoxConfig(std::nullopt), &error);
  ASSERT_NE(box, nullptr) << error;
  ManagedBox m(box.get());
  EXPECT_EQ(m.Ask(HostKeySet(1, kHost, NewKeyPair().pub)), DXPU_MGMT_NO_IDENTITY);
  EXPECT_EQ(m.Ask(HostKeyRemove(2, kHost)), DXPU_MGMT_NO_IDENTITY);
  EXPECT_EQ(m.counters().refused, 2u);
  dxpu_mgmt_msg inv{};
  inv.type = DXPU_MGMT_INVENTORY;
  bridge::ManagementReply reply;
  ASSERT_EQ(m.Ask(inv, false, &reply.bytes), DXPU_MGMT_OK);
  ASSERT_EQ(dxpu_mgmt_decode(reply.bytes.data(), reply.bytes.size(), &reply.msg), DXPU_MGMT_ERR_OK);
  const auto decoded = bridge::DecodeInventory(reply);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_FALSE(decoded->fabric_key.has_value());
  EXPECT_EQ(decoded->devices.size(), 1u);
}

TEST(HostKeys, TheInventoryCarriesTheBridgesFabricPublicKey) {
  const KeyPair bridge_keys = NewKeyPair();
  std::string error;
  auto box = bridge::BridgeBox::Create(BoxConfig(bridge_keys), &error);
  ASSERT_NE(box, nullptr) << error;
  ManagedBox m(box.get());
  dxpu_mgmt_msg inv{};
  inv.type = DXPU_MGMT_INVENTORY;
  bridge::ManagementReply reply;
  ASSERT_EQ(m.Ask(inv, false, &reply.bytes), DXPU_MGMT_OK);  // read-only: no signature needed
  ASSERT_EQ(dxpu_mgmt_decode(reply.bytes.data(), reply.bytes.size(), &reply.msg), DXPU_MGMT_ERR_OK);
  const auto decoded = bridge::DecodeInventory(reply);
  ASSERT_TRUE(decoded.has_value());
  ASSERT_TRUE(decoded->fabric_key.has_value());
  EXPECT_EQ(*decoded->fabric_key, bridge_keys.pub);
  EXPECT_EQ(decoded->node_id, 0xb0c5u);
  ASSERT_EQ(decoded->devices.size(), 1u);
  EXPECT_EQ(decoded->devices[0].profile, "dxgpu");
}

// A host's sessions through provisioning, rotation and removal, on a bridge whose identity
// lists no hosts.
class HostKeySessions : public ::testing::Test {
 protected:
  void SetUp() override {
    world_ = std::make_unique<BoxWorld>(BoxConfig(bridge_keys_), Transport::kMemoryLink);
    managed_ = std::make_unique<ManagedBox>(&world_->box());
  }

  // A new session of kHost with `key`: whether it is established.
  TestHost& Attach(const KeyPair& key) {
    configs_.push_back(std::make_unique<dxfp_session_config>(HostSession(key, bridge_keys_.pub)));
    world_->RunFor(1'000'000);  // each HELLO's timestamp above the one before
    TestHost& h = world_->AddHost(kHost, configs_.back().get());
    h.Connect(world_->now());
    world_->RunUntil([&] { return h.established() || h.down(); }, 50'000'000);
    return h;
  }

  void ExpectWorks(TestHost& h) {
    ASSERT_FALSE(h.down());
    const auto id = world_->CfgRead(h, kHostBdf, 0);
    ASSERT_TRUE(id.has_value()) << "the host lost its device";
    EXPECT_EQ(*id & 0xffff, gpu::FindProfile("dxgpu")->vendor_id);
  }

  uint64_t UnknownKey() { return Refused(world_->box(), HelloRefusal::kUnknownKey); }

  KeyPair bridge_keys_ = NewKeyPair();
  KeyPair first_ = NewKeyPair(), second_ = NewKeyPair();
  std::unique_ptr<BoxWorld> world_;
  std::unique_ptr<ManagedBox> managed_;
  std::vector<std::unique_ptr<dxfp_session_config>> configs_;
};

TEST_F(HostKeySessions, AKeyLetsTheHostInARotationKeepsItsSessionAndARemovalEndsTheNextHello) {
  // Not provisioned: the HELLO is refused, unknown-key.
  // (A refused host sends its HELLO again and again: each is refused the same way.)
  TestHost& unprovisioned = Attach(first_);
  EXPECT_FALSE(unprovisioned.established());
  EXPECT_GE(UnknownKey(), 1u);

  ASSERT_EQ(managed_->Ask(HostKeySet(1, kHost, first_.pub)), DXPU_MGMT_OK);
  TestHost& live = Attach(first_);
  ASSERT_TRUE(live.established());
  ASSERT_EQ(world_->box().Assign(0, kHost, kHostBdf), bridge::ManageResult::kOk);
  ExpectWorks(live);

  // Rotation: the node's new key. The live session, opened with the old key, keeps working.
  ASSERT_EQ(managed_->Ask(HostKeySet(2, kHost, second_.pub)), DXPU_MGMT_OK);
  ExpectWorks(live);
  EXPECT_EQ(world_->box().host_keys(), 1u);
  // The next HELLO with the old key is refused; the live session is not disturbed by it.
  uint64_t refused = UnknownKey();
  TestHost& stale = Attach(first_);
  EXPECT_FALSE(stale.established());
  EXPECT_GT(UnknownKey(), refused);
  ExpectWorks(live);
  // The new key opens the next session, which takes the device over.
  TestHost& rotated = Attach(second_);
  ASSERT_TRUE(rotated.established());
  ExpectWorks(rotated);
  ASSERT_TRUE(world_->RunUntil([&] { return live.down(); }, 100'000'000));

  // Removal: the live session stays; the next HELLO, even with the current key, is refused.
  ASSERT_EQ(managed_->Ask(HostKeyRemove(3, kHost)), DXPU_MGMT_OK);
  EXPECT_EQ(world_->box().host_keys(), 0u);
  ExpectWorks(rotated);
  refused = UnknownKey();
  TestHost& removed = Attach(second_);
  EXPECT_FALSE(removed.established());
  EXPECT_GT(UnknownKey(), refused);
  ExpectWorks(rotated);
  EXPECT_EQ(world_->box().Devices()[0].owner_node, kHost);
}

}  // namespace
}  // namespace dxpu::test::host_keys
