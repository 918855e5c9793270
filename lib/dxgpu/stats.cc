// stats.cc - the runtime's time accounting.
#include "dxgpu/stats.h"

#include <cstdio>
#include <string>

namespace dxpu::dxgpu {

namespace {

std::string FormatOp(const char* name, const OpStats& op, bool with_bytes) {
  char text[160];
  std::snprintf(text, sizeof text, "%s %llu calls %.3f ms", name,
                static_cast<unsigned long long>(op.calls), static_cast<double>(op.ns) / 1e6);
  std::string out = text;
  if (with_bytes) out += " " + std::to_string(op.bytes) + " B";
  return out;
}

}  // namespace

std::string FormatStats(const Stats& stats) {
  return FormatOp("launch", stats.launch, false) + " | " +
         FormatOp("copy-async", stats.copy_async, true) + " | " +
         FormatOp("sync", stats.sync, false) + " | " + FormatOp("h2d", stats.h2d, true) + " | " +
         FormatOp("d2h", stats.d2h, true) + " | " + FormatOp("d2d", stats.d2d, true) +
         " | submissions " + std::to_string(stats.submissions) + " | staged " +
         std::to_string(stats.staged_bytes) + " B | elapsed " +
         std::to_string(stats.elapsed_ns / 1000) + " us";
}

void StatsRecorder::Add(Kind kind, uint64_t ns, uint64_t bytes) {
  Counters& c = counters_[static_cast<size_t>(kind)];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  c.ns.fetch_add(ns, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
}

Stats StatsRecorder::Snapshot(uint64_t now) const {
  const auto get = [this](Kind kind) {
    const Counters& c = counters_[static_cast<size_t>(kind)];
    return OpStats{.calls = c.calls.load(std::memory_order_relaxed),
                   .ns = c.ns.load(std::memory_order_relaxed),
                   .bytes = c.bytes.load(std::memory_order_relaxed)};
  };
  const uint64_t since = since_.load(std::memory_order_relaxed);
  return Stats{.launch = get(Kind::kLaunch),
               .copy_async = get(Kind::kCopyAsync),
               .sync = get(Kind::kSync),
               .h2d = get(Kind::kH2D),
               .d2h = get(Kind::kD2H),
               .d2d = get(Kind::kD2D),
               .submissions = submissions_.load(std::memory_order_relaxed),
               .staged_bytes = staged_bytes_.load(std::memory_order_relaxed),
               .elapsed_ns = now > since ? now - since : 0};
}

void StatsRecorder::Reset(uint64_t now) {
  for (Counters& c : counters_) {
    c.calls.store(0, std::memory_order_relaxed);
    c.ns.store(0, std::memory_order_relaxed);
    c.bytes.store(0, std::memory_order_relaxed);
  }
  submissions_.store(0, std::memory_order_relaxed);
  staged_bytes_.store(0, std::memory_order_relaxed);
  since_.store(now, std::memory_order_relaxed);
}

}  // namespace dxpu::dxgpu
