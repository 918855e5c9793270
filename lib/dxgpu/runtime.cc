// runtime.cc - libdxgpu's API over the devices' channels (runtime.h).
#include "dxgpu/runtime.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "dxgpu/text.h"
#include "gpu/device_profile.h"
#include "gpu/kernels.h"

namespace dxpu::dxgpu {

using Kind = StatsRecorder::Kind;

struct Runtime::DeviceState {
  size_t index = 0;
  DeviceProperties properties;
  std::unique_ptr<DeviceChannel> channel;
  mutable std::mutex alloc_mu;
  std::optional<DeviceAllocator> allocator;
};

struct Runtime::StreamState {
  uint64_t id = 0;
  size_t device = 0;
  std::atomic<uint64_t> last{0};  // the stream's last submission

  void Credit(uint64_t seq) {
    uint64_t last_seq = last.load();
    while (last_seq < seq && !last.compare_exchange_weak(last_seq, seq)) {
    }
  }
};

struct Runtime::EventState {
  uint64_t id = 0;
  TimestampSlot slot;
  std::mutex mu;
  bool recorded = false;
  size_t device = 0;
  uint64_t seq = 0;
  uint64_t stream = 0;
  uint64_t payload = 0;  // what the last record writes into the slot
};

namespace {

// Adds the calling thread's time in a call to a kind of Stats.
class Timed {
 public:
  Timed(const Port& port, StatsRecorder& stats, Kind kind)
      : port_(port), stats_(stats), kind_(kind), start_(port.Now()) {}
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;
  ~Timed() { stats_.Add(kind_, port_.Now() - start_, bytes_); }
  void set_bytes(uint64_t bytes) { bytes_ = bytes; }

 private:
  const Port& port_;
  StatsRecorder& stats_;
  Kind kind_;
  uint64_t start_;
  uint64_t bytes_ = 0;
};

// Records one public call (RuntimeOptions::call_record) from its start to its return: the
// submissions made on this thread meanwhile are credited to it. Nothing when recording is off.
class CallScope {
 public:
  CallScope(const RuntimeOptions& options, const Port& port, const char* name)
      : recorder_(options.call_record ? &options.call_record : nullptr), port_(port) {
    if (recorder_ == nullptr) return;
    record_.name = name;
    record_.start_ns = port_.Now();
    outer_ = current_;
    current_ = this;
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  ~CallScope() {
    if (recorder_ == nullptr) return;
    current_ = outer_;
    record_.end_ns = port_.Now();
    (*recorder_)(record_);
  }

  // A peer copy's destination device.
  void Peer(size_t device) { record_.peer_device = device; }
  // The device and stream of a call that waits (a submission sets them itself).
  void Target(size_t device, uint64_t stream) {
    record_.device = device;
    record_.stream = stream;
  }
  // A submission made on this thread: credited to the call being recorded, if any.
  static void Submitted(size_t device, uint64_t stream, uint64_t seq) {
    if (current_ == nullptr) return;
    current_->Target(device, stream);
    current_->record_.submissions.push_back(seq);
  }

 private:
  static thread_local CallScope* current_;

  const std::function<void(const CallRecord&)>* recorder_;
  const Port& port_;
  CallScope* outer_ = nullptr;
  CallRecord record_;
};

thread_local CallScope* CallScope::current_ = nullptr;

Status Invalid(std::string message) { return {ErrorCode::kInvalidArgument, std::move(message)}; }

std::string PtrText(DevicePtr p) {
  return "device " + std::to_string(p.device) + " address " + Hex(p.address);
}

// a * b * c, or nullopt when it overflows 64 bits.
std::optional<uint64_t> Product(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t ab = 0;
  uint64_t abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) {
    return std::nullopt;
  }
  return abc;
}

}  // namespace

// --- Opening and closing ---

Runtime::Runtime(Port& port, std::unique_ptr<Port> owned, const RuntimeOptions& options)
    : owned_port_(std::move(owned)),
      port_(port),
      options_(options),
      pinned_(port),
      slots_(port),
      staging_(port, options.staging_chunk_bytes) {
  stats_.Reset(port_.Now());
}

Runtime::~Runtime() {
  for (auto& device : devices_) {
    if (device->channel != nullptr) (void)device->channel->Close();
  }
  devices_.clear();
}

Expected<std::unique_ptr<Runtime>> Runtime::Open(Port& port, const RuntimeOptions& options) {
  if (options.staging_chunk_bytes == 0) return Invalid("staging_chunk_bytes of 0");
  std::unique_ptr<Runtime> runtime(new Runtime(port, nullptr, options));
  Status status = runtime->OpenDevices();
  if (!status.ok()) return status;
  return runtime;
}

Expected<std::unique_ptr<Runtime>> Runtime::Open(std::unique_ptr<Port> port,
                                                 const RuntimeOptions& options) {
  if (port == nullptr) return Invalid("no port");
  if (options.staging_chunk_bytes == 0) return Invalid("staging_chunk_bytes of 0");
  Port& ref = *port;
  std::unique_ptr<Runtime> runtime(new Runtime(ref, std::move(port), options));
  Status status = runtime->OpenDevices();
  if (!status.ok()) return status;
  return runtime;
}

Status Runtime::OpenDevices() {
  const ChannelOptions channel_options{.ring_entries = options_.ring_entries,
                                       .pushbuffer_bytes = 256,
                                       .wait_slice_ns = options_.wait_slice_ns,
                                       .timeout_ns = options_.sync_timeout_ns};
  for (size_t i = 0; i < port_.device_count(); ++i) {
    auto device = std::make_unique<DeviceState>();
    device->index = i;
    Expected<std::unique_ptr<DeviceChannel>> channel =
        DeviceChannel::Open(port_, i, channel_options);
    if (!channel.ok()) return channel.status();
    device->channel = std::move(channel).value();
    const PortDeviceInfo& info = port_.device_info(i);
    DeviceProperties& p = device->properties;
    p.index = i;
    p.profile = info.profile;
    p.location = info.location;
    p.vendor_id = info.vendor_id;
    p.device_id = info.device_id;
    p.msix_vectors = info.msix_vectors;
    p.version = device->channel->registers().version;
    p.memory_bytes = device->channel->registers().memory_bytes;
    if (p.memory_bytes == 0) p.memory_bytes = info.memory_bytes;
    if (const std::optional<gpu::DeviceProfile> profile = gpu::FindProfile(info.profile)) {
      p.has_roofline = true;
      p.peak_fp32_flops = profile->roofline.peak_fp32_flops;
      p.memory_bandwidth_bytes = profile->roofline.memory_bandwidth_bytes;
      p.launch_overhead_ns = profile->roofline.launch_overhead_ns;
    }
    device->allocator.emplace(0, p.memory_bytes);
    devices_.push_back(std::move(device));
  }
  return Status::Ok();
}

// --- Lookups and checks ---

Expected<Runtime::DeviceState*> Runtime::GetDevice(size_t device) const {
  if (device >= devices_.size()) {
    return Status(ErrorCode::kNoDevice, "no device " + std::to_string(device) + " (the port has " +
                                            std::to_string(devices_.size()) + ")");
  }
  return devices_[device].get();
}

Expected<std::shared_ptr<Runtime::StreamState>> Runtime::GetStream(Stream stream) const {
  const std::shared_lock lock(handles_mu_);
  const auto it = streams_.find(stream.id);
  if (it == streams_.end()) {
    return Invalid("stream " + std::to_string(stream.id) + " does not exist (destroyed?)");
  }
  return it->second;
}

Expected<std::shared_ptr<Runtime::EventState>> Runtime::GetEvent(Event event) const {
  const std::shared_lock lock(handles_mu_);
  const auto it = events_.find(event.id);
  if (it == events_.end()) {
    return Invalid("event " + std::to_string(event.id) + " does not exist (destroyed?)");
  }
  return it->second;
}

Status Runtime::CheckDeviceRange(DevicePtr ptr, uint64_t bytes, size_t device,
                                 const char* what) const {
  if (device != SIZE_MAX && ptr.device != device) {
    return Invalid(std::string(what) + ": " + PtrText(ptr) + " is not on device " +
                   std::to_string(device));
  }
  Expected<DeviceState*> state = GetDevice(ptr.device);
  if (!state.ok()) return Invalid(std::string(what) + ": " + state.status().message());
  const std::lock_guard lock((*state)->alloc_mu);
  Status status = (*state)->allocator->CheckRange(ptr.address, bytes);
  if (!status.ok()) {
    return Invalid(std::string(what) + " on device " + std::to_string(ptr.device) + ": " +
                   status.message());
  }
  return Status::Ok();
}

// --- Devices and memory ---

Expected<DeviceProperties> Runtime::GetDeviceProperties(size_t device) const {
  Expected<DeviceState*> state = GetDevice(device);
  if (!state.ok()) return state.status();
  return (*state)->properties;
}

Expected<MemoryInfo> Runtime::GetMemoryInfo(size_t device) const {
  Expected<DeviceState*> state = GetDevice(device);
  if (!state.ok()) return state.status();
  const std::lock_guard lock((*state)->alloc_mu);
  const DeviceAllocator& a = *(*state)->allocator;
  return MemoryInfo{.free_bytes = a.free_bytes(),
                    .total_bytes = a.capacity(),
                    .largest_free_block = a.largest_free_block()};
}

Expected<DevicePtr> Runtime::Malloc(size_t device, uint64_t bytes) {
  Expected<DeviceState*> state = GetDevice(device);
  if (!state.ok()) return state.status();
  const std::lock_guard lock((*state)->alloc_mu);
  Expected<uint64_t> address = (*state)->allocator->Allocate(bytes);
  if (!address.ok()) {
    return Status(address.status().code(),
                  "Malloc on device " + std::to_string(device) + ": " + address.status().message());
  }
  return DevicePtr{static_cast<uint32_t>(device), *address};
}

Status Runtime::Free(DevicePtr ptr) {
  Expected<DeviceState*> state = GetDevice(ptr.device);
  if (!state.ok()) return Invalid("Free: " + state.status().message());
  const std::lock_guard lock((*state)->alloc_mu);
  Status status = (*state)->allocator->Free(ptr.address);
  if (!status.ok()) {
    return Invalid("Free on device " + std::to_string(ptr.device) + ": " + status.message());
  }
  return Status::Ok();
}

Expected<void*> Runtime::MallocHost(uint64_t bytes) {
  Expected<HostBuffer> buffer = pinned_.Allocate(bytes);
  if (!buffer.ok()) {
    return Status(buffer.status().code(), "MallocHost: " + buffer.status().message());
  }
  return static_cast<void*>(buffer->data);
}

Status Runtime::FreeHost(void* ptr) { return pinned_.Free(ptr); }

// --- Streams ---

Expected<Stream> Runtime::CreateStream(size_t device) {
  Expected<DeviceState*> state = GetDevice(device);
  if (!state.ok()) return state.status();
  auto stream = std::make_shared<StreamState>();
  stream->id = NewId();
  stream->device = device;
  const std::unique_lock lock(handles_mu_);
  streams_.emplace(stream->id, stream);
  return Stream{stream->id};
}

Status Runtime::DestroyStream(Stream stream) {
  std::shared_ptr<StreamState> state;
  {
    const std::unique_lock lock(handles_mu_);
    const auto it = streams_.find(stream.id);
    if (it == streams_.end()) {
      return Invalid("DestroyStream: stream " + std::to_string(stream.id) + " does not exist");
    }
    state = it->second;
    streams_.erase(it);
  }
  devices_[state->device]->channel->DropFailures(state->id);
  return Status::Ok();
}

Expected<bool> Runtime::QueryStream(Stream stream) {
  Expected<std::shared_ptr<StreamState>> state = GetStream(stream);
  if (!state.ok()) return state.status();
  return devices_[(*state)->device]->channel->Completed((*state)->last.load());
}

Status Runtime::WaitAndCollect(DeviceState& device, uint64_t owner, uint64_t seq) {
  Status status = device.channel->Wait(seq);
  if (!status.ok()) return status;
  return device.channel->TakeFailures(owner, seq);
}

Status Runtime::SynchronizeStream(Stream stream) {
  const Timed timed(port_, stats_, Kind::kSync);
  CallScope call(options_, port_, "cudaStreamSynchronize");
  Expected<std::shared_ptr<StreamState>> state = GetStream(stream);
  if (!state.ok()) return state.status();
  const StreamState& s = **state;
  call.Target(s.device, s.id);
  return WaitAndCollect(*devices_[s.device], s.id, s.last.load());
}

Status Runtime::SynchronizeDevice(size_t device) {
  const Timed timed(port_, stats_, Kind::kSync);
  CallScope call(options_, port_, "cudaDeviceSynchronize");
  Expected<DeviceState*> state = GetDevice(device);
  if (!state.ok()) return state.status();
  call.Target(device, 0);
  return WaitAndCollect(**state, 0, (*state)->channel->last_submitted());
}

// --- Submissions ---

Expected<uint64_t> Runtime::Submit(DeviceState& device, StreamState* stream, uint64_t owner,
                                   gpu::PushbufferBuilder commands, const char* label) {
  Expected<uint64_t> seq =
      device.channel->Submit(std::move(commands), stream != nullptr ? stream->id : owner, label);
  if (!seq.ok()) return seq;
  stats_.AddSubmission();
  if (stream != nullptr) stream->Credit(*seq);
  CallScope::Submitted(device.index, stream != nullptr ? stream->id : 0, *seq);
  return seq;
}

Expected<uint64_t> Runtime::SubmitCopy(DeviceState& device, StreamState* stream, uint64_t owner,
                                       uint32_t flags, uint64_t src, uint64_t dst, uint64_t bytes) {
  Expected<uint64_t> seq = Status(ErrorCode::kInternal, "copy of 0 bytes");
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(bytes - done, gpu::kMaxCopyBytes);
    gpu::PushbufferBuilder commands;
    commands.Copy({.flags = flags, .size = n, .src = src + done, .dst = dst + done});
    seq = Submit(device, stream, owner, std::move(commands), "copy");
    if (!seq.ok()) return seq;
    done += n;
  }
  return seq;
}

// --- Copies ---

Status Runtime::MemcpyHtoDAsync(Stream stream, DevicePtr dst, const void* src, uint64_t bytes) {
  Timed timed(port_, stats_, Kind::kCopyAsync);
  const CallScope call(options_, port_, "cudaMemcpyAsync");
  Expected<std::shared_ptr<StreamState>> s = GetStream(stream);
  if (!s.ok()) return s.status();
  if (bytes == 0) return Invalid("MemcpyHtoDAsync of 0 bytes");
  Status status = CheckDeviceRange(dst, bytes, (*s)->device, "MemcpyHtoDAsync destination");
  if (!status.ok()) return status;
  Expected<uint64_t> iova = pinned_.Translate(src, bytes, (*s)->device);
  if (!iova.ok()) return Invalid("MemcpyHtoDAsync source: " + iova.status().message());
  timed.set_bytes(bytes);
  return SubmitCopy(*devices_[(*s)->device], s->get(), 0, gpu::kCopySrcHost, *iova, dst.address,
                    bytes)
      .status();
}

Status Runtime::MemcpyDtoHAsync(Stream stream, void* dst, DevicePtr src, uint64_t bytes) {
  Timed timed(port_, stats_, Kind::kCopyAsync);
  const CallScope call(options_, port_, "cudaMemcpyAsync");
  Expected<std::shared_ptr<StreamState>> s = GetStream(stream);
  if (!s.ok()) return s.status();
  if (bytes == 0) return Invalid("MemcpyDtoHAsync of 0 bytes");
  Status status = CheckDeviceRange(src, bytes, (*s)->device, "MemcpyDtoHAsync source");
  if (!status.ok()) return status;
  Expected<uint64_t> iova = pinned_.Translate(dst, bytes, (*s)->device);
  if (!iova.ok()) return Invalid("MemcpyDtoHAsync destination: " + iova.status().message());
  timed.set_bytes(bytes);
  return SubmitCopy(*devices_[(*s)->device], s->get(), 0, gpu::kCopyDstHost, src.address, *iova,
                    bytes)
      .status();
}

Status Runtime::MemcpyDtoDAsync(Stream stream, DevicePtr dst, DevicePtr src, uint64_t bytes) {
  Timed timed(port_, stats_, Kind::kCopyAsync);
  const CallScope call(options_, port_, "cudaMemcpyAsync");
  Expected<std::shared_ptr<StreamState>> s = GetStream(stream);
  if (!s.ok()) return s.status();
  if (bytes == 0) return Invalid("MemcpyDtoDAsync of 0 bytes");
  Status status = CheckDeviceRange(src, bytes, (*s)->device, "MemcpyDtoDAsync source");
  if (status.ok())
    status = CheckDeviceRange(dst, bytes, (*s)->device, "MemcpyDtoDAsync destination");
  if (!status.ok()) return status;
  timed.set_bytes(bytes);
  return SubmitCopy(*devices_[(*s)->device], s->get(), 0, 0, src.address, dst.address, bytes)
      .status();
}

Status Runtime::MemcpyPeerAsync(Stream stream, DevicePtr dst, DevicePtr src, uint64_t bytes) {
  Timed timed(port_, stats_, Kind::kCopyAsync);
  CallScope call(options_, port_, "cudaMemcpyPeerAsync");
  Expected<std::shared_ptr<StreamState>> s = GetStream(stream);
  if (!s.ok()) return s.status();
  if (bytes == 0) return Invalid("MemcpyPeerAsync of 0 bytes");
  Status status = CheckDeviceRange(src, bytes, (*s)->device, "MemcpyPeerAsync source");
  if (status.ok()) status = CheckDeviceRange(dst, bytes, SIZE_MAX, "MemcpyPeerAsync destination");
  if (!status.ok()) return status;
  if (dst.device == src.device) return Invalid("MemcpyPeerAsync within one device: use DtoD");
  const PortDeviceInfo& peer = port_.device_info(dst.device);
  if (peer.memory_window_size == 0 || dst.address > peer.memory_window_size ||
      bytes > peer.memory_window_size - dst.address) {
    return Invalid("MemcpyPeerAsync destination: device " + std::to_string(dst.device) +
                   "'s memory window (" + std::to_string(peer.memory_window_size) +
                   " bytes) does not reach [" + std::to_string(dst.address) + ", +" +
                   std::to_string(bytes) + ")");
  }
  timed.set_bytes(bytes);
  call.Peer(dst.device);
  // The source device writes into the peer's window, then reads the last DW back: the stream
  // reaches its next command only once every write has landed in the peer.
  return SubmitCopy(*devices_[(*s)->device], s->get(), 0, gpu::kCopyDstHost | gpu::kCopyFlush,
                    src.address, peer.memory_window + dst.address, bytes)
      .status();
}

Status Runtime::CopyPinned(HostSide side, DevicePtr device_ptr, uint64_t iova, uint64_t bytes) {
  DeviceState& device = *devices_[device_ptr.device];
  const uint64_t owner = NewId() | DeviceChannel::kPrivateOwner;
  Expected<uint64_t> seq =
      side == HostSide::kSource
          ? SubmitCopy(device, nullptr, owner, gpu::kCopySrcHost, iova, device_ptr.address, bytes)
          : SubmitCopy(device, nullptr, owner, gpu::kCopyDstHost, device_ptr.address, iova, bytes);
  if (!seq.ok()) return seq.status();
  return WaitAndCollect(device, owner, *seq);
}

namespace {

// Two staging buffers: returned to the pool only when no copy can still be using them.
class StagingPair {
 public:
  explicit StagingPair(StagingPool& pool) : pool_(pool) {}
  StagingPair(const StagingPair&) = delete;
  StagingPair& operator=(const StagingPair&) = delete;
  ~StagingPair() {
    if (!idle_) return;  // a copy may still use them: they stay out of the pool
    for (const std::optional<HostBuffer>& b : buffers_) {
      if (b) pool_.Release(*b);
    }
  }
  Expected<HostBuffer> Get(size_t i) {
    if (!buffers_[i]) {
      Expected<HostBuffer> b = pool_.Acquire();
      if (!b.ok()) return b;
      buffers_[i] = *b;
    }
    return *buffers_[i];
  }
  void set_idle(bool idle) { idle_ = idle; }

 private:
  StagingPool& pool_;
  std::optional<HostBuffer> buffers_[2];
  bool idle_ = true;
};

}  // namespace

Status Runtime::StageHtoD(DeviceState& device, DevicePtr dst, const uint8_t* src, uint64_t bytes) {
  const uint64_t owner = NewId() | DeviceChannel::kPrivateOwner;
  const uint64_t chunk = staging_.buffer_bytes();
  StagingPair buffers(staging_);
  uint64_t seqs[2] = {0, 0};
  Status result;
  for (uint64_t offset = 0, i = 0; offset < bytes && result.ok(); offset += chunk, ++i) {
    const size_t b = i % 2;
    const uint64_t n = std::min(chunk, bytes - offset);
    Expected<HostBuffer> buffer = buffers.Get(b);
    if (!buffer.ok()) {
      result = buffer.status();
      break;
    }
    if (seqs[b] != 0) {
      result = device.channel->Wait(seqs[b]);
      if (!result.ok()) break;
    }
    std::memcpy(buffer->data, src + offset, n);
    Expected<uint64_t> seq = SubmitCopy(device, nullptr, owner, gpu::kCopySrcHost,
                                        buffer->IovaFor(device.index), dst.address + offset, n);
    if (!seq.ok())
      result = seq.status();
    else
      seqs[b] = *seq;
  }
  const uint64_t last = std::max(seqs[0], seqs[1]);
  if (last != 0) {
    Status status = device.channel->Wait(last);
    if (!status.ok()) buffers.set_idle(false);
    if (result.ok()) result = status;
  }
  Status failures = device.channel->TakeFailures(owner, UINT64_MAX);
  if (result.ok()) result = failures;
  stats_.AddStaged(bytes);
  return result;
}

Status Runtime::StageDtoH(DeviceState& device, uint8_t* dst, DevicePtr src, uint64_t bytes) {
  const uint64_t owner = NewId() | DeviceChannel::kPrivateOwner;
  const uint64_t chunk = staging_.buffer_bytes();
  const uint64_t chunks = (bytes + chunk - 1) / chunk;
  StagingPair buffers(staging_);
  uint64_t seqs[2] = {0, 0};
  const auto submit = [&](uint64_t i) -> Status {
    Expected<HostBuffer> buffer = buffers.Get(i % 2);
    if (!buffer.ok()) return buffer.status();
    const uint64_t offset = i * chunk;
    Expected<uint64_t> seq =
        SubmitCopy(device, nullptr, owner, gpu::kCopyDstHost, src.address + offset,
                   buffer->IovaFor(device.index), std::min(chunk, bytes - offset));
    if (!seq.ok()) return seq.status();
    seqs[i % 2] = *seq;
    return Status::Ok();
  };
  Status result = submit(0);
  if (result.ok() && chunks > 1) result = submit(1);
  for (uint64_t i = 0; i < chunks && result.ok(); ++i) {
    const size_t b = i % 2;
    result = device.channel->Wait(seqs[b]);
    if (!result.ok()) break;
    const uint64_t offset = i * chunk;
    std::memcpy(dst + offset, buffers.Get(b)->data, std::min(chunk, bytes - offset));
    if (i + 2 < chunks) result = submit(i + 2);
  }
  const uint64_t last = std::max(seqs[0], seqs[1]);
  if (!result.ok() && last != 0) {
    if (!device.channel->Wait(last).ok()) buffers.set_idle(false);
  }
  Status failures = device.channel->TakeFailures(owner, UINT64_MAX);
  if (result.ok()) result = failures;
  stats_.AddStaged(bytes);
  return result;
}

Status Runtime::MemcpyHtoD(DevicePtr dst, const void* src, uint64_t bytes) {
  Timed timed(port_, stats_, Kind::kH2D);
  const CallScope call(options_, port_, "cudaMemcpy");
  if (bytes == 0) return Invalid("MemcpyHtoD of 0 bytes");
  if (src == nullptr) return Invalid("MemcpyHtoD from a null host pointer");
  Status status = CheckDeviceRange(dst, bytes, SIZE_MAX, "MemcpyHtoD destination");
  if (!status.ok()) return status;
  timed.set_bytes(bytes);
  if (Expected<uint64_t> iova = pinned_.Translate(src, bytes, dst.device); iova.ok()) {
    return CopyPinned(HostSide::kSource, dst, *iova, bytes);
  }
  return StageHtoD(*devices_[dst.device], dst, static_cast<const uint8_t*>(src), bytes);
}

Status Runtime::MemcpyDtoH(void* dst, DevicePtr src, uint64_t bytes) {
  Timed timed(port_, stats_, Kind::kD2H);
  const CallScope call(options_, port_, "cudaMemcpy");
  if (bytes == 0) return Invalid("MemcpyDtoH of 0 bytes");
  if (dst == nullptr) return Invalid("MemcpyDtoH to a null host pointer");
  Status status = CheckDeviceRange(src, bytes, SIZE_MAX, "MemcpyDtoH source");
  if (!status.ok()) return status;
  timed.set_bytes(bytes);
  if (Expected<uint64_t> iova = pinned_.Translate(dst, bytes, src.device); iova.ok()) {
    return CopyPinned(HostSide::kDestination, src, *iova, bytes);
  }
  return StageDtoH(*devices_[src.device], static_cast<uint8_t*>(dst), src, bytes);
}

Status Runtime::MemcpyDtoD(DevicePtr dst, DevicePtr src, uint64_t bytes) {
  Timed timed(port_, stats_, Kind::kD2D);
  const CallScope call(options_, port_, "cudaMemcpy");
  if (bytes == 0) return Invalid("MemcpyDtoD of 0 bytes");
  Status status = CheckDeviceRange(src, bytes, SIZE_MAX, "MemcpyDtoD source");
  if (status.ok()) status = CheckDeviceRange(dst, bytes, src.device, "MemcpyDtoD destination");
  if (!status.ok()) return status;
  timed.set_bytes(bytes);
  DeviceState& device = *devices_[src.device];
  const uint64_t owner = NewId() | DeviceChannel::kPrivateOwner;
  Expected<uint64_t> seq = SubmitCopy(device, nullptr, owner, 0, src.address, dst.address, bytes);
  if (!seq.ok()) return seq.status();
  return WaitAndCollect(device, owner, *seq);
}

// --- Kernels ---

Status Runtime::LaunchKernel(Stream stream,
                             const std::vector<std::pair<DevicePtr, uint64_t>>& operands,
                             gpu::PushbufferBuilder commands, const char* label) {
  Expected<std::shared_ptr<StreamState>> s = GetStream(stream);
  if (!s.ok()) return Invalid(std::string(label) + ": " + s.status().message());
  for (const auto& [ptr, bytes] : operands) {
    if (ptr.address % 4 != 0) {
      return Invalid(std::string(label) + ": operand " + PtrText(ptr) + " is not 4-byte aligned");
    }
    Status status = CheckDeviceRange(ptr, bytes, (*s)->device, label);
    if (!status.ok()) return status;
  }
  return Submit(*devices_[(*s)->device], s->get(), 0, std::move(commands), label).status();
}

Status Runtime::LaunchMemset32(Stream stream, DevicePtr dst, uint32_t value, uint64_t count) {
  const Timed timed(port_, stats_, Kind::kLaunch);
  const CallScope call(options_, port_, "cudaMemsetAsync");
  if (count == 0 || count > UINT32_MAX) {
    return Invalid("memset32: count " + std::to_string(count) + " is not in 1..2^32-1");
  }
  gpu::PushbufferBuilder commands;
  commands.Memset32({.dst = dst.address, .count = static_cast<uint32_t>(count), .value = value});
  return LaunchKernel(stream, {{dst, count * 4}}, std::move(commands), "memset32");
}

Status Runtime::LaunchAxpy(Stream stream, uint64_t n, float a, DevicePtr x, DevicePtr y) {
  const Timed timed(port_, stats_, Kind::kLaunch);
  const CallScope call(options_, port_, "cudaLaunchKernel");
  if (n == 0 || n > UINT32_MAX) {
    return Invalid("axpy: n " + std::to_string(n) + " is not in 1..2^32-1");
  }
  gpu::PushbufferBuilder commands;
  commands.Axpy({.n = static_cast<uint32_t>(n), .a = a, .x = x.address, .y = y.address});
  return LaunchKernel(stream, {{x, n * 4}, {y, n * 4}}, std::move(commands), "axpy");
}

Status Runtime::LaunchGemm(Stream stream, uint64_t m, uint64_t n, uint64_t k, float alpha,
                           DevicePtr a, DevicePtr b, float beta, DevicePtr c,
                           GemmTranspose transpose) {
  const Timed timed(port_, stats_, Kind::kLaunch);
  const CallScope call(options_, port_, "cudaLaunchKernel");
  for (const uint64_t dim : {m, n, k}) {
    if (dim == 0 || dim > UINT32_MAX) {
      return Invalid("gemm: m, n, k = " + std::to_string(m) + ", " + std::to_string(n) + ", " +
                     std::to_string(k) + ": each must be in 1..2^32-1");
    }
  }
  const std::optional<uint64_t> a_bytes = Product(m, k, 4);
  const std::optional<uint64_t> b_bytes = Product(k, n, 4);
  const std::optional<uint64_t> c_bytes = Product(m, n, 4);
  if (!a_bytes || !b_bytes || !c_bytes) return Invalid("gemm: matrix sizes overflow 64 bits");
  gpu::PushbufferBuilder commands;
  commands.Gemm({.m = static_cast<uint32_t>(m),
                 .n = static_cast<uint32_t>(n),
                 .k = static_cast<uint32_t>(k),
                 .alpha = alpha,
                 .beta = beta,
                 .a = a.address,
                 .b = b.address,
                 .c = c.address,
                 .flags = (transpose.a ? gpu::kGemmTransposeA : 0U) |
                          (transpose.b ? gpu::kGemmTransposeB : 0U)});
  return LaunchKernel(stream, {{a, *a_bytes}, {b, *b_bytes}, {c, *c_bytes}}, std::move(commands),
                      "gemm");
}

Status Runtime::LaunchReduceSum(Stream stream, uint64_t n, DevicePtr x, DevicePtr out) {
  const Timed timed(port_, stats_, Kind::kLaunch);
  const CallScope call(options_, port_, "cudaLaunchKernel");
  if (n == 0 || n > UINT32_MAX) {
    return Invalid("reduce-sum: n " + std::to_string(n) + " is not in 1..2^32-1");
  }
  gpu::PushbufferBuilder commands;
  commands.ReduceSum({.n = static_cast<uint32_t>(n), .x = x.address, .out = out.address});
  return LaunchKernel(stream, {{x, n * 4}, {out, 4}}, std::move(commands), "reduce-sum");
}

Status Runtime::LaunchTimed(Stream stream, uint64_t ns) {
  const Timed timed(port_, stats_, Kind::kLaunch);
  const CallScope call(options_, port_, "cudaLaunchKernel");
  if (ns > gpu::kMaxTimedNs) {
    return Invalid("timed: " + std::to_string(ns) + " ns is above the limit of " +
                   std::to_string(gpu::kMaxTimedNs) + " ns (60 s)");
  }
  gpu::PushbufferBuilder commands;
  commands.Timed(ns);
  return LaunchKernel(stream, {}, std::move(commands), "timed");
}

// --- Events ---

Expected<Event> Runtime::CreateEvent() {
  Expected<TimestampSlot> slot = slots_.Acquire();
  if (!slot.ok()) {
    return Status(slot.status().code(), "CreateEvent: " + slot.status().message());
  }
  auto event = std::make_shared<EventState>();
  event->id = NewId();
  event->slot = *slot;
  const std::unique_lock lock(handles_mu_);
  events_.emplace(event->id, event);
  return Event{event->id};
}

Status Runtime::DestroyEvent(Event event) {
  std::shared_ptr<EventState> state;
  {
    const std::unique_lock lock(handles_mu_);
    const auto it = events_.find(event.id);
    if (it == events_.end()) {
      return Invalid("DestroyEvent: event " + std::to_string(event.id) + " does not exist");
    }
    state = it->second;
    events_.erase(it);
  }
  const std::lock_guard lock(state->mu);
  // A record still in flight will write the slot: then it is not reused.
  if (!state->recorded || devices_[state->device]->channel->Completed(state->seq)) {
    slots_.Release(state->slot);
  }
  return Status::Ok();
}

Status Runtime::RecordEvent(Event event, Stream stream) {
  const Timed timed(port_, stats_, Kind::kLaunch);
  const CallScope call(options_, port_, "cudaEventRecord");
  Expected<std::shared_ptr<EventState>> e = GetEvent(event);
  if (!e.ok()) return e.status();
  Expected<std::shared_ptr<StreamState>> s = GetStream(stream);
  if (!s.ok()) return s.status();
  EventState& state = **e;
  const std::lock_guard lock(state.mu);
  const uint64_t payload = state.payload + 1;
  gpu::PushbufferBuilder commands;
  commands.Semaphore({.address = state.slot.IovaFor((*s)->device),
                      .payload = payload,
                      .flags = gpu::kSemaphore64 | gpu::kSemaphoreTimestamp});
  Expected<uint64_t> seq =
      Submit(*devices_[(*s)->device], s->get(), 0, std::move(commands), "event record");
  if (!seq.ok()) return seq.status();
  state.recorded = true;
  state.device = (*s)->device;
  state.seq = *seq;
  state.stream = (*s)->id;
  state.payload = payload;
  return Status::Ok();
}

Expected<bool> Runtime::QueryEvent(Event event) {
  Expected<std::shared_ptr<EventState>> e = GetEvent(event);
  if (!e.ok()) return e.status();
  const std::lock_guard lock((*e)->mu);
  return !(*e)->recorded || devices_[(*e)->device]->channel->Completed((*e)->seq);
}

Status Runtime::SynchronizeEvent(Event event) {
  const Timed timed(port_, stats_, Kind::kSync);
  CallScope call(options_, port_, "cudaEventSynchronize");
  Expected<std::shared_ptr<EventState>> e = GetEvent(event);
  if (!e.ok()) return e.status();
  size_t device = 0;
  uint64_t seq = 0;
  uint64_t stream = 0;
  {
    const std::lock_guard lock((*e)->mu);
    if (!(*e)->recorded) return Status::Ok();
    device = (*e)->device;
    seq = (*e)->seq;
    stream = (*e)->stream;
  }
  call.Target(device, stream);
  return WaitAndCollect(*devices_[device], stream, seq);
}

Expected<uint64_t> Runtime::EventElapsedNs(Event start, Event end) {
  struct Reached {
    size_t device = 0;
    uint64_t time = 0;
  };
  const auto reached = [this](Event event, const char* which) -> Expected<Reached> {
    Expected<std::shared_ptr<EventState>> e = GetEvent(event);
    if (!e.ok())
      return Invalid(std::string("EventElapsedNs ") + which + ": " + e.status().message());
    EventState& state = **e;
    const std::lock_guard lock(state.mu);
    const std::string name =
        std::string("EventElapsedNs: ") + which + " event " + std::to_string(event.id);
    if (!state.recorded) return Invalid(name + " was never recorded");
    if (!devices_[state.device]->channel->Completed(state.seq)) {
      return Invalid(name + " has not been reached yet (synchronize it first)");
    }
    if (state.slot.payload() != state.payload) {
      return Status(ErrorCode::kDeviceError,
                    name + ": the device did not write its timestamp (its record failed)");
    }
    return Reached{state.device, state.slot.time_ns()};
  };
  Expected<Reached> a = reached(start, "start");
  if (!a.ok()) return a.status();
  Expected<Reached> b = reached(end, "end");
  if (!b.ok()) return b.status();
  if (a->device != b->device) {
    return Invalid("EventElapsedNs: the events were reached on devices " +
                   std::to_string(a->device) + " and " + std::to_string(b->device) +
                   " (device clocks are not comparable)");
  }
  if (b->time < a->time) {
    return Invalid("EventElapsedNs: the end event was reached " +
                   std::to_string(a->time - b->time) + " ns before the start event");
  }
  return b->time - a->time;
}

// --- Statistics ---

Stats Runtime::GetStats() const { return stats_.Snapshot(port_.Now()); }

void Runtime::ResetStats() { stats_.Reset(port_.Now()); }

}  // namespace dxpu::dxgpu
