// allocator.cc - ChooseGpus and its free-GPU index (allocator.h).
#include "manager/allocator.h"

#include <algorithm>
#include <utility>

#include <spdlog/fmt/fmt.h>

namespace dxpu::manager {

void FreeGpus::Add(const std::string& profile, const GpuRef& gpu) {
  by_profile_[profile][gpu.box].insert(gpu.device);
}

void FreeGpus::Remove(const std::string& profile, const GpuRef& gpu) {
  auto p = by_profile_.find(profile);
  if (p == by_profile_.end()) return;
  auto b = p->second.find(gpu.box);
  if (b == p->second.end()) return;
  b->second.erase(gpu.device);
  if (b->second.empty()) p->second.erase(b);
  if (p->second.empty()) by_profile_.erase(p);
}

bool FreeGpus::Contains(const std::string& profile, const GpuRef& gpu) const {
  auto p = by_profile_.find(profile);
  if (p == by_profile_.end()) return false;
  auto b = p->second.find(gpu.box);
  return b != p->second.end() && b->second.contains(gpu.device);
}

bool IsNonGpuProfile(std::string_view profile) { return profile.starts_with("virtio-"); }

size_t FreeGpus::Count(const std::string& profile) const {
  size_t n = 0;
  for (const auto& [name, boxes] : by_profile_) {
    if (!profile.empty() && name != profile) continue;
    for (const auto& [box, devices] : boxes) n += devices.size();
  }
  return n;
}

namespace {

using BoxDevices = std::map<std::string, std::set<uint16_t>>;

struct BoxFree {
  const std::string* box;
  const std::set<uint16_t>* devices;
};

// Boxes by free GPUs, most first; ties to the lower name (the map's order, kept by a stable sort).
std::vector<BoxFree> MostFreeFirst(const BoxDevices& boxes, const std::string& skip) {
  std::vector<BoxFree> order;
  order.reserve(boxes.size());
  for (const auto& [box, devices] : boxes) {
    if (box != skip) order.push_back({&box, &devices});
  }
  std::stable_sort(order.begin(), order.end(), [](const BoxFree& a, const BoxFree& b) {
    return a.devices->size() > b.devices->size();
  });
  return order;
}

void TakeFrom(const std::string& box, const std::set<uint16_t>& devices, uint32_t n,
              std::vector<GpuRef>& out) {
  for (auto it = devices.begin(); it != devices.end() && n > 0; ++it, --n) {
    out.push_back({box, *it});
  }
}

// Pack `count` GPUs onto as few boxes as possible, leaving out `skip`.
void Pack(const BoxDevices& boxes, uint32_t count, const std::string& skip,
          std::vector<GpuRef>& out) {
  if (count == 0) return;
  // Best fit: the box with the fewest free GPUs that holds the whole request.
  const BoxDevices::value_type* best = nullptr;
  for (const auto& entry : boxes) {
    if (entry.first == skip || entry.second.size() < count) continue;
    if (best == nullptr || entry.second.size() < best->second.size()) best = &entry;
  }
  if (best != nullptr) {
    TakeFrom(best->first, best->second, count, out);
    return;
  }
  uint32_t left = count;
  for (const BoxFree& b : MostFreeFirst(boxes, skip)) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(left, b.devices->size()));
    TakeFrom(*b.box, *b.devices, n, out);
    left -= n;
    if (left == 0) break;
  }
}

void Spread(const BoxDevices& boxes, uint32_t count, std::vector<GpuRef>& out) {
  std::vector<BoxFree> order = MostFreeFirst(boxes, "");
  std::vector<std::set<uint16_t>::const_iterator> next;
  next.reserve(order.size());
  for (const BoxFree& b : order) next.push_back(b.devices->begin());
  uint32_t left = count;
  while (left > 0) {
    bool took = false;
    for (size_t i = 0; i < order.size() && left > 0; ++i) {
      if (next[i] == order[i].devices->end()) continue;
      out.push_back({*order[i].box, *next[i]++});
      --left;
      took = true;
    }
    if (!took) break;
  }
}

size_t Total(const BoxDevices& boxes) {
  size_t n = 0;
  for (const auto& [box, devices] : boxes) n += devices.size();
  return n;
}

PoolError Insufficient(const AllocationRequest& request, size_t free, size_t total) {
  const std::string gpus = request.count == 1 ? "GPU" : "GPUs";
  const std::string what = request.profile.empty() ? gpus : gpus + " of profile " + request.profile;
  if (request.count > total) {
    return {ErrorKind::kConflict, "exceeds-pool",
            fmt::format("{} wants {} {}; the pool has {} in all", request.host, request.count, what,
                        total)};
  }
  return {ErrorKind::kConflict, "insufficient-gpus",
          fmt::format("{} wants {} {}; {} of the pool's {} are free{}", request.host, request.count,
                      what, free, total,
                      request.profile.empty() ? " (one allocation takes one profile)" : "")};
}

}  // namespace

PoolResult<std::vector<GpuRef>> ChooseGpus(const FreeGpus& free, const AllocationRequest& request,
                                           bool prefer_box_known,
                                           const std::map<std::string, size_t>& pool_total,
                                           uint32_t max_count) {
  if (request.count == 0 || request.count > max_count) {
    return PoolError{ErrorKind::kBadRequest, "bad-count",
                     fmt::format("count must be 1 to {}, not {}", max_count, request.count)};
  }
  if (request.policy == Policy::kPrefer && !prefer_box_known) {
    return PoolError{ErrorKind::kNotFound, "unknown-box",
                     fmt::format("no box named '{}' to prefer", request.prefer_box)};
  }
  auto total_it = pool_total.find(request.profile);
  const size_t total = total_it == pool_total.end() ? 0 : total_it->second;

  // The profile: the one asked for, or the one with the most free GPUs that holds the request.
  const BoxDevices* candidates = nullptr;
  size_t best_free = 0;
  for (const auto& [profile, by_box] : free.by_profile()) {
    if (!request.profile.empty() && profile != request.profile) continue;
    if (request.profile.empty() && IsNonGpuProfile(profile)) continue;
    const size_t n = Total(by_box);
    if (n >= request.count && n > best_free) {
      candidates = &by_box;
      best_free = n;
    }
  }
  if (candidates == nullptr) return Insufficient(request, free.Count(request.profile), total);

  std::vector<GpuRef> chosen;
  chosen.reserve(request.count);
  switch (request.policy) {
    case Policy::kPack:
      Pack(*candidates, request.count, "", chosen);
      break;
    case Policy::kSpread:
      Spread(*candidates, request.count, chosen);
      break;
    case Policy::kPrefer: {
      auto preferred = candidates->find(request.prefer_box);
      if (preferred != candidates->end()) {
        const auto n =
            static_cast<uint32_t>(std::min<size_t>(request.count, preferred->second.size()));
        TakeFrom(preferred->first, preferred->second, n, chosen);
      }
      Pack(*candidates, request.count - static_cast<uint32_t>(chosen.size()), request.prefer_box,
           chosen);
      break;
    }
  }
  return chosen;
}

}  // namespace dxpu::manager
