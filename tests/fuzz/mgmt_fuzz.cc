// mgmt_fuzz.cc - libFuzzer target: management datagrams (lib/core/dxpu_mgmt.c) as a bridge
// takes them (bridge-fw/management.cc, applied to a BridgeBox of two model GPUs with a flash
// and its FirmwareService) and as a controller reads answers (bridge-fw/management_client.cc's
// decoders). The input is a sequence of pieces (fuzz_util.h), each one datagram; an odd op
// first signs an FW_BEGIN's image header again with the key the flash trusts (fuzz_key.h, whose
// key ID the seed corpus's headers carry) and puts an FW_CHUNK's CRC32C right, so the fuzzer
// reaches what lies behind those checks. Every datagram also goes
// to the controller's decoders as if a bridge had answered it. A bridge answers every request
// it decodes with a response that decodes, to the same request ID (docs/fuzzing.md).
#include <unistd.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bridge-fw/firmware/firmware_service.h"
#include "bridge-fw/management.h"
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
  uint64_t now = 1000;
  for (int n = 0; n < 64 && reader.Next(&piece); ++n) {
    AsAnswer(piece.bytes);
    if (piece.op & 1) {
      AsRequest(*box, firmware.value().get(), Endorse(piece.bytes), now);
    } else {
      AsRequest(*box, firmware.value().get(), piece.bytes, now);
    }
    now += 1'000'000;
  }
  return 0;
}
