// device_channel.cc - one device's GPFIFO ring, its submissions, waits and error recovery.
#include "dxgpu/device_channel.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "dxgpu/pinned_memory.h"
#include "dxgpu/text.h"
#include "gpu/gpu_registers.h"

namespace dxpu::dxgpu {

namespace regs = gpu::regs;

namespace {

constexpr uint64_t kRingOffset = 256;  // after the progress word, 16-byte aligned

std::string StatusName(uint32_t status) {
  if ((status & regs::kStatusError) != 0) return "error";
  if ((status & regs::kStatusBusy) != 0) return "busy";
  if ((status & regs::kStatusIdle) != 0) return "idle";
  return Hex(status);
}

}  // namespace

DeviceChannel::DeviceChannel(Port& port, size_t device, const ChannelOptions& options)
    : port_(port),
      device_(device),
      options_(options),
      interrupts_(port.completion_interrupts()),
      slots_(options.ring_entries) {}

DeviceChannel::~DeviceChannel() { (void)Close(); }

std::string DeviceChannel::Prefix() const { return "device " + std::to_string(device_) + ": "; }

Expected<std::unique_ptr<DeviceChannel>> DeviceChannel::Open(Port& port, size_t device,
                                                             const ChannelOptions& options) {
  const uint32_t entries = options.ring_entries;
  if (entries < 2 || entries > gpu::kMaxGpfifoEntries || (entries & (entries - 1)) != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "ring_entries " + std::to_string(entries) + " is not a power of two in 2..65536");
  }
  if (options.pushbuffer_bytes < 64 || options.pushbuffer_bytes % 16 != 0 ||
      options.pushbuffer_bytes > gpu::kMaxPushbufferBytes) {
    return Status(ErrorCode::kInvalidArgument, "pushbuffer_bytes " +
                                                   std::to_string(options.pushbuffer_bytes) +
                                                   " is not a multiple of 16 in 64..1 MiB");
  }
  if (options.wait_slice_ns == 0) {
    return Status(ErrorCode::kInvalidArgument, "wait_slice_ns of 0");
  }
  std::unique_ptr<DeviceChannel> channel(new DeviceChannel(port, device, options));
  Status status = channel->Setup();
  if (!status.ok()) return status;
  return channel;
}

Status DeviceChannel::Setup() {
  const auto read = [&](uint32_t offset) { return port_.ReadRegister(device_, offset); };
  Expected<uint32_t> id = read(regs::kId);
  if (!id.ok()) return {id.status().code(), Prefix() + "reading ID: " + id.status().message()};
  if (*id != regs::kIdValue) {
    return {ErrorCode::kUnavailable, Prefix() + "ID reads " + Hex(*id) + ", not " +
                                         Hex(regs::kIdValue) + " (not a dxgpu device)"};
  }
  Expected<uint32_t> version = read(regs::kVersion);
  Expected<uint32_t> mem_lo = read(regs::kMemSizeLo);
  Expected<uint32_t> mem_hi = read(regs::kMemSizeHi);
  for (const Expected<uint32_t>* r : {&version, &mem_lo, &mem_hi}) {
    if (!r->ok()) return {r->status().code(), Prefix() + r->status().message()};
  }
  if ((*version >> 16) != (regs::kVersionValue >> 16)) {
    return {ErrorCode::kUnavailable,
            Prefix() + "VERSION " + Hex(*version) + " is not a version 1 device"};
  }
  registers_ = {.version = *version, .memory_bytes = (uint64_t{*mem_hi} << 32) | *mem_lo};

  const uint64_t ring_bytes = uint64_t{options_.ring_entries} * gpu::kGpfifoEntryBytes;
  const uint64_t arena_bytes = uint64_t{options_.ring_entries} * options_.pushbuffer_bytes;
  Expected<HostBuffer> memory = port_.AllocHost(kRingOffset + ring_bytes + arena_bytes);
  if (!memory.ok()) {
    return {memory.status().code(),
            Prefix() + "pinned memory for the ring: " + memory.status().message()};
  }
  memory_ = *memory;
  if (Status fit = CheckHostBuffer(port_, memory_, kRingOffset + ring_bytes + arena_bytes, 16,
                                   "the ring's memory");
      !fit.ok()) {
    return {fit.code(), Prefix() + fit.message()};
  }
  ring_ = memory_.data + kRingOffset;
  arena_ = ring_ + ring_bytes;
  progress_iova_ = memory_.IovaFor(device_);
  ring_iova_ = progress_iova_ + kRingOffset;
  arena_iova_ = ring_iova_ + ring_bytes;

  // Stop whatever ran before, clear an old error, define the ring (GP_GET = GP_PUT = 0), no
  // interrupts (the runtime polls) unless the port wants them (then INTR_ENABLE and
  // INTR_STATUS are the port's), enable.
  std::vector<std::pair<uint32_t, uint32_t>> writes = {
      {regs::kControl, 0},
      {regs::kControl, regs::kControlRestart},
      {regs::kGpfifoBaseLo, static_cast<uint32_t>(ring_iova_)},
      {regs::kGpfifoBaseHi, static_cast<uint32_t>(ring_iova_ >> 32)},
      {regs::kGpfifoEntries, options_.ring_entries},
  };
  if (!interrupts_) {
    writes.emplace_back(regs::kIntrEnable, 0);
    writes.emplace_back(regs::kIntrStatus, regs::kIntrMask);
  }
  writes.emplace_back(regs::kControl, regs::kControlEnable);
  for (const auto& [offset, value] : writes) {
    Status status = port_.WriteRegister(device_, offset, value);
    if (!status.ok()) {
      return {status.code(), Prefix() + "programming the channel: " + status.message()};
    }
  }
  Expected<uint32_t> status = read(regs::kStatus);
  if (!status.ok()) return {status.status().code(), Prefix() + status.status().message()};
  if ((*status & regs::kStatusError) != 0) {
    return {ErrorCode::kDeviceError, Prefix() + "the channel reports an error right after setup"};
  }
  return Status::Ok();
}

uint64_t DeviceChannel::progress() const {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(memory_.data))
      .load(std::memory_order_acquire);
}

bool DeviceChannel::Completed(uint64_t seq) const {
  return std::max(progress(), floor_.load(std::memory_order_acquire)) >= seq;
}

Status DeviceChannel::Lost(const Status& why) {
  const std::lock_guard lock(lost_mu_);
  if (!lost_.load()) {
    lost_status_ =
        Status(ErrorCode::kDeviceLost,
               why.message().starts_with("device ") ? why.message() : Prefix() + why.message());
    lost_.store(true);
  }
  return lost_status_;
}

Expected<uint64_t> DeviceChannel::Submit(gpu::PushbufferBuilder commands, uint64_t owner,
                                         const char* label) {
  const std::lock_guard lock(mu_);
  if (closed_) return Status(ErrorCode::kUnavailable, Prefix() + "the runtime is closed");
  if (lost_.load()) return Lost({});
  const uint64_t seq = next_seq_;
  const uint64_t entries = options_.ring_entries;
  // The ring holds at most entries - 1 submissions (GP_PUT == GP_GET means empty).
  if (seq >= entries) {
    Status status = WaitFor(seq - (entries - 1), /*locked=*/true);
    if (!status.ok()) return status;
  }
  commands.Semaphore({.address = progress_iova_,
                      .payload = seq,
                      .flags = gpu::kSemaphore64 | (interrupts_ ? gpu::kSemaphoreInterrupt : 0)});
  const std::vector<uint8_t> bytes = commands.bytes();
  if (bytes.size() > options_.pushbuffer_bytes) {
    return Status(ErrorCode::kInternal, Prefix() + std::string(label) + ": pushbuffer of " +
                                            std::to_string(bytes.size()) +
                                            " bytes is larger than a slot");
  }
  const uint32_t slot = put_;
  const uint64_t pb_offset = uint64_t{slot} * options_.pushbuffer_bytes;
  std::memcpy(arena_ + pb_offset, bytes.data(), bytes.size());
  const auto entry = gpu::EncodeGpfifoEntry({.pushbuffer = arena_iova_ + pb_offset,
                                             .length = static_cast<uint32_t>(bytes.size()),
                                             .flags = 0});
  std::memcpy(ring_ + uint64_t{slot} * gpu::kGpfifoEntryBytes, entry.data(), entry.size());
  slots_[slot] = {.seq = seq, .owner = owner, .label = label};
  put_ = (put_ + 1) % options_.ring_entries;
  std::atomic_thread_fence(std::memory_order_release);
  Status status = port_.WriteRegister(device_, regs::kGpPut, put_);
  if (!status.ok()) {
    // The device may or may not have seen the doorbell: nothing after this can be trusted.
    return Lost(Status(status.code(), "doorbell write failed: " + status.message()));
  }
  next_seq_ = seq + 1;
  last_submitted_.store(seq, std::memory_order_release);
  return seq;
}

Status DeviceChannel::Wait(uint64_t seq) { return WaitFor(seq, /*locked=*/false); }

Status DeviceChannel::WaitFor(uint64_t seq, bool locked) {
  if (Completed(seq)) return Status::Ok();
  if (lost_.load()) return Lost({});
  const uint64_t start = port_.Now();
  for (;;) {
    const uint64_t waited = port_.Now() - start;
    if (waited >= options_.timeout_ns) {
      std::string state;
      if (locked) {
        state = Describe(seq);
      } else {
        const std::lock_guard lock(mu_);
        state = Describe(seq);
      }
      return {ErrorCode::kTimeout,
              Prefix() + "submission " + std::to_string(seq) + " not complete after " +
                  std::to_string(options_.timeout_ns / 1'000'000) + " ms (" + state + ")"};
    }
    const uint64_t slice = std::min(options_.wait_slice_ns, options_.timeout_ns - waited);
    Status status = port_.Wait(
        device_, [this, seq] { return Completed(seq); }, slice);
    if (status.ok() || Completed(seq)) return Status::Ok();
    if (status.code() == ErrorCode::kDeviceLost) return Lost(status);
    if (status.code() != ErrorCode::kTimeout) {
      return {status.code(), Prefix() + "waiting: " + status.message()};
    }
    Status health = port_.Health(device_);
    if (!health.ok()) return Lost(health);
    if (locked) {
      status = HandleChannelErrorLocked();
    } else {
      const std::lock_guard lock(mu_);
      status = HandleChannelErrorLocked();
    }
    if (!status.ok()) return status;
  }
}

Status DeviceChannel::HandleChannelErrorLocked() {
  if (closed_) return {ErrorCode::kUnavailable, Prefix() + "the runtime is closed"};
  Expected<uint32_t> status = port_.ReadRegister(device_, regs::kStatus);
  if (!status.ok()) {
    return {status.status().code(), Prefix() + "reading STATUS: " + status.status().message()};
  }
  if ((*status & regs::kStatusError) == 0) return Status::Ok();
  Expected<uint32_t> code = port_.ReadRegister(device_, regs::kErrorCode);
  Expected<uint32_t> info = port_.ReadRegister(device_, regs::kErrorInfo);
  if (!code.ok()) return {code.status().code(), Prefix() + code.status().message()};
  if (!info.ok()) return {info.status().code(), Prefix() + info.status().message()};
  const SlotInfo slot = slots_[*info % options_.ring_entries];
  {
    const std::lock_guard lock(failures_mu_);
    if (failures_.contains(slot.seq) && floor_.load() >= slot.seq) {
      return Status::Ok();  // recorded already; our restart has not landed yet
    }
    const std::string name(gpu::ToString(static_cast<gpu::ChannelError>(*code)));
    failures_[slot.seq] = {
        .owner = slot.owner,
        .status = Status(ErrorCode::kDeviceError,
                         Prefix() + "channel error " + name + " (" + std::to_string(*code) +
                             ") in submission " + std::to_string(slot.seq) + " (" + slot.label +
                             ", GPFIFO entry " + std::to_string(*info) +
                             "); its work was abandoned and the channel restarted"),
    };
  }
  // In-order execution: everything before the failed submission is complete, and the failed
  // one never will be.
  uint64_t floor = floor_.load();
  while (floor < slot.seq && !floor_.compare_exchange_weak(floor, slot.seq)) {
  }
  Status restart =
      port_.WriteRegister(device_, regs::kControl, regs::kControlEnable | regs::kControlRestart);
  if (!restart.ok()) {
    return {restart.code(), Prefix() + "restarting the channel: " + restart.message()};
  }
  return Status::Ok();
}

std::string DeviceChannel::Describe(uint64_t seq) {
  std::string text = "progress " + std::to_string(progress()) + " of " + std::to_string(seq);
  Expected<uint32_t> status = port_.ReadRegister(device_, regs::kStatus);
  Expected<uint32_t> get = port_.ReadRegister(device_, regs::kGpGet);
  if (status.ok()) text += ", STATUS " + StatusName(*status);
  if (get.ok()) text += ", GP_GET " + std::to_string(*get);
  text += ", GP_PUT " + std::to_string(put_);
  return text;
}

Status DeviceChannel::TakeFailures(uint64_t owner, uint64_t through) {
  const std::lock_guard lock(failures_mu_);
  Status first;
  size_t more = 0;
  for (auto it = failures_.begin(); it != failures_.end() && it->first <= through;) {
    const uint64_t of = it->second.owner;
    if (owner != 0 ? of != owner : (of & kPrivateOwner) != 0) {
      ++it;
      continue;
    }
    if (first.ok()) {
      first = std::move(it->second.status);
    } else {
      ++more;
    }
    it = failures_.erase(it);
  }
  if (more != 0) {
    first = Status(first.code(),
                   first.message() + " (and " + std::to_string(more) + " more failed submissions)");
  }
  return first;
}

void DeviceChannel::DropFailures(uint64_t owner) {
  const std::lock_guard lock(failures_mu_);
  std::erase_if(failures_, [owner](const auto& f) { return f.second.owner == owner; });
}

Status DeviceChannel::Close() {
  const uint64_t last = last_submitted();
  Status result;
  {
    const std::lock_guard lock(mu_);
    if (closed_) return Status::Ok();
  }
  if (memory_.data == nullptr) {
    const std::lock_guard lock(mu_);
    closed_ = true;
    return Status::Ok();
  }
  if (!lost_.load() && last != 0) result = Wait(last);
  const std::lock_guard lock(mu_);
  closed_ = true;
  if (!lost_.load()) {
    Status status = port_.WriteRegister(device_, regs::kControl, 0);
    if (result.ok()) result = status;
  }
  Status status = port_.FreeHost(memory_);
  if (result.ok()) result = status;
  memory_ = {};
  return result;
}

}  // namespace dxpu::dxgpu
