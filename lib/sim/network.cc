// network.cc - the simulated network's paths: serialization queue, faults, and delivery.
#include "sim/network.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <utility>
#include <vector>

namespace dxpu::sim {
namespace {

uint64_t PathKey(PortId from, PortId to) { return (uint64_t{from} << 32) | to; }

Nanos AddSaturating(Nanos a, Nanos b) { return b > kNever - 1 - a ? kNever - 1 : a + b; }

// Flips 1 to 3 distinct bits of a non-empty frame.
void FlipBits(Rng& rng, std::vector<uint8_t>& frame) {
  const uint64_t bits = uint64_t{frame.size()} * 8;
  const uint64_t n = std::min<uint64_t>(rng.Range(1, 3), bits);
  std::array<uint64_t, 3> flipped{};
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t bit = 0;
    do {
      bit = rng.Uniform(bits);
    } while (std::find(flipped.begin(), flipped.begin() + i, bit) != flipped.begin() + i);
    flipped[i] = bit;
    frame[bit / 8] ^= static_cast<uint8_t>(1U << (bit % 8));
  }
}

}  // namespace

// One direction between two ports. Each fault kind draws from its own random stream,
// forked from the network's seed by the path's ends, so paths never disturb each other.
struct Network::Path {
  Path(const Rng& base, const PathConfig& c)
      : config(c),
        loss_rng(base.Fork(1)),
        duplicate_rng(base.Fork(2)),
        reorder_rng(base.Fork(3)),
        jitter_rng(base.Fork(4)),
        corrupt_rng(base.Fork(5)) {}

  PathConfig config;
  PathCounters counters;
  Rng loss_rng, duplicate_rng, reorder_rng, jitter_rng, corrupt_rng;

  // When the wire is next free, exactly: wire_free + wire_rem / wire_bps nanoseconds.
  Nanos wire_free = 0;
  uint64_t wire_rem = 0;
  uint64_t wire_bps = 0;
  // Frames not yet fully serialized: (time the last bit leaves, bytes), oldest first.
  std::deque<std::pair<Nanos, uint64_t>> backlog;
  uint64_t backlog_bytes = 0;
  // The latest arrival of a copy that was not reordered: later copies never arrive before.
  Nanos fifo_floor = 0;
};

PathCounters& PathCounters::operator+=(const PathCounters& o) {
  sent += o.sent;
  delivered += o.delivered;
  lost += o.lost;
  duplicated += o.duplicated;
  reordered += o.reordered;
  corrupted += o.corrupted;
  queue_drops += o.queue_drops;
  partition_drops += o.partition_drops;
  port_down_drops += o.port_down_drops;
  bytes_sent += o.bytes_sent;
  bytes_delivered += o.bytes_delivered;
  return *this;
}

Network::Network(Scheduler& scheduler, uint64_t seed, const PathConfig& default_path)
    : scheduler_(scheduler), rng_(seed), default_path_(default_path) {}

Network::~Network() = default;

void Network::Attach(PortId port, Receiver receiver) { receivers_[port] = std::move(receiver); }

void Network::Detach(PortId port) { receivers_.erase(port); }

Network::Path& Network::GetPath(PortId from, PortId to) {
  std::unique_ptr<Path>& p = paths_[PathKey(from, to)];
  if (!p) p = std::make_unique<Path>(rng_.Fork(PathKey(from, to)), default_path_);
  return *p;
}

const PathConfig& Network::path(PortId from, PortId to) const {
  auto it = paths_.find(PathKey(from, to));
  return it == paths_.end() ? default_path_ : it->second->config;
}

void Network::SetPath(PortId from, PortId to, const PathConfig& config) {
  GetPath(from, to).config = config;
}

void Network::SetPartitioned(PortId from, PortId to, bool partitioned) {
  GetPath(from, to).config.partitioned = partitioned;
}

void Network::Partition(PortId a, PortId b) {
  SetPartitioned(a, b, true);
  SetPartitioned(b, a, true);
}

void Network::Heal(PortId a, PortId b) {
  SetPartitioned(a, b, false);
  SetPartitioned(b, a, false);
}

void Network::SetPortDown(PortId port, bool down) {
  if (down) {
    down_.insert(port);
  } else {
    down_.erase(port);
  }
}

PathCounters Network::counters(PortId from, PortId to) const {
  auto it = paths_.find(PathKey(from, to));
  return it == paths_.end() ? PathCounters{} : it->second->counters;
}

PathCounters Network::TotalCounters() const {
  PathCounters total;
  for (const auto& [key, p] : paths_) total += p->counters;
  return total;
}

void Network::Send(PortId from, PortId to, std::span<const uint8_t> frame) {
  Path& p = GetPath(from, to);
  const PathConfig& cfg = p.config;
  const uint64_t size = frame.size();
  ++p.counters.sent;
  p.counters.bytes_sent += size;
  if (IsPortDown(from)) {
    ++p.counters.port_down_drops;
    return;
  }
  if (cfg.partitioned) {
    ++p.counters.partition_drops;
    return;
  }

  const Nanos now = scheduler_.Now();
  Nanos last_bit = now;
  if (cfg.bandwidth_bps != 0) {
    while (!p.backlog.empty() && p.backlog.front().first <= now) {
      p.backlog_bytes -= p.backlog.front().second;
      p.backlog.pop_front();
    }
    if (cfg.queue_limit_bytes != 0 && p.backlog_bytes + size > cfg.queue_limit_bytes) {
      ++p.counters.queue_drops;
      return;
    }
    if (p.wire_bps != cfg.bandwidth_bps) {  // the rate changed: round the fraction up
      p.wire_free += p.wire_rem != 0 ? 1 : 0;
      p.wire_rem = 0;
      p.wire_bps = cfg.bandwidth_bps;
    }
    if (p.wire_free < now) {  // idle: exactly free before now
      p.wire_free = now;
      p.wire_rem = 0;
    }
    // The serialization time, size * 8 / bandwidth seconds, carried exactly from frame to
    // frame so that a run of small frames adds up to the right total.
    const unsigned __int128 total = static_cast<unsigned __int128>(size) * 8 * kSecond + p.wire_rem;
    p.wire_free = AddSaturating(p.wire_free, static_cast<Nanos>(total / cfg.bandwidth_bps));
    p.wire_rem = static_cast<uint64_t>(total % cfg.bandwidth_bps);
    last_bit = AddSaturating(p.wire_free, p.wire_rem != 0 ? 1 : 0);
    p.backlog.emplace_back(last_bit, size);
    p.backlog_bytes += size;
  }

  // Both decisions are drawn for every frame that reached the wire, so each stream's
  // sequence does not depend on the other fault kinds.
  const bool lost = p.loss_rng.Bernoulli(cfg.loss);
  const bool duplicated = p.duplicate_rng.Bernoulli(cfg.duplicate);
  if (lost) {
    ++p.counters.lost;
    return;
  }
  if (duplicated) ++p.counters.duplicated;

  for (int copy = 0; copy < (duplicated ? 2 : 1); ++copy) {
    uint32_t slot = 0;
    if (free_in_flight_.empty()) {
      slot = static_cast<uint32_t>(in_flight_.size());
      in_flight_.emplace_back();
    } else {
      slot = free_in_flight_.back();
      free_in_flight_.pop_back();
    }
    InFlight& f = in_flight_[slot];
    f.bytes.assign(frame.begin(), frame.end());
    f.path = &p;
    f.to = to;
    if (p.corrupt_rng.Bernoulli(cfg.corrupt) && !f.bytes.empty()) {
      FlipBits(p.corrupt_rng, f.bytes);
      ++p.counters.corrupted;
    }
    Nanos arrival = AddSaturating(last_bit, cfg.latency);
    arrival = AddSaturating(arrival, p.jitter_rng.Range(0, cfg.jitter));
    arrival = std::max(arrival, p.fifo_floor);
    if (p.reorder_rng.Bernoulli(cfg.reorder) && cfg.reorder_delay != 0) {
      arrival = AddSaturating(arrival, p.reorder_rng.Range(1, cfg.reorder_delay));
      ++p.counters.reordered;
    } else {
      p.fifo_floor = arrival;
    }
    // [this, slot] fits std::function's small buffer: no allocation per event.
    scheduler_.ScheduleAt(arrival, [this, slot] { Deliver(slot); });
  }
}

void Network::Deliver(uint32_t slot) {
  const InFlight& f = in_flight_[slot];
  auto it = receivers_.find(f.to);
  if (IsPortDown(f.to) || it == receivers_.end() || !it->second) {
    ++f.path->counters.port_down_drops;
  } else {
    ++f.path->counters.delivered;
    f.path->counters.bytes_delivered += f.bytes.size();
    // A copy, so that the receiver may Attach or Detach ports (even its own) while it runs.
    const Receiver receiver = it->second;
    receiver(f.bytes);
  }
  free_in_flight_.push_back(slot);
}

}  // namespace dxpu::sim
