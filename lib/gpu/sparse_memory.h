// sparse_memory.h - a byte-addressable memory of fixed size, stored sparsely: 64 KiB pages are
// allocated on the first write that touches them, and bytes never written read as zero. The
// GPU model's device memory (a 40 GiB profile costs only what is touched) and the test host's
// memory.
#ifndef DXPU_LIB_GPU_SPARSE_MEMORY_H_
#define DXPU_LIB_GPU_SPARSE_MEMORY_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>

namespace dxpu::gpu {

class SparseMemory {
 public:
  static constexpr uint64_t kPageSize = uint64_t{64} << 10;

  explicit SparseMemory(uint64_t size) : size_(size) {}
  // Not movable: last_ points into pages_.
  SparseMemory(const SparseMemory&) = delete;
  SparseMemory& operator=(const SparseMemory&) = delete;

  uint64_t size() const { return size_; }
  // Whether [offset, offset + length) lies inside the memory (without wrapping).
  bool Contains(uint64_t offset, uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }

  // Out of range: false, nothing read or written.
  bool Read(uint64_t offset, std::span<uint8_t> out) const;
  bool Write(uint64_t offset, std::span<const uint8_t> in);
  // Zeroes a range without allocating pages that were never written.
  bool Zero(uint64_t offset, uint64_t length);
  // Copies `length` bytes from src to dst as memmove does (overlap allowed); pages never
  // written copy as zeros without being allocated at the source.
  bool Copy(uint64_t dst, uint64_t src, uint64_t length);
  // Every byte zero again; frees every page.
  void Clear() {
    pages_.clear();
    last_ = {};
  }

  // Bytes held by allocated pages.
  uint64_t resident_bytes() const { return pages_.size() * kPageSize; }

 private:
  using Page = std::array<uint8_t, kPageSize>;

  const Page* FindPage(uint64_t index) const;
  Page& PageForWrite(uint64_t index);

  // The page written last (a DMA stream stays in one page for 64 KiB): a lookup that hits it
  // skips the hash map. Set by writes only, so that const reads stay free of side effects;
  // forgotten when a page is freed.
  struct LastPage {
    uint64_t index = UINT64_MAX;
    Page* page = nullptr;
  };

  uint64_t size_;
  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;
  LastPage last_;
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_SPARSE_MEMORY_H_
