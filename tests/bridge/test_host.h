// test_host.h - a host for bridge tests: the initiator of a DxFP session to a bridge, host
// memory that the borrowed devices DMA into (answered as a host proxy does: inside a
// registered region, or UR), and requests (configuration, MMIO) whose answers it collects.
// Sans-IO like the Endpoint it wraps: frames in, frames out, the caller keeps the time.
#ifndef DXPU_TESTS_BRIDGE_TEST_HOST_H_
#define DXPU_TESTS_BRIDGE_TEST_HOST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/endpoint.h"

namespace dxpu::test {

// The answer to one request: status and data as the completions brought them.
struct HostRequest {
  bool done = false;
  uint8_t status = 0;         // DXPU_TLP_CPL_*: the first non-SC status, else SC
  std::vector<uint8_t> data;  // read data (bytes of the request, in address order)
  uint32_t received = 0;      // data bytes completed so far
};

struct Interrupt {
  uint64_t address = 0;
  uint32_t data = 0;
  uint64_t at = 0;
};

class TestHost {
 public:
  static constexpr uint16_t kRequesterId = 0x0000;  // the host's root port

  TestHost(uint64_t node_id, uint32_t session_id, const dxfp_session_config* base = nullptr);

  fabric::Endpoint& endpoint() { return *endpoint_; }
  void Connect(uint64_t now) { endpoint_->Connect(now); }
  bool established() const { return endpoint_->state() == DXFP_STATE_ESTABLISHED; }
  bool down() const { return endpoint_->state() == DXFP_STATE_DOWN; }

  // ---- host memory ----
  // A region devices may DMA into (and the host reads back). Zero-filled.
  void AddMemory(uint64_t base, uint64_t size);
  std::span<uint8_t> Memory(uint64_t addr, uint64_t size);
  // Writes landing in [base, base + size) are interrupts (MSI/MSI-X), recorded not stored.
  void SetInterruptRange(uint64_t base, uint64_t size) { msi_base_ = base, msi_size_ = size; }
  const std::vector<Interrupt>& interrupts() const { return interrupts_; }

  // ---- requests (each returns its id; request(id) has the answer once done) ----
  std::optional<uint32_t> CfgRead(uint16_t bdf, uint16_t reg);
  std::optional<uint32_t> CfgWrite(uint16_t bdf, uint16_t reg, uint32_t value, uint8_t be = 0xf);
  // A memory read of [addr, addr + len), one MRd (len <= 4096, no 4 KiB crossing).
  std::optional<uint32_t> MemRead(uint64_t addr, uint32_t len);
  // Posted: no answer.
  bool MemWrite(uint64_t addr, std::span<const uint8_t> bytes);
  bool MemWrite32(uint64_t addr, uint32_t value);
  const HostRequest& request(uint32_t id) const { return requests_.at(id); }
  size_t outstanding() const { return by_tag_.size(); }

  // Counters of what the host saw.
  // The most data one of its completions to a device's DMA read carries: 256 (the device's
  // MPS) or, as host proxies complete over the fabric, up to 4096 (the bridge splits them).
  uint32_t completion_payload = 256;
  uint64_t dma_reads = 0, dma_writes = 0, dma_refused = 0, unexpected_cpl = 0, ur_received = 0;
  uint64_t now_ns = 0;  // set by the driver before each call

 private:
  void Deliver(const dxpu_tlp& t);
  void AnswerRead(const dxpu_tlp& t);
  void ApplyWrite(const dxpu_tlp& t);
  void OnCompletion(const dxpu_tlp& t);
  std::optional<uint32_t> Issue(dxpu_tlp tlp, uint32_t expect_bytes);
  uint8_t* Find(uint64_t addr, uint64_t len);

  std::unique_ptr<fabric::Endpoint> endpoint_;
  std::map<uint64_t, std::vector<uint8_t>> memory_;  // base -> bytes
  uint64_t msi_base_ = 0, msi_size_ = 0;
  std::vector<Interrupt> interrupts_;
  std::map<uint32_t, HostRequest> requests_;
  std::map<uint16_t, uint32_t> by_tag_;  // tag -> request id
  uint16_t next_tag_ = 0;
  uint32_t next_id_ = 1;
};

}  // namespace dxpu::test

#endif  // DXPU_TESTS_BRIDGE_TEST_HOST_H_
