// function.h - a PCIe function behind the bridge, as the box's data plane sees it: the
// reference for the device layer (docs/bridge.md, "The device layer").
//
// Sans-IO, like the rest of the box: TLPs go in (Receive), TLPs come out (Poll), time is the
// caller's. A function is one endpoint on the box's PCIe, at the BDF its factory gave it:
//   - in:  configuration requests (CfgRd0/CfgWr0) to it, memory requests to its BARs, and the
//          completions of its own DMA reads. Anything else it counts and drops (or answers UR
//          if non-posted), as a PCIe completer does; it validates what it is given.
//   - out: what it sends, in its order: completions of the requests it took, DMA reads and
//          writes, MSI/MSI-X writes. Poll offers them one at a time; the caller may refuse one
//          (back-pressure) and is offered it again on the next Poll.
//   - configuration space, read and written by the box itself (not over the bus): the bridge
//     programs the BARs where the box placed them, keeps a host's view of them in its shadow
//     (virtual_bars.h) and intercepts what the host must not change; BAR decode info; the
//     offsets of the registers the bridge drives (PCI Express capability, Resizable BAR).
//   - reset: Function Level Reset, hot reset, and the release reset (reset and scrub: nothing
//     of one tenant is left for the next).
//   - its next deadline (timers that run without a TLP: DMA completion timeouts, engines),
//     identity and counters for status.
//
// Not thread-safe, not re-entrant: `emit` must not call back into the function. What only one
// kind of device has (a GPU's memory, its channel) stays on that kind's class, reached through
// a checked downcast by the few callers that need it (gpu::AsGpu).
//
//   std::unique_ptr<pcie::Function> f = /* a factory: BridgeBox's MakeFunction, ... */;
//   f->ConfigWriteDw(0x10, bar0_address, 0xf);        // place BAR0
//   f->Receive(mrd, now);                             // a request from the bus
//   f->Poll(now, [&](const dxpu_tlp& t) { return send(t); });
//   wake at f->NextDeadline(), Poll again.
#ifndef DXPU_LIB_PCIE_FUNCTION_H_
#define DXPU_LIB_PCIE_FUNCTION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tlp_codec.h"

namespace dxpu::pcie {

// A Base Address Register as it decodes now.
struct Bar {
  uint8_t index = 0;
  uint64_t address = 0;  // decoded: 64-bit for a 64-bit BAR, flag bits removed
  uint64_t size = 0;     // current size (a Resizable BAR may have changed it)
  bool is_64bit = false;
  bool prefetchable = false;

  bool operator==(const Bar&) const = default;
};

// Where the registers the bridge drives sit in configuration space; 0: absent.
struct ConfigLayout {
  uint16_t pcie_cap = 0;     // PCI Express capability (Device Control: MPS, Initiate FLR)
  uint16_t rebar_begin = 0;  // Resizable BAR capability's registers, [begin, end)
  uint16_t rebar_end = 0;
};

// What a function is, for status lines.
struct Identity {
  std::string kind;  // "gpu", ...
  std::string name;  // its model (a GPU's profile name)
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint64_t memory_bytes = 0;  // memory behind its BARs that a release scrubs; 0: none
};

enum class ResetKind : uint8_t {
  kFunctionLevel,  // FLR, as an Initiate FLR write to Device Control does
  kHot,            // conventional reset of the function (a hot reset of its link)
  kRelease,        // the box takes it back: FLR, then every byte of its memory zeroed
};

// The counters every function keeps as a PCIe endpoint (what a kind adds is its own, in a
// struct derived from this one); VisitFunctionCounters names them for status and metrics.
struct FunctionCounters {
  uint64_t tlps_in = 0;                 // every TLP Receive was given
  uint64_t tlps_out = 0;                // every TLP Poll's caller took
  uint64_t malformed = 0;               // refused: fails dxpu_tlp_validate, poisoned, or a
                                        // completion that disagrees with its read
  uint64_t ur_sent = 0;                 // Unsupported Request completions sent
  uint64_t unsupported = 0;             // TLPs of kinds the function does not take (messages,
                                        // type 1 configuration): dropped, or UR when non-posted
  uint64_t unexpected_completions = 0;  // no read in flight with that tag: dropped
  uint64_t completion_timeouts = 0;     // its DMA reads unanswered in time
  uint64_t dropped_writes = 0;          // memory writes no BAR claims
  uint64_t dma_read_requests = 0;       // memory reads sent
  uint64_t dma_write_requests = 0;      // memory writes sent (not MSI-X)
  uint64_t interrupts_sent = 0;         // MSI-X messages sent
};

class Function {
 public:
  using Emit = std::function<bool(const dxpu_tlp&)>;
  using CounterVisitor = std::function<void(std::string_view name, uint64_t value)>;

  Function() = default;
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;
  Function(Function&&) = delete;
  Function& operator=(Function&&) = delete;
  virtual ~Function();

  // ---- TLPs ----
  // A TLP from the box's PCIe (untrusted: the function validates it).
  virtual void Receive(const dxpu_tlp& tlp, uint64_t now) = 0;
  // Receive() of a TLP known to pass dxpu_tlp_validate (a piece the caller cut with lib/core's
  // split routines from one that passed): the function need not check it again.
  virtual void ReceiveValidated(const dxpu_tlp& tlp, uint64_t now) { Receive(tlp, now); }
  // A validated CplD above max_payload_size(), which the box's PCIe carries as `pieces` TLPs
  // split at the RCB and MPS: true if the function took it whole, with the result the pieces
  // would have had; false (the default) and nothing done: the caller delivers the pieces.
  virtual bool ReceiveSplitCompletion(const dxpu_tlp& cpld, uint32_t pieces, uint64_t now);
  // Offers what the function sends now, in order; `emit` returns false to stop (that TLP is
  // offered again next time). tlp.payload is valid during the call only. Returns how many
  // were taken.
  virtual size_t Poll(uint64_t now, const Emit& emit) = 0;
  // When Poll next has something to do because time passed; UINT64_MAX: never. Work ready
  // now is found by calling Poll.
  virtual uint64_t NextDeadline() const = 0;

  // ---- configuration space (the box's own access, not a TLP) ----
  // The DW holding byte offset `reg` (0..0xfff); a write of the bytes `byte_enables` selects,
  // with the register semantics of a configuration write (read-only bits, RW1C, FLR).
  virtual uint32_t ConfigReadDw(uint16_t reg) const = 0;
  virtual void ConfigWriteDw(uint16_t reg, uint32_t value, uint8_t byte_enables) = 0;
  virtual ConfigLayout layout() const = 0;
  // Its BARs as they decode now, by index.
  virtual std::vector<Bar> Bars() const = 0;
  // Max Payload Size from Device Control: the largest TLP payload it takes or sends.
  virtual uint32_t max_payload_size() const = 0;

  // ---- reset ----
  // Returns the bytes of memory scrubbed (kRelease; 0 otherwise).
  virtual uint64_t Reset(ResetKind kind) = 0;

  // ---- status ----
  virtual Identity identity() const = 0;
  // Its PCIe-level counters (TLPs in and out, malformed, UR sent, ...), by name.
  virtual void VisitCounters(const CounterVisitor& visit) const = 0;
};

// Each of c's counters, by name, to visit (a Function's VisitCounters begins with these).
void VisitFunctionCounters(const FunctionCounters& c, const Function::CounterVisitor& visit);

}  // namespace dxpu::pcie

#endif  // DXPU_LIB_PCIE_FUNCTION_H_
