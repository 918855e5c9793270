// host_core.h - lib/core's host transaction layer (core/dxpu_host.h) for C++: the same C state
// machine dxpu.ko runs, with std::function callbacks in place of the C ops table and a callback
// per request in place of the C cookie. Sans-IO and not thread-safe, like the C layer.
#ifndef DXPU_LIB_HOST_HOST_CORE_H_
#define DXPU_LIB_HOST_HOST_CORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>

#include "core/dxpu_host.h"

namespace dxpu::host {

class HostCore {
 public:
  // A TLP to put on the wire (payload valid during the call only); false: not queued.
  using Send = std::function<bool(const dxpu_tlp& tlp)>;
  // A device wrote `data` to MSI address `address`.
  using Interrupt = std::function<void(uint16_t device, uint64_t address, uint32_t data)>;
  // A request ended: DXPU_TLP_CPL_* status and the data bytes that arrived.
  using Done = std::function<void(uint8_t status, uint32_t received)>;

  // Null when the configuration is out of range (dxpu_host_init refuses it).
  static std::unique_ptr<HostCore> Create(const dxpu_host_config& config, Send send,
                                          Interrupt interrupt);

  HostCore(const HostCore&) = delete;
  HostCore& operator=(const HostCore&) = delete;
  HostCore(HostCore&&) = delete;
  HostCore& operator=(HostCore&&) = delete;
  ~HostCore() = default;

  // A non-posted request (see dxpu_host_issue). Read data lands in `data`, which must stay
  // valid until `done` runs. done runs exactly once, unless this returns an error.
  dxpu_host_err Issue(dxpu_tlp& tlp, std::span<uint8_t> data, uint64_t now, Done done);
  dxpu_host_err Post(dxpu_tlp& tlp) { return dxpu_host_post(&core_, &tlp); }
  void Receive(const dxpu_tlp& tlp, uint64_t now) { dxpu_host_receive(&core_, &tlp, now); }
  dxpu_host_err SetMaxPayload(uint32_t bytes) { return dxpu_host_set_max_payload(&core_, bytes); }
  void Expire(uint64_t now) { dxpu_host_expire(&core_, now); }
  uint64_t NextDeadline() const { return dxpu_host_next_deadline(&core_); }
  void FailAll(uint8_t status) { dxpu_host_fail_all(&core_, status); }

  dxpu_host_err AddWindow(uint16_t device, uint64_t iova, std::span<uint8_t> memory,
                          uint16_t flags) {
    return dxpu_host_add_window(&core_, device, iova, memory.size(), memory.data(), flags);
  }
  dxpu_host_err RemoveWindow(uint16_t device, uint64_t iova) {
    return dxpu_host_remove_window(&core_, device, iova);
  }
  unsigned RemoveDevice(uint16_t device) { return dxpu_host_remove_device(&core_, device); }

  const dxpu_host_counters& counters() const { return *dxpu_host_get_counters(&core_); }
  const dxpu_host_config& config() const { return core_.cfg; }
  size_t outstanding() const { return core_.outstanding; }

 private:
  HostCore(Send send, Interrupt interrupt)
      : send_(std::move(send)), interrupt_(std::move(interrupt)) {}
  static bool OnSend(void* ctx, const dxpu_tlp* tlp);
  static void OnComplete(void* ctx, uint64_t cookie, uint8_t status, uint32_t received);
  static void OnInterrupt(void* ctx, uint16_t device, uint64_t address, uint32_t data);

  Send send_;
  Interrupt interrupt_;
  std::unordered_map<uint64_t, Done> done_;  // by cookie
  uint64_t next_cookie_ = 1;
  dxpu_host core_{};
};

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_HOST_CORE_H_
