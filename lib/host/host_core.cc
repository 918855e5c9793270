// host_core.cc - lib/core's host transaction layer for C++ (host_core.h).
#include "host/host_core.h"

#include <utility>

namespace dxpu::host {

std::unique_ptr<HostCore> HostCore::Create(const dxpu_host_config& config, Send send,
                                           Interrupt interrupt) {
  std::unique_ptr<HostCore> core(new HostCore(std::move(send), std::move(interrupt)));
  const dxpu_host_ops ops{&HostCore::OnSend, &HostCore::OnComplete, &HostCore::OnInterrupt};
  if (dxpu_host_init(&core->core_, &config, &ops, core.get()) != DXPU_HOST_OK) return nullptr;
  return core;
}

dxpu_host_err HostCore::Issue(dxpu_tlp& tlp, std::span<uint8_t> data, uint64_t now, Done done) {
  const uint64_t cookie = next_cookie_++;
  // Registered first: a request may complete inside dxpu_host_issue (an ideal link answers
  // at once).
  done_.emplace(cookie, std::move(done));
  const dxpu_host_err err = dxpu_host_issue(
      &core_, &tlp, data.data(), static_cast<uint32_t>(data.size()), cookie, now, nullptr);
  if (err != DXPU_HOST_OK) done_.erase(cookie);
  return err;
}

bool HostCore::OnSend(void* ctx, const dxpu_tlp* tlp) {
  return static_cast<HostCore*>(ctx)->send_(*tlp);
}

void HostCore::OnComplete(void* ctx, uint64_t cookie, uint8_t status, uint32_t received) {
  auto* self = static_cast<HostCore*>(ctx);
  auto it = self->done_.find(cookie);
  if (it == self->done_.end()) return;
  Done done = std::move(it->second);
  self->done_.erase(it);
  if (done) done(status, received);
}

void HostCore::OnInterrupt(void* ctx, uint16_t device, uint64_t address, uint32_t data) {
  auto* self = static_cast<HostCore*>(ctx);
  if (self->interrupt_) self->interrupt_(device, address, data);
}

}  // namespace dxpu::host
