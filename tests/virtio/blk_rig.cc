// blk_rig.cc - the rig's setup and its block requests.
#include "blk_rig.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "virtio/little_endian.h"
#include "virtio/virtio_blk_regs.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::virtio::test {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "dxpu-virtio-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

BlkRig::BlkRig(VirtioBlkOptions options, VirtioPciOptions pci, gpu::TestHostOptions host_options) {
  file = dir.path() + "/disk.img";
  if (options.path.empty()) options.path = file;
  file = options.path;
  if (options.size_bytes == 0) options.size_bytes = 8u << 20;
  std::unique_ptr<VirtioBlkDevice> device = VirtioBlkDevice::Create(options, &error);
  if (!device) return;
  owner = VirtioPciFunction::Create(std::move(device), pci, &error);
  if (!owner) return;
  function = owner.get();
  host = std::make_unique<gpu::TestHost>(*owner, host_options);
  driver = std::make_unique<VirtioDriver>(*host);
}

bool BlkRig::Start(uint16_t queues, uint16_t size) {
  if (!driver || !driver->Probe()) return false;
  const uint8_t status = driver->Negotiate(~uint64_t{0});
  if ((status & kStatusFeaturesOk) == 0) return false;
  for (uint16_t q = 0; q < queues; ++q) {
    driver->SetupQueue(q, size, kQueueBase + kQueueStride * q, static_cast<uint16_t>(q + 1));
  }
  driver->WriteCommon(kConfigMsixVector, 2, 0);
  driver->DriverOk();
  return (driver->status() & kStatusDriverOk) != 0;
}

uint64_t BlkRig::Allocate(uint64_t bytes) {
  const uint64_t at = next_buffer;
  next_buffer += (bytes + 0xfff) & ~uint64_t{0xfff};
  if (bytes == 0) next_buffer += 0x1000;
  return at;
}

std::vector<Buffer> BlkRig::Chain(uint32_t type, uint64_t sector, std::span<const uint8_t> out,
                                  uint32_t in_len) {
  std::vector<uint8_t> header;
  AppendLe(header, type, 4);
  AppendLe(header, 0, 4);
  AppendLe(header, sector, 8);
  const uint64_t h = Allocate(header.size());
  driver->Write(h, header);
  std::vector<Buffer> chain{{h, static_cast<uint32_t>(header.size()), false}};
  if (!out.empty()) {
    const uint64_t d = Allocate(out.size());
    driver->Write(d, out);
    chain.push_back({d, static_cast<uint32_t>(out.size()), false});
  }
  if (in_len != 0) {
    last_data_address = Allocate(in_len);
    driver->Write(last_data_address, std::vector<uint8_t>(in_len, 0xee));
    chain.push_back({last_data_address, in_len, true});
  }
  last_status_address = Allocate(1);
  driver->Write(last_status_address, std::vector<uint8_t>{0xff});
  chain.push_back({last_status_address, 1, true});
  return chain;
}

BlkResult BlkRig::Request(uint16_t q, uint32_t type, uint64_t sector, std::span<const uint8_t> out,
                          uint32_t in_len, bool indirect) {
  const std::vector<Buffer> chain = Chain(type, sector, out, in_len);
  std::optional<uint64_t> table;
  if (indirect) table = Allocate(chain.size() * kDescSize);
  driver->Submit(q, chain, table);
  BlkResult r;
  const uint16_t want = static_cast<uint16_t>(used_seen[q] + 1);
  r.done = driver->WaitUsed(q, want) && driver->used_idx(q) == want;
  if (!r.done) return r;
  r.used = driver->used(q, used_seen[q]);
  used_seen[q] = want;
  r.status = driver->Read(last_status_address, 1)[0];
  if (in_len != 0) r.data = driver->Read(last_data_address, in_len);
  return r;
}

std::vector<uint8_t> BlkRig::FileBytes(uint64_t offset, size_t length) const {
  std::vector<uint8_t> out(length);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t n = ::pread(fd, out.data(), length, static_cast<off_t>(offset));
  ::close(fd);
  if (n != static_cast<ssize_t>(length)) return {};
  return out;
}

void BlkRig::WriteFile(uint64_t offset, std::span<const uint8_t> bytes) const {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
  ::close(fd);
}

uint64_t BlkRig::FileAllocatedBytes() const {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace dxpu::virtio::test
