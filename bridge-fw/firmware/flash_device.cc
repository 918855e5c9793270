// flash_device.cc - the file-backed NOR flash model (flash_device.h).
#include "bridge-fw/firmware/flash_device.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "core/crc32c.h"
#include "dxpu/compat.h"
#include "lib/util/errno_text.h"

namespace dxpu::firmware {
namespace {

constexpr size_t kOffBridgeId = 32;
constexpr size_t kOffRootKey = 48;
constexpr size_t kOffFactoryCrc = 160;
constexpr uint32_t kMaxBlocks = 1u << 16;

bool PowerOfTwo(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

FirmwareError IoError(const std::string& what) {
  return {"flash-io", fmt::format("{}: {}", what, util::ErrnoText(errno))};
}

void Delay(uint64_t ns) {
  if (ns != 0) std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

FirmwareError PowerLost() {
  return {"power-lost", "the flash lost power (a power cut the test armed)"};
}

}  // namespace

std::vector<uint8_t> EncodeFactory(const FactoryInfo& info) {
  std::vector<uint8_t> b(kFactoryBytes, 0);
  dxpu_put_be32(b.data(), kFactoryMagic);
  dxpu_put_be16(&b[4], kLayoutVersion);
  dxpu_put_be32(&b[8], info.geometry.erase_block);
  dxpu_put_be32(&b[12], info.geometry.granule);
  dxpu_put_be32(&b[16], info.geometry.blocks);
  dxpu_put_be32(&b[20], info.hw_revision);
  dxpu_put_be32(&b[24], info.blocks_per_slot);
  std::ranges::copy(info.bridge_id, b.begin() + kOffBridgeId);
  std::ranges::copy(info.root_key, b.begin() + kOffRootKey);
  dxpu_put_be32(&b[kOffFactoryCrc], dxpu_crc32c(0, b.data(), kOffFactoryCrc));
  return b;
}

FirmwareResult<FactoryInfo> DecodeFactory(std::span<const uint8_t> b) {
  if (b.size() < kFactoryBytes || dxpu_get_be32(b.data()) != kFactoryMagic)
    return FirmwareError{"bad-factory",
                         "no factory block (not a DxPU bridge flash, or never "
                         "initialised: dxpu flash init)"};
  if (dxpu_get_be32(&b[kOffFactoryCrc]) != dxpu_crc32c(0, b.data(), kOffFactoryCrc))
    return FirmwareError{"bad-factory", "the factory block's CRC does not match: it is damaged"};
  if (dxpu_get_be16(&b[4]) != kLayoutVersion)
    return FirmwareError{"bad-factory", fmt::format("flash layout version {}; this bridge reads "
                                                    "version {}",
                                                    dxpu_get_be16(&b[4]), kLayoutVersion)};
  FactoryInfo info;
  info.geometry.erase_block = dxpu_get_be32(&b[8]);
  info.geometry.granule = dxpu_get_be32(&b[12]);
  info.geometry.blocks = dxpu_get_be32(&b[16]);
  info.hw_revision = dxpu_get_be32(&b[20]);
  info.blocks_per_slot = dxpu_get_be32(&b[24]);
  std::copy_n(b.begin() + kOffBridgeId, info.bridge_id.size(), info.bridge_id.begin());
  std::copy_n(b.begin() + kOffRootKey, info.root_key.size(), info.root_key.begin());
  if (!dxpu_all_zero(&b[6], 2) || !dxpu_all_zero(&b[28], 4) ||
      !dxpu_all_zero(&b[kOffRootKey + 32], kOffFactoryCrc - kOffRootKey - 32))
    return FirmwareError{"bad-factory", "a reserved byte of the factory block is not zero"};
  FirmwareResult<Ok> ok = CheckFactory(info);
  if (!ok.ok()) return ok.error();
  return info;
}

FirmwareResult<Ok> CheckFactory(const FactoryInfo& info) {
  const FlashGeometry& g = info.geometry;
  auto bad = [](std::string m) { return FirmwareError{"bad-geometry", std::move(m)}; };
  if (!PowerOfTwo(g.erase_block) || g.erase_block < 4096 || g.erase_block > (1u << 20))
    return bad(fmt::format("erase block {}: a power of two from 4 KiB to 1 MiB", g.erase_block));
  if (!PowerOfTwo(g.granule) || g.granule < 64 || g.granule > 4096 || g.granule > g.erase_block)
    return bad(
        fmt::format("write granule {}: a power of two from 64 to 4096 bytes, not larger "
                    "than the erase block",
                    g.granule));
  if (info.blocks_per_slot == 0 || info.blocks_per_slot > kMaxBlocks)
    return bad(fmt::format("{} blocks per slot: 1 to {}", info.blocks_per_slot, kMaxBlocks));
  const uint64_t need = kFirstSlotBlock + 2 * uint64_t{info.blocks_per_slot};
  if (g.blocks < need || g.blocks > kMaxBlocks)
    return bad(
        fmt::format("{} blocks: the factory block, two boot-state blocks, two key-list blocks "
                    "and two slots of {} need {} (at most {})",
                    g.blocks, info.blocks_per_slot, need, kMaxBlocks));
  if (kKeyListBytes > g.erase_block) return bad("an erase block smaller than a key list");
  return Ok{};
}

FlashDevice::FlashDevice(link::UniqueFd fd, FactoryInfo factory)
    : fd_(std::move(fd)), factory_(std::move(factory)) {}

FirmwareResult<std::unique_ptr<FlashDevice>> FlashDevice::Create(
    const std::string& path, const FactoryInfo& info_in, std::span<const uint8_t> key_list) {
  FirmwareResult<Ok> ok = CheckFactory(info_in);
  if (!ok.ok()) return ok.error();
  FirmwareResult<KeyList> list = VerifyKeyList(key_list, info_in.root_key);
  if (!list.ok()) return list.error();
  FactoryInfo info = info_in;
  info.keys = list.value().keys;
  info.key_list_sequence = list.value().sequence;
  link::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    if (errno == EEXIST)
      return FirmwareError{"exists", fmt::format("{}: exists (a flash is initialised once)", path)};
    return IoError(path);
  }
  auto dev = std::unique_ptr<FlashDevice>(new FlashDevice(std::move(fd), info));
  // Erased from the factory: every byte 0xFF, a block at a time.
  const std::vector<uint8_t> erased(info.geometry.erase_block, 0xff);
  for (uint32_t b = 0; b < info.geometry.blocks; ++b) {
    FirmwareResult<Ok> w = dev->WriteAt(uint64_t{b} * info.geometry.erase_block, erased);
    if (!w.ok()) {
      ::unlink(path.c_str());
      return w.error();
    }
  }
  std::vector<uint8_t> block0 = EncodeFactory(info);
  block0.resize(
      (block0.size() + info.geometry.granule - 1) / info.geometry.granule * info.geometry.granule,
      0xff);
  FirmwareResult<Ok> w = dev->WriteAt(0, block0);
  if (w.ok()) w = dev->WriteKeyList(kFirstKeyListBlock, key_list);
  if (!w.ok() || ::fsync(dev->fd_.get()) != 0) {
    ::unlink(path.c_str());
    return w.ok() ? IoError(path) : w.error();
  }
  return dev;
}

FirmwareResult<std::unique_ptr<FlashDevice>> FlashDevice::Open(const std::string& path) {
  link::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return IoError(path);
  std::vector<uint8_t> b(kFactoryBytes);
  const ssize_t n = ::pread(fd.get(), b.data(), b.size(), 0);
  if (n < 0) return IoError(path);
  b.resize(static_cast<size_t>(n));
  FirmwareResult<FactoryInfo> info = DecodeFactory(b);
  if (!info.ok())
    return FirmwareError{info.error().name, fmt::format("{}: {}", path, info.error().message)};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return IoError(path);
  if (static_cast<uint64_t>(st.st_size) != info.value().geometry.size())
    return FirmwareError{
        "bad-factory",
        fmt::format("{}: {} bytes, but its factory block describes {} blocks "
                    "of {} ({} bytes)",
                    path, st.st_size, info.value().geometry.blocks,
                    info.value().geometry.erase_block, info.value().geometry.size())};
  auto dev = std::unique_ptr<FlashDevice>(new FlashDevice(std::move(fd), std::move(info).value()));
  if (FirmwareResult<Ok> keys = dev->LoadKeyList(); !keys.ok())
    return FirmwareError{keys.error().name, fmt::format("{}: {}", path, keys.error().message)};
  return dev;
}

FirmwareResult<Ok> FlashDevice::LoadKeyList() {
  std::optional<KeyList> newest;
  std::string why;
  for (uint32_t b = kFirstKeyListBlock; b < kFirstSlotBlock; ++b) {
    std::vector<uint8_t> bytes(kKeyListBytes);
    if (FirmwareResult<Ok> r = Read(uint64_t{b} * geometry().erase_block, bytes); !r.ok()) return r;
    FirmwareResult<KeyList> list = VerifyKeyList(bytes, factory_.root_key);
    if (!list.ok()) {
      why += fmt::format("{}block {}: {}", why.empty() ? "" : "; ", b, list.error().message);
      continue;
    }
    if (!newest || list.value().sequence > newest->sequence) {
      newest = list.value();
      key_list_block_ = b;
    }
  }
  if (!newest)
    return FirmwareError{"bad-key-list",
                         fmt::format("no list of trusted keys signed by the root key {} ({}): "
                                     "the bridge trusts no image",
                                     ToHex(KeyIdOf(factory_.root_key)), why)};
  factory_.keys = newest->keys;
  factory_.key_list_sequence = newest->sequence;
  return Ok{};
}

FirmwareResult<Ok> FlashDevice::WriteKeyList(uint32_t block, std::span<const uint8_t> key_list) {
  const uint32_t g = geometry().granule;
  std::vector<uint8_t> bytes(key_list.begin(), key_list.begin() + kKeyListBytes);
  bytes.resize((bytes.size() + g - 1) / g * g, 0xff);
  return Program(uint64_t{block} * geometry().erase_block, bytes);
}

FirmwareResult<Ok> FlashDevice::RotateKeys(std::span<const uint8_t> key_list) {
  FirmwareResult<KeyList> list = VerifyKeyList(key_list, factory_.root_key);
  if (!list.ok()) return list.error();
  if (list.value().sequence <= factory_.key_list_sequence)
    return FirmwareError{"stale-key-list",
                         fmt::format("key list {} is not newer than the flash's ({}): a "
                                     "rotation needs a higher sequence number",
                                     list.value().sequence, factory_.key_list_sequence)};
  const uint32_t other =
      key_list_block_ == kFirstKeyListBlock ? kFirstKeyListBlock + 1 : kFirstKeyListBlock;
  if (FirmwareResult<Ok> e = Erase(other); !e.ok()) return e;
  if (FirmwareResult<Ok> w = WriteKeyList(other, key_list); !w.ok()) return w;
  return LoadKeyList();
}

FirmwareResult<Ok> FlashDevice::Read(uint64_t offset, std::span<uint8_t> out) const {
  if (offset > geometry().size() || out.size() > geometry().size() - offset)
    return FirmwareError{"out-of-range", fmt::format("read of {} bytes at {:#x}: past the end "
                                                     "of the flash ({:#x})",
                                                     out.size(), offset, geometry().size())};
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd_.get(), out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n <= 0) return n < 0 ? IoError("flash read") : FirmwareError{"flash-io", "short read"};
    done += static_cast<size_t>(n);
  }
  return Ok{};
}

FirmwareResult<Ok> FlashDevice::WriteAt(uint64_t offset, std::span<const uint8_t> data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd_.get(), data.data() + done, data.size() - done,
                               static_cast<off_t>(offset + done));
    if (n <= 0) return n < 0 ? IoError("flash write") : FirmwareError{"flash-io", "short write"};
    done += static_cast<size_t>(n);
  }
  return Ok{};
}

size_t FlashDevice::TornBytes(size_t n) const {
  // A prefix whose length varies with the operation (1 .. n-1 bytes): a cut lands anywhere in
  // a record, a field half written included.
  return 1 + static_cast<size_t>((operations_ * 2654435761u) % (n - 1));
}

void FlashDevice::ArmPowerCut(uint64_t operations, std::function<void()> on_cut) {
  cut_armed_ = true;
  cut_at_ = operations_ + operations;
  on_cut_ = std::move(on_cut);
}

bool FlashDevice::Operate(const std::function<void()>& tear) {
  if (power_lost_) return false;
  if (cut_armed_ && operations_ == cut_at_) {
    tear();
    power_lost_ = true;
    if (on_cut_) on_cut_();
    return false;
  }
  ++operations_;
  return true;
}

FirmwareResult<Ok> FlashDevice::Erase(uint32_t block) {
  if (block == 0 || block >= geometry().blocks)
    return FirmwareError{"protected", fmt::format("erase of block {}: {}", block,
                                                  block == 0 ? "the factory block is written once"
                                                             : "past the end of the flash")};
  const uint64_t at = uint64_t{block} * geometry().erase_block;
  const std::vector<uint8_t> erased(geometry().erase_block, 0xff);
  if (!Operate([&] { (void)WriteAt(at, std::span(erased).first(TornBytes(erased.size()))); }))
    return PowerLost();
  Delay(erase_delay_ns_);
  return WriteAt(at, erased);
}

FirmwareResult<Ok> FlashDevice::Program(uint64_t offset, std::span<const uint8_t> data) {
  const uint32_t g = geometry().granule;
  if (offset % g != 0 || data.size() % g != 0)
    return FirmwareError{"unaligned", fmt::format("program of {} bytes at {:#x}: offset and "
                                                  "length must be multiples of the {}-byte "
                                                  "write granule",
                                                  data.size(), offset, g)};
  if (offset < geometry().erase_block)
    return FirmwareError{"protected", "the factory block is written once"};
  if (offset > geometry().size() || data.size() > geometry().size() - offset)
    return FirmwareError{"out-of-range", fmt::format("program of {} bytes at {:#x}: past the "
                                                     "end of the flash",
                                                     data.size(), offset)};
  std::vector<uint8_t> now(data.size());
  FirmwareResult<Ok> r = Read(offset, now);
  if (!r.ok()) return r;
  if (!std::ranges::all_of(now, [](uint8_t b) { return b == 0xff; }))
    return FirmwareError{"not-erased", fmt::format("program of {} bytes at {:#x}: not all "
                                                   "erased (erase the block first)",
                                                   data.size(), offset)};
  for (size_t at = 0; at < data.size(); at += g) {
    const std::span<const uint8_t> granule = data.subspan(at, g);
    if (!Operate([&] { (void)WriteAt(offset + at, granule.first(TornBytes(g))); }))
      return PowerLost();
    FirmwareResult<Ok> w = WriteAt(offset + at, granule);
    if (!w.ok()) return w;
  }
  Delay(program_delay_ns_ * (data.size() / g));
  return Ok{};
}

}  // namespace dxpu::firmware
