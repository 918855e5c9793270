// sparse_memory.cc - page lookup, and reads, writes, zeroing and copies split at page
// boundaries.
#include "gpu/sparse_memory.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace dxpu::gpu {

const SparseMemory::Page* SparseMemory::FindPage(uint64_t index) const {
  if (index == last_.index) return last_.page;
  const auto it = pages_.find(index);
  return it == pages_.end() ? nullptr : it->second.get();
}

SparseMemory::Page& SparseMemory::PageForWrite(uint64_t index) {
  if (index == last_.index) return *last_.page;
  std::unique_ptr<Page>& page = pages_[index];
  if (!page) page = std::make_unique<Page>();  // value-initialized: zeros
  last_ = {index, page.get()};
  return *page;
}

bool SparseMemory::Read(uint64_t offset, std::span<uint8_t> out) const {
  if (!Contains(offset, out.size())) return false;
  size_t done = 0;
  while (done < out.size()) {
    const uint64_t at = offset + done;
    const uint64_t in_page = at % kPageSize;
    const size_t n = std::min<uint64_t>(out.size() - done, kPageSize - in_page);
    if (const Page* page = FindPage(at / kPageSize)) {
      std::memcpy(out.data() + done, page->data() + in_page, n);
    } else {
      std::memset(out.data() + done, 0, n);
    }
    done += n;
  }
  return true;
}

bool SparseMemory::Write(uint64_t offset, std::span<const uint8_t> in) {
  if (!Contains(offset, in.size())) return false;
  size_t done = 0;
  while (done < in.size()) {
    const uint64_t at = offset + done;
    const uint64_t in_page = at % kPageSize;
    const size_t n = std::min<uint64_t>(in.size() - done, kPageSize - in_page);
    std::memcpy(PageForWrite(at / kPageSize).data() + in_page, in.data() + done, n);
    done += n;
  }
  return true;
}

bool SparseMemory::Zero(uint64_t offset, uint64_t length) {
  if (!Contains(offset, length)) return false;
  uint64_t done = 0;
  while (done < length) {
    const uint64_t at = offset + done;
    const uint64_t in_page = at % kPageSize;
    const uint64_t n = std::min(length - done, kPageSize - in_page);
    const auto it = pages_.find(at / kPageSize);
    if (it != pages_.end()) {
      if (n == kPageSize) {
        if (last_.index == it->first) last_ = {};
        pages_.erase(it);
      } else {
        std::memset(it->second->data() + in_page, 0, n);
      }
    }
    done += n;
  }
  return true;
}

bool SparseMemory::Copy(uint64_t dst, uint64_t src, uint64_t length) {
  if (!Contains(dst, length) || !Contains(src, length)) return false;
  if (length == 0 || dst == src) return true;
  // Chunks that never straddle a source page, front to back when the destination is below the
  // source and back to front otherwise, so overlapping ranges copy as memmove does.
  std::vector<uint8_t> chunk;
  const bool forward = dst < src;
  uint64_t left = length;
  while (left > 0) {
    uint64_t at = 0;  // offset of this chunk within the transfer
    uint64_t n = 0;
    if (forward) {
      at = length - left;
      n = std::min(left, kPageSize - (src + at) % kPageSize);
    } else {
      const uint64_t end = src + left;  // one past the chunk's last source byte
      const uint64_t in_page = end % kPageSize;
      n = std::min(left, in_page == 0 ? kPageSize : in_page);
      at = left - n;
    }
    if (FindPage((src + at) / kPageSize) == nullptr) {
      Zero(dst + at, n);
    } else {
      chunk.resize(n);
      Read(src + at, chunk);
      Write(dst + at, chunk);
    }
    left -= n;
  }
  return true;
}

}  // namespace dxpu::gpu
