// channel.cc - GPFIFO registers, entry and pushbuffer fetch, command execution, errors and
// the INTR_STATUS/INTR_ENABLE interrupt logic.
#include "gpu/channel.h"

#include <algorithm>
#include <bit>
#include <utility>
#include <variant>

#include "core/tlp_build.h"
#include "gpu/gpu_registers.h"
#include "gpu/kernels.h"

namespace dxpu::gpu {
namespace {

uint32_t Merge(uint32_t old_value, uint32_t value, uint32_t byte_mask) {
  return (old_value & ~byte_mask) | (value & byte_mask);
}

uint32_t Le32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

void PutLe64(std::vector<uint8_t>& out, uint64_t v) {
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

ActivityKind CopyActivityKind(uint32_t flags) {
  const bool src_host = (flags & kCopySrcHost) != 0;
  const bool dst_host = (flags & kCopyDstHost) != 0;
  if (src_host) return dst_host ? ActivityKind::kCopyHostToHost : ActivityKind::kCopyHostToDevice;
  if (!dst_host) return ActivityKind::kCopyDeviceToDevice;
  return (flags & kCopyFlush) != 0 ? ActivityKind::kCopyPeer : ActivityKind::kCopyDeviceToHost;
}

}  // namespace

Channel::Channel(SparseMemory& memory, DmaEngine& dma, const ConfigSpace& config,
                 GpuCounters& counters, SignalVector signal, uint32_t pushbuffer_prefetch,
                 ActivitySink activity)
    : memory_(memory),
      dma_(dma),
      config_(config),
      counters_(counters),
      signal_(std::move(signal)),
      copy_(memory, dma, config.profile().roofline),
      prefetch_(std::min(pushbuffer_prefetch, kMaxPushbufferPrefetch)),
      activity_(std::move(activity)) {}

// --- Registers ---

std::optional<uint32_t> Channel::ReadRegister(uint32_t offset) const {
  switch (offset) {
    case regs::kGpfifoBaseLo:
      return static_cast<uint32_t>(gpfifo_base_);
    case regs::kGpfifoBaseHi:
      return static_cast<uint32_t>(gpfifo_base_ >> 32);
    case regs::kGpfifoEntries:
      return gpfifo_entries_;
    case regs::kGpGet:
      return gp_get_;
    case regs::kGpPut:
      return gp_put_;
    case regs::kStatus:
      return status();
    case regs::kErrorCode:
      return static_cast<uint32_t>(error_);
    case regs::kErrorInfo:
      return error_info_;
    case regs::kIntrStatus:
      return intr_status_;
    case regs::kIntrEnable:
      return intr_enable_;
    case regs::kControl:
      return enabled_ ? regs::kControlEnable : 0u;
    default:
      return std::nullopt;
  }
}

bool Channel::WriteRegister(uint32_t offset, uint32_t value, uint32_t byte_mask) {
  switch (offset) {
    case regs::kGpfifoBaseLo: {
      const uint32_t lo = Merge(static_cast<uint32_t>(gpfifo_base_), value, byte_mask) & ~0xfu;
      gpfifo_base_ = (gpfifo_base_ & ~uint64_t{0xffffffff}) | lo;
      return true;
    }
    case regs::kGpfifoBaseHi: {
      const uint32_t hi = Merge(static_cast<uint32_t>(gpfifo_base_ >> 32), value, byte_mask);
      gpfifo_base_ = (uint64_t{hi} << 32) | (gpfifo_base_ & 0xffffffffu);
      return true;
    }
    case regs::kGpfifoEntries:
      gpfifo_entries_ = Merge(gpfifo_entries_, value, byte_mask);
      gp_get_ = 0;
      gp_put_ = 0;
      entry_ordinal_ = 0;
      CancelEntryFetch();  // a fetch from the old ring in flight: its data is not wanted
      return true;
    case regs::kGpPut:
      gp_put_ = Merge(gp_put_, value, byte_mask);
      ++counters_.doorbells;
      return true;
    case regs::kIntrStatus:
      intr_status_ &= ~(value & byte_mask & regs::kIntrMask);
      return true;
    case regs::kIntrEnable: {
      const uint32_t before = intr_status_ & intr_enable_;
      intr_enable_ = Merge(intr_enable_, value, byte_mask) & regs::kIntrMask;
      SignalEnabledEdges(before);
      return true;
    }
    case regs::kControl: {
      const uint32_t written = Merge(enabled_ ? regs::kControlEnable : 0u, value, byte_mask);
      enabled_ = (written & regs::kControlEnable) != 0;
      if ((value & byte_mask & regs::kControlRestart) != 0 && error_ != ChannelError::kNone) {
        error_ = ChannelError::kNone;
        error_info_ = 0;
      }
      return true;
    }
    case regs::kGpGet:
    case regs::kStatus:
    case regs::kErrorCode:
    case regs::kErrorInfo:
      return true;  // read-only
    default:
      return false;
  }
}

uint32_t Channel::status() const {
  if (error_ != ChannelError::kNone) return regs::kStatusError;
  const bool work = running_ || entry_fetching_ || !entries_.empty() || gp_get_ != gp_put_;
  return work ? regs::kStatusBusy : regs::kStatusIdle;
}

// --- Interrupts and errors ---

void Channel::SignalEnabledEdges(uint32_t asserted_before) {
  const uint32_t rising = intr_status_ & intr_enable_ & ~asserted_before;
  if ((rising & regs::kIntrSemaphore) != 0) signal_(0);
  if ((rising & regs::kIntrError) != 0) signal_(config_.msix().table_size > 1 ? 1 : 0);
}

void Channel::RaiseInterrupt(uint32_t bits) {
  const uint32_t before = intr_status_ & intr_enable_;
  intr_status_ |= bits;
  SignalEnabledEdges(before);
}

void Channel::Fail(ChannelError error, uint32_t index, bool consume) {
  // A failing pushbuffer's entry is consumed (the next one is fetched on restart); entries
  // fetched after it, and pushbuffers fetched ahead, are dropped and fetched again. A failed
  // GPFIFO fetch consumes nothing.
  if (consume && RingValid()) gp_get_ = (index + 1) & (gpfifo_entries_ - 1);
  error_ = error;
  error_info_ = index;
  ++counters_.channel_errors;
  copy_.Abort();
  dma_.CancelAll();
  entries_.clear();
  words_.clear();
  entry_buffer_.clear();
  entry_fetching_ = false;
  entry_fetch_error_ = ChannelError::kNone;
  running_ = false;
  active_ = Active::kNone;
  current_.reset();
  RaiseInterrupt(regs::kIntrError);
}

void Channel::CancelEntryFetch() {
  if (entry_fetching_) dma_.CancelRead(entry_job_);
  entry_fetching_ = false;
  entry_buffer_.clear();
  entry_fetch_error_ = ChannelError::kNone;
}

void Channel::Reset() {
  copy_.Abort();
  CancelEntryFetch();
  dma_.CancelAll();
  gpfifo_base_ = 0;
  gpfifo_entries_ = 0;
  gp_get_ = 0;
  gp_put_ = 0;
  enabled_ = false;
  error_ = ChannelError::kNone;
  error_info_ = 0;
  intr_status_ = 0;
  intr_enable_ = 0;
  entries_.clear();
  running_ = false;
  words_.clear();
  pc_ = 0;
  active_ = Active::kNone;
  semaphore_stalled_ = false;
  entry_ordinal_ = 0;
  current_.reset();
}

// --- Engine ---

bool Channel::RingValid() const {
  const uint32_t n = gpfifo_entries_;
  return n >= 1 && n <= kMaxGpfifoEntries && std::has_single_bit(n) && gp_put_ < n && gp_get_ < n &&
         uint64_t{n} * kGpfifoEntryBytes - 1 <= UINT64_MAX - gpfifo_base_;
}

void Channel::IssueReads(uint64_t job, TlpQueue& out) {
  while (out.size() < kQueueLimit && dma_.IssueRead(job, out)) {
  }
}

uint64_t Channel::NextDeadline() const {
  if (error_ != ChannelError::kNone || !running_) return UINT64_MAX;
  if (active_ == Active::kKernel) return wait_until_;
  if (active_ == Active::kCopy) return copy_.wake_time();
  return UINT64_MAX;
}

void Channel::Step(uint64_t now, TlpQueue& out) {
  while (error_ == ChannelError::kNone) {
    bool progressed = FetchStep(now, out);
    if (error_ != ChannelError::kNone) return;
    progressed = (running_ ? Execute(now, out) : StartEntry()) || progressed;
    if (!progressed) return;
  }
}

// --- Fetching ---

bool Channel::FetchStep(uint64_t now, TlpQueue& out) {
  bool progressed = false;
  if (entry_fetching_ && dma_.ReadDone(entry_job_)) {
    FinishEntryFetch();
    progressed = true;
  }
  const size_t window = std::min(entries_.size(), size_t{prefetch_} + 1);  // what may be fetching
  for (size_t i = 0; i < window; ++i) {
    Entry& e = entries_[i];
    if (e.fetch == Fetch::kFetching && dma_.ReadDone(e.job)) {
      e.fetch = Fetch::kArrived;
      e.arrived = now;
      progressed = true;
    }
  }
  if (StartPushbufferFetches()) progressed = true;
  if (StartEntryFetch()) progressed = true;
  if (error_ != ChannelError::kNone || !BusMaster()) return progressed;
  // Reads go out in the order the work will need them: the pushbuffers in entry order, then
  // GPFIFO entries; a running copy's reads take the tags left.
  for (size_t i = 0; i < std::min(entries_.size(), size_t{prefetch_} + 1); ++i) {
    if (entries_[i].fetch == Fetch::kFetching) IssueReads(entries_[i].job, out);
  }
  if (entry_fetching_) IssueReads(entry_job_, out);
  return progressed;
}

bool Channel::StartPushbufferFetches() {
  bool started = false;
  const uint32_t mrrs = config_.max_read_request_size();
  const size_t window = std::min(entries_.size(), size_t{prefetch_} + 1);
  for (size_t i = 0; i < window; ++i) {
    Entry& e = entries_[i];
    if (e.fetch == Fetch::kFailed) break;  // nothing is fetched past a failing entry
    if (e.fetch != Fetch::kNone) continue;
    if (const ChannelError err = CheckGpfifoEntry(e.entry); err != ChannelError::kNone) {
      e.fetch = Fetch::kFailed;
      e.error = err;
      started = true;
      break;
    }
    if (!BusMaster()) break;
    e.job = NewJob();
    dma_.StartRead(e.job, e.entry.pushbuffer, e.entry.length, mrrs);
    e.bytes.assign(e.entry.length, 0);
    e.fetch = Fetch::kFetching;
    started = true;
  }
  return started;
}

bool Channel::StartEntryFetch() {
  // With prefetch 0 the next GPFIFO entries are fetched once every fetched one is done;
  // otherwise as soon as fewer than prefetch + 1 entries wait.
  if (entry_fetching_ || entry_fetch_error_ != ChannelError::kNone || !enabled_ ||
      gp_get_ == gp_put_ || entries_.size() > prefetch_) {
    return false;
  }
  if (!RingValid()) {
    // BAD_RING once the entries fetched before are done (they are consumed: they run).
    if (!entries_.empty() || running_) return false;
    Fail(ChannelError::kBadRing, gp_get_, /*consume=*/false);
    return false;
  }
  if (!BusMaster()) return false;
  const uint32_t mrrs = config_.max_read_request_size();
  const uint32_t n = gpfifo_entries_;
  const uint32_t pending = (gp_put_ - gp_get_) & (n - 1);
  fetch_first_ = gp_get_;
  fetch_count_ = std::min({pending, n - gp_get_, std::max(1u, mrrs / kGpfifoEntryBytes)});
  entry_buffer_.assign(size_t{fetch_count_} * kGpfifoEntryBytes, 0);
  entry_job_ = NewJob();
  dma_.StartRead(entry_job_, gpfifo_base_ + uint64_t{gp_get_} * kGpfifoEntryBytes,
                 entry_buffer_.size(), mrrs);
  entry_fetching_ = true;
  return true;
}

void Channel::FinishEntryFetch() {
  entry_fetching_ = false;
  for (uint32_t i = 0; i < fetch_count_; ++i) {
    const std::span<const uint8_t, kGpfifoEntryBytes> bytes(
        entry_buffer_.data() + size_t{i} * kGpfifoEntryBytes, kGpfifoEntryBytes);
    Entry e;
    e.index = fetch_first_ + i;
    e.entry = DecodeGpfifoEntry(bytes);
    entries_.push_back(std::move(e));
  }
  entry_buffer_.clear();
  counters_.gpfifo_entries += fetch_count_;
  gp_get_ = (fetch_first_ + fetch_count_) & (gpfifo_entries_ - 1);
}

Channel::Entry* Channel::FetchingEntry(uint64_t job) {
  for (size_t i = 0; i < std::min(entries_.size(), size_t{prefetch_} + 1); ++i) {
    if (entries_[i].fetch == Fetch::kFetching && entries_[i].job == job) return &entries_[i];
  }
  return nullptr;
}

void Channel::FetchFailed(uint64_t job, ChannelError error) {
  if (entry_fetching_ && job == entry_job_) {
    CancelEntryFetch();
    entry_fetch_error_ = error;
  } else if (Entry* e = FetchingEntry(job)) {
    dma_.CancelRead(job);
    e->fetch = Fetch::kFailed;
    e->error = error;
    e->bytes.clear();
  } else {
    return;
  }
  if (!running_) RaiseDeferredError();
}

bool Channel::RaiseDeferredError() {
  if (entries_.empty()) {
    if (entry_fetch_error_ == ChannelError::kNone) return false;
    Fail(entry_fetch_error_, fetch_first_, /*consume=*/false);
    return true;
  }
  const Entry& e = entries_.front();
  if (e.fetch != Fetch::kFailed) return false;
  Fail(e.error, e.index, /*consume=*/true);
  return true;
}

void Channel::OnReadCompletion(const DmaCompletion& c) {
  if (error_ != ChannelError::kNone) return;
  if (c.kind == DmaCompletion::Kind::kFailed) {
    if (running_ && active_ == Active::kCopy && c.job == copy_job_) {
      Fail(ChannelError::kDmaUr, entries_.front().index, /*consume=*/true);
    } else {
      FetchFailed(c.job, ChannelError::kDmaUr);
    }
    return;
  }
  if (c.kind != DmaCompletion::Kind::kData) return;
  std::vector<uint8_t>* buffer = nullptr;
  if (running_ && active_ == Active::kCopy && c.job == copy_job_) {
    copy_.OnReadData(c.offset, c.data);
    return;
  }
  if (entry_fetching_ && c.job == entry_job_) {
    buffer = &entry_buffer_;
  } else if (Entry* e = FetchingEntry(c.job)) {
    buffer = &e->bytes;
  } else {
    return;  // an abandoned job's
  }
  if (c.offset <= buffer->size() && c.data.size() <= buffer->size() - c.offset) {
    std::copy(c.data.begin(), c.data.end(), buffer->begin() + static_cast<ptrdiff_t>(c.offset));
  }
}

void Channel::OnReadTimeout(uint64_t job) {
  if (error_ != ChannelError::kNone) return;
  if (running_ && active_ == Active::kCopy && job == copy_job_) {
    Fail(ChannelError::kDmaTimeout, entries_.front().index, /*consume=*/true);
    return;
  }
  FetchFailed(job, ChannelError::kDmaTimeout);
}

// --- Execution ---

bool Channel::StartEntry() {
  if (RaiseDeferredError() || entries_.empty()) return false;
  Entry& e = entries_.front();
  if (e.fetch != Fetch::kArrived) return false;
  words_.resize(e.bytes.size() / 4);
  for (size_t i = 0; i < words_.size(); ++i) words_[i] = Le32(&e.bytes[i * 4]);
  e.bytes.clear();
  e.bytes.shrink_to_fit();
  pc_ = 0;
  running_ = true;
  time_ = std::max(time_, e.arrived);
  if (activity_) entry_ordinal_ = NextEntryOrdinal(e.index);
  return true;
}

bool Channel::Execute(uint64_t now, TlpQueue& out) {
  while (true) {
    if (active_ != Active::kNone && !ProgressActive(now, out)) return false;
    if (error_ != ChannelError::kNone) return false;
    if (pc_ >= words_.size()) {
      entries_.pop_front();
      words_.clear();
      running_ = false;
      return true;
    }
    const DecodedCommand d = DecodeCommand(std::span<const uint32_t>(words_).subspan(pc_));
    if (d.error != ChannelError::kNone) {
      Fail(d.error, entries_.front().index, /*consume=*/true);
      return false;
    }
    pc_ += d.dwords;
    ++counters_.commands;
    StartCommand(*d.command);
    if (error_ != ChannelError::kNone) return false;
  }
}
void Channel::StartCommand(const Command& command) {
  const Roofline& roofline = config_.profile().roofline;
  const auto kernel = [&](const auto& c, ActivityKind kind, uint64_t bytes = 0) {
    const ChannelError err = RunKernel(memory_, c);
    FinishKernel(err, err == ChannelError::kNone ? KernelNs(roofline, CostOf(c)) : 0, kind, bytes);
  };
  std::visit(Overloaded{
                 [](const NopCommand&) {},
                 [&](const CopyCommand& c) { StartCopy(c); },
                 [&](const SemaphoreCommand& c) { StartSemaphore(c); },
                 [&](const InterruptCommand& c) { StartInterrupt(c); },
                 [&](const Memset32Command& c) {
                   kernel(c, ActivityKind::kMemset32, uint64_t{c.count} * 4);
                 },
                 [&](const AxpyCommand& c) { kernel(c, ActivityKind::kAxpy); },
                 [&](const GemmCommand& c) { kernel(c, ActivityKind::kGemm); },
                 [&](const ReduceSumCommand& c) { kernel(c, ActivityKind::kReduceSum); },
                 [&](const TimedCommand& c) {
                   const ChannelError err = RunKernel(memory_, c);
                   FinishKernel(err, err == ChannelError::kNone ? KernelNs(c) : 0,
                                ActivityKind::kTimed, 0);
                 },
             },
             command);
}

void Channel::FinishKernel(ChannelError error, uint64_t ns, ActivityKind kind, uint64_t bytes) {
  if (error != ChannelError::kNone) {
    Fail(error, entries_.front().index, /*consume=*/true);
    return;
  }
  ++counters_.kernels;
  wait_until_ = time_ + ns;
  active_ = Active::kKernel;
  BeginActivity(kind, bytes);
}

void Channel::StartCopy(const CopyCommand& c) {
  copy_job_ = NewJob();
  const ChannelError err =
      copy_.Start(c, copy_job_, config_.max_read_request_size(), config_.max_payload_size(), time_);
  if (err != ChannelError::kNone) {
    Fail(err, entries_.front().index, /*consume=*/true);
    return;
  }
  active_ = Active::kCopy;
  BeginActivity(CopyActivityKind(c.flags), c.size);
}

void Channel::StartSemaphore(const SemaphoreCommand& c) {
  const bool timestamp = (c.flags & kSemaphoreTimestamp) != 0;
  const uint64_t bytes = timestamp ? 16 : (c.flags & kSemaphore64) != 0 ? 8 : 4;
  if (c.address % bytes != 0) {
    Fail(ChannelError::kBadAlignment, entries_.front().index, /*consume=*/true);
    return;
  }
  if (bytes - 1 > UINT64_MAX - c.address) {
    Fail(ChannelError::kBadAddress, entries_.front().index, /*consume=*/true);
    return;
  }
  semaphore_ = c;
  semaphore_stalled_ = false;
  active_ = Active::kSemaphore;
}

void Channel::StartInterrupt(const InterruptCommand& c) {
  if (c.vector >= config_.msix().table_size) {
    Fail(ChannelError::kBadVector, entries_.front().index, /*consume=*/true);
    return;
  }
  // INTR_STATUS bit 0 records it; the message is the command's vector, whatever INTR_ENABLE.
  intr_status_ |= regs::kIntrSemaphore;
  signal_(static_cast<uint16_t>(c.vector));
}

void Channel::ReleaseSemaphore(TlpQueue& out) {
  const SemaphoreCommand& c = semaphore_;
  std::vector<uint8_t> data;
  if ((c.flags & kSemaphoreTimestamp) != 0) {
    PutLe64(data, c.payload);
    PutLe64(data, time_);
  } else {
    PutLe64(data, c.payload);
    if ((c.flags & kSemaphore64) == 0) data.resize(4);
  }
  const uint32_t mps = config_.max_payload_size();
  dxpu_tlp_mwr_split split{};
  dxpu_tlp_mwr_split_init(&split, c.address, data.data(), data.size(), mps);
  std::vector<uint8_t> buf(mps);
  dxpu_tlp w{};
  while (dxpu_tlp_mwr_split_next(&split, buf.data(), &w)) {
    std::vector<uint8_t> payload(w.payload, w.payload + dxpu_tlp_payload_len(&w));
    out.push_back(
        dma_.MakeWrite(w.addr, w.first_be, w.last_be, std::move(payload), TlpOrigin::kDmaWrite));
  }
  ++counters_.semaphores;
  if ((c.flags & kSemaphoreInterrupt) != 0) RaiseInterrupt(regs::kIntrSemaphore);
}

bool Channel::ProgressActive(uint64_t now, TlpQueue& out) {
  switch (active_) {
    case Active::kNone:
      return true;
    case Active::kCopy: {
      if (BusMaster()) copy_.Pump(out, kQueueLimit);
      const std::optional<uint64_t> finished = copy_.Finished(now);
      if (!finished) return false;
      time_ = std::max(time_, *finished);
      copy_.Abort();
      ++counters_.copies;
      break;
    }
    case Active::kKernel:
      if (now < wait_until_) return false;
      time_ = wait_until_;
      break;
    case Active::kSemaphore:
      if (!BusMaster()) {
        semaphore_stalled_ = true;
        return false;
      }
      if (semaphore_stalled_) time_ = std::max(time_, now);
      ReleaseSemaphore(out);
      break;
  }
  active_ = Active::kNone;
  EndActivity();
  return true;
}

// --- Activity log ---

// Entries run in ring order: ordinal o sits at ring index (o - 1) mod N. An entry that a
// failure consumed without running it is skipped (fewer than N of them between two that run).
uint64_t Channel::NextEntryOrdinal(uint32_t index) const {
  const uint64_t n = gpfifo_entries_;
  if (!std::has_single_bit(n)) return entry_ordinal_ + 1;
  const uint64_t mask = n - 1;
  const uint64_t last_index = (entry_ordinal_ - 1) & mask;  // N - 1 before the first entry
  const uint64_t ahead = (uint64_t{index} - last_index) & mask;
  return entry_ordinal_ + (ahead == 0 ? n : ahead);
}

void Channel::BeginActivity(ActivityKind kind, uint64_t bytes) {
  if (!activity_) return;
  current_ = CommandActivity{
      .entry = entry_ordinal_, .kind = kind, .bytes = bytes, .start_ns = time_, .end_ns = 0};
}

void Channel::EndActivity() {
  if (!current_) return;
  current_->end_ns = time_;
  const CommandActivity done = *current_;
  current_.reset();
  activity_(done);
}

}  // namespace dxpu::gpu
