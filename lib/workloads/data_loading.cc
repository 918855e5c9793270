// data_loading.cc - "data-loading": an input pipeline's host-to-device traffic (README.md).
//
// Batches of integer-valued floats go from pinned memory to the devices, round robin, each
// device double-buffered on two streams: while one buffer's batch is copied and reduced, the
// host fills the other's pinned buffer. Per batch: H2D (the bulk), REDUCE_SUM, a 4-byte D2H of
// the sum; a slot's stream is synchronised before its pinned buffer is refilled. Sums of small
// integers are exact in fp32 and in the device's double accumulation, so every sum must equal
// the CPU's exactly.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "workloads/common.h"
#include "workloads/cpu_reference.h"

namespace dxpu::workloads::detail {
namespace {

constexpr size_t kSlots = 2;  // buffers (and streams) per device

struct LoadShape {
  uint32_t batches;
  size_t batch_floats;
};

LoadShape LoadShapeFor(Scale scale) {
  if (scale == Scale::kTest) return {6, size_t{16} << 10};  // 64 KiB
  return {16, size_t{2} << 20};                             // 8 MiB
}

// One buffer slot of one device.
struct Slot {
  size_t device = 0;
  DeviceArray data;
  DeviceArray sum;
  std::optional<uint32_t> pending;  // the batch in flight in this slot
};

}  // namespace

Status RunDataLoading(Context& ctx) {
  Runtime& rt = ctx.rt();
  const LoadShape s = LoadShapeFor(ctx.scale());
  const size_t n = ctx.devices();
  const size_t count = s.batch_floats;
  const uint64_t bytes = uint64_t{count} * sizeof(float);

  // The data set (integers in [-8, 8]) and the sums the devices must find.
  Random rng(ctx.seed());
  std::vector<std::vector<float>> batches(s.batches, std::vector<float>(count));
  std::vector<float> want(s.batches);
  for (uint32_t i = 0; i < s.batches; ++i) {
    for (float& v : batches[i]) v = rng.SmallInteger(8);
    want[i] = cpu::ReduceSum(batches[i]);
  }

  // Pinned: each slot's batch buffer, then each slot's sum.
  const size_t slots = n * kSlots;
  PinnedArray pinned;
  DXPU_WORKLOAD_TRY(pinned.Allocate(rt, (slots * count) + slots));
  auto pinned_data = [&](size_t k) { return pinned.span(k * count, count); };
  auto pinned_sum = [&](size_t k) { return pinned.data() + (slots * count) + k; };

  std::vector<Slot> slot(slots);
  for (size_t k = 0; k < slots; ++k) {
    slot[k].device = k / kSlots;
    DXPU_WORKLOAD_TRY(slot[k].data.Allocate(rt, slot[k].device, count));
    DXPU_WORKLOAD_TRY(slot[k].sum.Allocate(rt, slot[k].device, 1));
  }
  std::vector<StreamHandle> streams(slots);
  for (size_t k = 0; k < slots; ++k) DXPU_WORKLOAD_TRY(streams[k].Create(rt, slot[k].device));
  for (size_t d = 0; d < n; ++d) DXPU_WORKLOAD_TRY(rt.SynchronizeDevice(d));  // warm-up

  std::vector<float> got(s.batches);
  // Waits for slot k's batch and takes its sum.
  auto collect = [&](size_t k) -> Status {
    if (!slot[k].pending) return Status::Ok();
    DXPU_WORKLOAD_TRY(rt.SynchronizeStream(streams[k].get()));
    got[*slot[k].pending] = *pinned_sum(k);
    slot[k].pending.reset();
    ctx.IterationDone(s.batches);
    return Status::Ok();
  };

  ctx.StartTimer();
  for (uint32_t i = 0; i < s.batches; ++i) {
    const size_t device = i % n;
    const size_t k = (device * kSlots) + ((i / n) % kSlots);
    const dxgpu::Stream stream = streams[k].get();
    DXPU_WORKLOAD_TRY(collect(k));
    std::memcpy(pinned_data(k).data(), batches[i].data(), bytes);
    DXPU_WORKLOAD_TRY(rt.MemcpyHtoDAsync(stream, slot[k].data.at(), pinned_data(k).data(), bytes));
    DXPU_WORKLOAD_TRY(rt.LaunchReduceSum(stream, count, slot[k].data.at(), slot[k].sum.at()));
    DXPU_WORKLOAD_TRY(rt.MemcpyDtoHAsync(stream, pinned_sum(k), slot[k].sum.at(), sizeof(float)));
    slot[k].pending = i;
  }
  // The batches still in flight, oldest first.
  std::vector<size_t> order(slots);
  for (size_t k = 0; k < slots; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return slot[a].pending.value_or(UINT32_MAX) < slot[b].pending.value_or(UINT32_MAX);
  });
  for (const size_t k : order) DXPU_WORKLOAD_TRY(collect(k));
  ctx.StopTimer();

  DXPU_WORKLOAD_TRY(ctx.Check("batch sums", got, want, 0.0));
  const WorkloadResult& r = ctx.result();
  const double seconds = static_cast<double>(r.elapsed_ns) / 1e9;
  const double total = static_cast<double>(bytes) * s.batches;
  ctx.result().summary = fmt::format(
      "{} batches of {} KiB over {} device(s), {} streams each: {:.2f} GB/s host to device",
      s.batches, bytes >> 10, n, kSlots, seconds > 0 ? total / seconds / 1e9 : 0.0);
  return Status::Ok();
}

}  // namespace dxpu::workloads::detail
