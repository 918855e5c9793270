// mgmt_fuzz.cc - libFuzzer target: management datagrams (lib/core/dxpu_mgmt.c) as a bridge
// takes them (bridge-fw/management.cc, applied to a BridgeBox of two model GPUs with a flash
// and its FirmwareService) and as a controller reads answers (bridge-fw/management_client.cc's
// decoders). The input is a sequence of pieces (fuzz_util.h), each one datagram; an odd op
// first signs an FW_BEGIN's image header again with the key the flash trusts (fuzz_key.h, whose
// key ID the seed corpus's headers carry) and puts an FW_CHUNK's CRC32C right, so the fuzzer
// reaches what lies behind those checks; an op with bit 1 set signs the datagram as a manager
// does (docs/protocol.md 15.8) with the fuzz key, which the bridge's authentication check
// trusts, at one of three epochs (bits 2-3), so the fence is reached with signatures that
// verify. Every datagram goes through that check, then to the handler whatever its verdict
// (so the handlers stay covered by the unsigned seed corpus), and also
// to the controller's decoders as if a bridge had answered it. A bridge answers every request
// it decodes with a response that decodes, to the same request ID (docs/fuzzing.md).
#include <unistd.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bridge-fw/firmware/firmware_service.h"
#include "bridge-fw/management.h"
#include "bridge-fw/management_auth.h"
#include "bridge-fw/management_client.h"
#include "core/crc32c.h"
#include "core/dxpu_mgmt.h"
#include "firmware_testutil.h"
#include "fuzz_box.h"
#include "fuzz_key.h"
#include "fuzz_util.h"

namespace {

namespace fw = dxpu::firmware;

void Check(bool ok, const char* what) { dxpu::fuzz::Require(ok, "mgmt_fuzz", what); }

// A flash trusting the fuzz key, with version 1.0.0 good in slot A, made once; each input
// works on a copy of it.
class FlashTemplate {
 public:
  FlashTemplate() {
    const std::string path = dir_.path("template");
    const fw::FactoryInfo factory = fw::testing::SmallFactory();
    auto flash =
        std::move(fw::FlashDevice::Create(
                      path, factory, fw::testing::TestKeyList({dxpu::fuzz::FuzzKey().public_key})))
            .value();
    const auto image =
        fw::testing::SignedImage(fw::FirmwareVersion::Of(1, 0, 0), 3000, 1, dxpu::fuzz::FuzzKey());
    Check(fw::testing::InstallGood(*flash, fw::Slot::kA, image).ok(),
          "cannot install the template flash's image");
  }
  // A fresh copy of the template flash.
  std::string Copy() const {
    const std::string path = dir_.path("flash");
    std::filesystem::copy_file(dir_.path("template"), path,
                               std::filesystem::copy_options::overwrite_existing);
    return path;
  }

 private:
  fw::testing::ScratchDir dir_;
};

const FlashTemplate* g_flash = nullptr;

// The datagram with an FW_BEGIN's header signed by the trusted key, or an FW_CHUNK's CRC right.
std::vector<uint8_t> Endorse(std::span<const uint8_t> datagram) {
  std::vector<uint8_t> out(datagram.begin(), datagram.end());
  dxpu_mgmt_msg m{};
  if (dxpu_mgmt_decode(datagram.data(), datagram.size(), &m) != DXPU_MGMT_ERR_OK) return out;
  std::array<uint8_t, fw::kHeaderBytes> header{};
  if (m.type == DXPU_MGMT_FW_BEGIN && !dxpu_mgmt_is_response(&m)) {
    std::copy_n(m.body.fw_begin.header, header.size(), header.begin());
    const fw::Signature sig =
        fw::Sign(std::span(header).first(fw::kSignedBytes), dxpu::fuzz::FuzzKey().secret_key);
    std::copy(sig.begin(), sig.end(), header.begin() + fw::kSignedBytes);
    m.body.fw_begin.header = header.data();
  } else if (m.type == DXPU_MGMT_FW_CHUNK && !dxpu_mgmt_is_response(&m)) {
    m.body.fw_chunk.crc = dxpu_crc32c(0, m.body.fw_chunk.data, m.body.fw_chunk.length);
  } else {
    return out;
  }
  std::vector<uint8_t> encoded(out.size() + DXPU_MGMT_HDR_SIZE);
  size_t len = 0;
  if (dxpu_mgmt_encode(&m, encoded.data(), encoded.size(), &len) != DXPU_MGMT_ERR_OK) return out;
  encoded.resize(len);
  return encoded;
}

// The datagram signed by `signer` (its flag and record replaced), as a controller sends it; as
// it was when it does not decode or is a response.
std::vector<uint8_t> Signed(std::span<const uint8_t> datagram,
                            dxpu::bridge::ManagementSigner& signer) {
  std::vector<uint8_t> out(datagram.begin(), datagram.end());
  dxpu_mgmt_msg m{};
  if (dxpu_mgmt_decode(datagram.data(), datagram.size(), &m) != DXPU_MGMT_ERR_OK ||
      dxpu_mgmt_is_response(&m))
    return out;
  m.flags = static_cast<uint16_t>(m.flags & ~DXPU_MGMT_F_SIGNED);
  signer.Prepare(&m);
  std::vector<uint8_t> encoded(DXPU_MGMT_MAX_MSG);
  size_t len = 0;
  if (dxpu_mgmt_encode(&m, encoded.data(), encoded.size(), &len) != DXPU_MGMT_ERR_OK) return out;
  encoded.resize(len);
  signer.Sign(encoded);
  return encoded;
}

// The bridge's authentication check: a refusal is an answer to the same request.
void Authenticate(dxpu::bridge::ManagementAuthenticator& auth, std::span<const uint8_t> datagram,
                  uint64_t now) {
  dxpu::bridge::ManagementCounters counters;
  dxpu::util::RateLimitedLog log(1'000'000'000, 5);
  const std::optional<std::vector<uint8_t>> refused =
      dxpu::bridge::CheckAuthentication(auth, datagram, now, &counters, &log);
  if (!refused) return;
  dxpu_mgmt_msg request{}, answer{};
  Check(dxpu_mgmt_decode(datagram.data(), datagram.size(), &request) == DXPU_MGMT_ERR_OK,
        "a datagram that does not decode was refused by its authentication");
  Check(dxpu_mgmt_decode(refused->data(), refused->size(), &answer) == DXPU_MGMT_ERR_OK,
        "an authentication refusal does not decode");
  Check(dxpu_mgmt_is_response(&answer) && answer.request_id == request.request_id &&
            answer.status != DXPU_MGMT_OK,
        "an authentication refusal is not a refusal of the same request");
  Check(dxpu_mgmt_changes_state(request.type) || dxpu_mgmt_is_signed(&request),
        "an unsigned read-only request was refused");
}

// The datagram as a controller's client reads an answer.
void AsAnswer(std::span<const uint8_t> datagram) {
  dxpu::bridge::ManagementReply reply;
  reply.bytes.assign(datagram.begin(), datagram.end());
  if (dxpu_mgmt_decode(reply.bytes.data(), reply.bytes.size(), &reply.msg) != DXPU_MGMT_ERR_OK)
    return;
  std::string why;
  (void)dxpu::bridge::DecodeInventory(reply, &why);
  (void)dxpu::bridge::DecodeDmaList(reply, &why);
  (void)dxpu::bridge::DecodeFwReport(reply, &why);
  (void)reply.Problem();
  (void)dxpu::bridge::RefusalSentence(reply.msg.status);
}

void AsRequest(dxpu::bridge::BridgeBox& box, fw::FirmwareService* firmware,
               std::span<const uint8_t> datagram, uint64_t now) {
  dxpu::bridge::ManagementCounters counters;
  const std::vector<uint8_t> reply =
      dxpu::bridge::HandleManagement(box, datagram, now, &counters, firmware);
  dxpu_mgmt_msg request{};
  const dxpu_mgmt_err err = dxpu_mgmt_decode(datagram.data(), datagram.size(), &request);
  if (reply.empty()) return;
  dxpu_mgmt_msg answer{};
  Check(dxpu_mgmt_decode(reply.data(), reply.size(), &answer) == DXPU_MGMT_ERR_OK,
        "the bridge's answer does not decode");
  Check(dxpu_mgmt_is_response(&answer), "the bridge answered with a request");
  if (err != DXPU_MGMT_ERR_SHORT && err != DXPU_MGMT_ERR_BAD_MAGIC)
    Check(answer.request_id == request.request_id, "the answer names another request");
  AsAnswer(reply);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dxpu::fuzz::QuietLogs();
  static const FlashTemplate flash;
  g_flash = &flash;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto box = dxpu::fuzz::MakeFuzzBox();
  auto firmware = fw::FirmwareService::Open(g_flash->Copy(), fw::Slot::kA);
  Check(firmware.ok(), "cannot open the flash copy");
  dxpu::fuzz::PieceReader reader({data, size});
  dxpu::fuzz::PieceReader::Piece piece;
  dxpu::bridge::ManagementAuthenticator auth({dxpu::fuzz::FuzzKey().public_key}, false);
  std::array<std::unique_ptr<dxpu::bridge::ManagementSigner>, 3> signers;
  for (size_t i = 0; i < signers.size(); ++i)
    signers[i] =
        std::make_unique<dxpu::bridge::ManagementSigner>(dxpu::fuzz::FuzzKey().secret_key, 1 + i);
  uint64_t now = 1000;
  for (int n = 0; n < 64 && reader.Next(&piece); ++n) {
    AsAnswer(piece.bytes);
    std::vector<uint8_t> datagram =
        piece.op & 1 ? Endorse(piece.bytes)
                     : std::vector<uint8_t>(piece.bytes.begin(), piece.bytes.end());
    if (piece.op & 2) datagram = Signed(datagram, *signers[(piece.op >> 2) % signers.size()]);
    Authenticate(auth, datagram, now);
    AsRequest(*box, firmware.value().get(), datagram, now);
    now += 1'000'000;
  }
  return 0;
}
