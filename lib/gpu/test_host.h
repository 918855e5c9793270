// test_host.h - an in-process host for any PCIe function (pcie::Function: the GPU model, a
// virtio device): host memory (sparse), a root port that
// answers the device's memory reads with completions split at RCB and MPS, applies its memory
// writes and records its MSI-X messages, and a driver side that enumerates the function and
// issues configuration and MMIO requests. It moves TLPs both ways with Receive/Poll and keeps
// a virtual clock that it advances to the device's NextDeadline when nothing else moves.
//
// For tests and benchmarks (and whoever wants to drive the model without a network): it
// trusts the device and stops (returns false) rather than looping when something never ends.
#ifndef DXPU_LIB_GPU_TEST_HOST_H_
#define DXPU_LIB_GPU_TEST_HOST_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/tlp_codec.h"
#include "gpu/owned_tlp.h"
#include "gpu/sparse_memory.h"
#include "pcie/function.h"

namespace dxpu::gpu {

struct TestHostOptions {
  uint16_t requester_id = 0x0000;  // the root port: Requester ID of the host's requests,
                                   // Completer ID of its completions
  uint32_t read_completion_boundary = 64;
  uint32_t max_payload = 256;       // the host's completions carry at most this; Enumerate
                                    // programs it as the function's MPS
  uint32_t max_read_request = 512;  // Enumerate programs it as the function's MRRS
  uint64_t memory_bytes = uint64_t{1} << 48;   // host memory, sparse
  uint64_t bar32_base = 0xd000'0000;           // where Enumerate places 32-bit BARs
  uint64_t bar64_base = uint64_t{0x40} << 32;  // ... and 64-bit BARs (each aligned to its size)
  uint64_t msix_address = 0xfee0'0000;         // every vector's message address; data = vector
  uint64_t read_latency_ns = 0;  // the device's memory reads are answered this long after they
                                 // reach the host (the clock advances to it); 0: at once
};

// How the host answers one of the device's memory reads.
enum class ReadAnswer : uint8_t {
  kComplete,        // CplDs with the data
  kUnsupported,     // a Cpl with UR
  kCompleterAbort,  // a Cpl with CA
  kHold,            // keep it: ReleaseHeld answers it later
  kIgnore,          // never answer
};

struct MsixMessage {
  uint64_t address = 0;
  uint32_t data = 0;
  uint64_t time = 0;
};

struct HostRead {
  uint8_t status = DXPU_TLP_CPL_SC;
  std::vector<uint8_t> data;
};

class TestHost {
 public:
  explicit TestHost(pcie::Function& device, const TestHostOptions& options = {});

  pcie::Function& device() { return device_; }
  SparseMemory& memory() { return memory_; }
  const TestHostOptions& options() const { return options_; }
  uint64_t now() const { return now_; }
  void set_now(uint64_t now) { now_ = now; }

  // --- Driver side (each waits for its completion, running the device meanwhile) ---

  // Configuration read of the DW holding `offset`, and a write of its bytes `size` (1, 2, 4)
  // bytes at `offset` (not crossing a DW). A refused request reads all-ones.
  uint32_t ConfigRead32(uint16_t offset);
  void ConfigWrite(uint16_t offset, uint32_t size, uint32_t value);
  // Places the BARs, sets MPS/MRRS (and Extended Tag), Memory Space and Bus Master, enables
  // MSI-X and programs and unmasks every vector (address msix_address, data = vector). It
  // finds the capabilities by walking the list with configuration reads, as a host does.
  void Enumerate();
  // The offset of the first capability with this 8-bit ID in the standard list, walked with
  // configuration reads (bounded: a looping list ends the walk).
  std::optional<uint16_t> FindCapability(uint8_t cap_id);
  // The BAR's address as Enumerate placed it (0 for a BAR the profile does not have).
  uint64_t bar_address(uint8_t bar) const;

  // A memory read of [address, address + length), inside one 4 KiB page, length 1..4096.
  HostRead MemRead(uint64_t address, uint32_t length);
  // A memory write of the bytes, inside one 4 KiB page (a posted write: no waiting).
  void MemWrite(uint64_t address, std::span<const uint8_t> bytes);
  // A 4-byte read or write at an offset in a BAR as Enumerate placed it; Mmio32*: BAR0.
  uint32_t BarRead32(uint8_t bar, uint64_t offset);
  void BarWrite32(uint8_t bar, uint64_t offset, uint32_t value);
  uint32_t Mmio32Read(uint64_t bar0_offset) { return BarRead32(0, bar0_offset); }
  void Mmio32Write(uint64_t bar0_offset, uint32_t value) { BarWrite32(0, bar0_offset, value); }
  // Any TLP, as is, to the device (now).
  void Send(const dxpu_tlp& tlp);

  // --- Running ---

  // Moves TLPs both ways at the current time until nothing moves; whether anything moved.
  bool Pump();
  // Pumps, advancing the clock to the device's NextDeadline whenever nothing moves, until
  // `done` holds (true), or nothing is left to do or the next deadline lies past
  // `time_limit` (then: whether `done` holds; always true without `done`).
  bool RunUntil(const std::function<bool()>& done, uint64_t time_limit = UINT64_MAX);
  bool RunUntilIdle(uint64_t time_limit = UINT64_MAX) { return RunUntil({}, time_limit); }

  // --- Hooks and what the host saw ---

  // Every TLP the device sends, before the host acts on it.
  std::function<void(const dxpu_tlp&)> on_device_tlp;
  // Every TLP the host gives the device (requests and completions), before Receive.
  std::function<void(const dxpu_tlp&)> on_host_tlp;
  // How to answer each of the device's memory reads (unset: kComplete).
  std::function<ReadAnswer(const dxpu_tlp&)> read_policy;
  // The most TLPs taken per Poll (back-pressure); 0: no limit.
  size_t take_limit = 0;

  size_t held_reads() const { return held_.size(); }
  // Answers the held reads (with their data, now; after read_latency_ns if set).
  void ReleaseHeld();
  const std::vector<MsixMessage>& msix_messages() const { return msix_; }
  uint64_t dropped_device_writes() const { return dropped_writes_; }

 private:
  void OnDeviceTlp(const dxpu_tlp& t);
  void Answer(const dxpu_tlp& mrd, ReadAnswer answer);
  // Queues an answer to one of the device's reads (now, or after read_latency_ns).
  void Deliver(OwnedTlp answer);
  void ApplyWrite(const dxpu_tlp& mwr);
  uint16_t NextTag() { return static_cast<uint16_t>(next_tag_++ % 256); }
  // Sends a non-posted request and runs until its last completion; its completions.
  std::vector<OwnedTlp> Request(dxpu_tlp request);

  pcie::Function& device_;
  TestHostOptions options_;
  SparseMemory memory_;
  uint64_t now_ = 0;
  uint32_t next_tag_ = 0;
  std::deque<OwnedTlp> to_device_;
  std::deque<std::pair<uint64_t, OwnedTlp>> delayed_;  // answers due at a time (read_latency_ns)
  std::deque<OwnedTlp> held_;
  std::map<uint16_t, std::vector<OwnedTlp>> completions_;  // for the host's requests, by tag
  std::map<uint16_t, bool> completed_;
  std::vector<MsixMessage> msix_;
  std::map<uint8_t, uint64_t> bar_addresses_;
  uint64_t dropped_writes_ = 0;
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_TEST_HOST_H_
