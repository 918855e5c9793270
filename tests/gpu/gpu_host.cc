// gpu_host.cc - the GPU model's test rig and TLP stream checker.
#include "gpu_host.h"

#include <cstring>
#include <stdexcept>

#include "gpu/gpu_registers.h"
#include "tlp_testutil.h"

namespace dxpu::gpu::test {
namespace {

std::string Describe(const dxpu_tlp& t) {
  char buf[256];
  dxpu_tlp_format(&t, buf, sizeof(buf));
  return buf;
}

bool Crosses4k(uint64_t address, uint64_t length) {
  return length > 0 && address / 4096 != (address + length - 1) / 4096;
}

}  // namespace

void TlpStreamChecker::Violation(const std::string& what) {
  if (violations_.size() < 20) violations_.push_back(what);
}

void TlpStreamChecker::OnDeviceTlp(const dxpu_tlp& t) {
  const ConfigSpace& config = device_.config();
  const GpuOptions& o = device_.options();
  if (dxpu_tlp_validate(&t) != DXPU_TLP_OK) {
    Violation("invalid TLP: " + Describe(t));
    return;
  }
  const uint64_t span = uint64_t{t.length_dw} * 4;
  switch (t.kind) {
    case DXPU_TLP_MRD:
      ++reads_;
      if (t.requester_id != o.requester_id) Violation("MRd requester: " + Describe(t));
      if (span > config.max_read_request_size()) Violation("MRd above MRRS: " + Describe(t));
      if (Crosses4k(t.addr, span)) Violation("MRd crosses 4 KiB: " + Describe(t));
      if (t.tag >= o.max_outstanding_reads) Violation("MRd tag out of range: " + Describe(t));
      if (in_flight_.contains(t.tag)) Violation("MRd tag reused in flight: " + Describe(t));
      in_flight_[t.tag] = true;
      max_in_flight_ = std::max(max_in_flight_, in_flight_.size());
      if (in_flight_.size() > o.max_outstanding_reads) Violation("too many reads in flight");
      break;
    case DXPU_TLP_MWR:
      if (t.requester_id != o.requester_id) Violation("MWr requester: " + Describe(t));
      if (t.addr == msix_address) break;
      ++writes_;
      if (span > config.max_payload_size()) Violation("MWr above MPS: " + Describe(t));
      if (Crosses4k(t.addr, span)) Violation("MWr crosses 4 KiB: " + Describe(t));
      break;
    case DXPU_TLP_CPL:
    case DXPU_TLP_CPLD:
      if (t.completer_id != o.requester_id) Violation("completer ID: " + Describe(t));
      if (span > config.max_payload_size()) Violation("CplD above MPS: " + Describe(t));
      break;
    default:
      Violation("unexpected kind: " + Describe(t));
  }
}

void TlpStreamChecker::OnHostTlp(const dxpu_tlp& t) {
  if (dxpu_tlp_kind_is_cpl(t.kind) && dxpu_tlp_cpl_is_final(&t)) in_flight_.erase(t.tag);
}

GpuRig::GpuRig(const RigOptions& options) : options_(options) {
  std::optional<DeviceProfile> profile = FindProfile(options.profile);
  if (!profile) throw std::runtime_error("no profile " + options.profile);
  std::string error;
  device_ = GpuDevice::Create(*profile, options.gpu, &error);
  if (!device_) throw std::runtime_error(error);
  host_ = std::make_unique<TestHost>(*device_, options.host);
  checker_ = std::make_unique<TlpStreamChecker>(*device_);
  checker_->msix_address = options.host.msix_address;
  host_->on_device_tlp = [this](const dxpu_tlp& t) { checker_->OnDeviceTlp(t); };
  host_->on_host_tlp = [this](const dxpu_tlp& t) { checker_->OnHostTlp(t); };
}

void GpuRig::Start() {
  host_->Enumerate();
  SetReg(regs::kGpfifoBaseLo, static_cast<uint32_t>(kRingAddress));
  SetReg(regs::kGpfifoBaseHi, static_cast<uint32_t>(kRingAddress >> 32));
  SetReg(regs::kGpfifoEntries, options_.ring_entries);
  SetReg(regs::kControl, regs::kControlEnable);
  put_ = 0;
}

uint32_t GpuRig::SubmitEntry(const GpfifoEntry& entry) {
  const uint32_t index = put_;
  HostWrite(kRingAddress + uint64_t{index} * kGpfifoEntryBytes, EncodeGpfifoEntry(entry));
  put_ = (put_ + 1) % options_.ring_entries;
  SetReg(regs::kGpPut, put_);
  return index;
}

uint32_t GpuRig::Submit(const PushbufferBuilder& pushbuffer) {
  const std::vector<uint8_t> bytes = pushbuffer.bytes();
  const uint64_t address = next_pushbuffer_;
  next_pushbuffer_ += (bytes.size() + 255) / 256 * 256 + 256;
  HostWrite(address, bytes);
  return SubmitEntry(
      {.pushbuffer = address, .length = static_cast<uint32_t>(bytes.size()), .flags = 0});
}

void GpuRig::HostWrite(uint64_t address, std::span<const uint8_t> bytes) {
  if (!host_->memory().Write(address, bytes)) throw std::runtime_error("host write out of range");
}

std::vector<uint8_t> GpuRig::HostRead(uint64_t address, uint64_t length) {
  std::vector<uint8_t> out(length);
  if (!host_->memory().Read(address, out)) throw std::runtime_error("host read out of range");
  return out;
}

uint64_t GpuRig::HostRead64(uint64_t address) {
  const std::vector<uint8_t> b = HostRead(address, 8);
  uint64_t v = 0;
  std::memcpy(&v, b.data(), 8);
  return v;
}

uint32_t GpuRig::HostRead32(uint64_t address) {
  const std::vector<uint8_t> b = HostRead(address, 4);
  uint32_t v = 0;
  std::memcpy(&v, b.data(), 4);
  return v;
}

void GpuRig::DeviceWrite(uint64_t offset, std::span<const uint8_t> bytes) {
  if (!device_->WriteMemory(offset, bytes)) throw std::runtime_error("device write out of range");
}

std::vector<uint8_t> GpuRig::DeviceRead(uint64_t offset, uint64_t length) {
  std::vector<uint8_t> out(length);
  if (!device_->ReadMemory(offset, out)) throw std::runtime_error("device read out of range");
  return out;
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t r = rng();
    std::memcpy(&v[i], &r, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

std::vector<float> RandomFloats(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

std::vector<uint8_t> FloatBytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> BytesToFloats(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

uint64_t Seed() { return dxpu::test::test_seed(); }

}  // namespace dxpu::gpu::test
