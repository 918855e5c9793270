// allocator.h - which free GPUs an allocation gets. Pure: a view of the free GPUs in, the
// chosen GPUs (or why none) out; the pool manager keeps the view (FreeGpus) as leases come
// and go, so a choice costs one pass over the boxes of the asked-for profile, not a query.
//
//   pack    as few boxes as possible: the one box with the fewest free GPUs that still holds
//           the whole request (best fit, which keeps big holes for big requests), else the
//           boxes with the most free GPUs first
//   spread  one GPU per box in turn, boxes with the most free GPUs first
//   prefer  as many as possible from the named box, the rest packed onto the others
//
// Within a box the lowest device indices go first. Ties between boxes go to the lower name, so
// a choice is deterministic.
#ifndef DXPU_MANAGER_ALLOCATOR_H_
#define DXPU_MANAGER_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "manager/pool_error.h"
#include "manager/pool_model.h"

namespace dxpu::manager {

struct GpuRef {
  std::string box;
  uint16_t device = 0;
  bool operator==(const GpuRef& o) const { return device == o.device && box == o.box; }
  bool operator<(const GpuRef& o) const { return box != o.box ? box < o.box : device < o.device; }
};

struct AllocationRequest {
  std::string host;
  uint32_t count = 0;
  Policy policy = Policy::kPack;
  std::string profile;      // "" = any profile
  std::string prefer_box;   // kPrefer only
  std::string request_key;  // idempotency key ("" = none)
};

// The free GPUs, by profile and box. Only allocatable GPUs belong here: present, on a healthy
// box, without a lease, not being cleaned up.
class FreeGpus {
 public:
  void Add(const std::string& profile, const GpuRef& gpu);
  void Remove(const std::string& profile, const GpuRef& gpu);
  bool Contains(const std::string& profile, const GpuRef& gpu) const;
  // Free GPUs of a profile ("" = all profiles).
  size_t Count(const std::string& profile) const;
  // Free devices of one box, by profile.
  const std::map<std::string, std::map<std::string, std::set<uint16_t>>>& by_profile() const {
    return by_profile_;
  }

 private:
  // profile -> box -> devices
  std::map<std::string, std::map<std::string, std::set<uint16_t>>> by_profile_;
};

// Whether a profile names a device that is not a GPU: a box's virtio disks and displays
// ("virtio-blk", "virtio-gpu"; docs/virtio.md). The pool lends them as it lends GPUs, but an
// allocation gets one only by naming its profile.
bool IsNonGpuProfile(std::string_view profile);

// The GPUs for `request` (count GPUs, all of one profile when the request names none: the GPU
// profile with the most free GPUs that can hold it), or: "bad-count" (0 or more than
// max_count), "unknown-box" (prefer names no box: !prefer_box_known), "insufficient-gpus" (too few
// free now; the message says how many are free and how many exist), "exceeds-pool" (more than
// the pool holds at all, free or not). `pool_total` is every GPU of the profile, free or not.
PoolResult<std::vector<GpuRef>> ChooseGpus(const FreeGpus& free, const AllocationRequest& request,
                                           bool prefer_box_known,
                                           const std::map<std::string, size_t>& pool_total,
                                           uint32_t max_count);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_ALLOCATOR_H_
