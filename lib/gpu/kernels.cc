// kernels.cc - MEMSET32, AXPY, GEMM and REDUCE_SUM on device memory, their costs and the
// roofline; TIMED, which computes nothing for a given time.
#include "gpu/kernels.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace dxpu::gpu {
namespace {

// A device-memory operand of `elements` fp32 values.
ChannelError CheckOperand(const SparseMemory& memory, uint64_t address, uint64_t elements) {
  if (address % 4 != 0) return ChannelError::kBadAlignment;
  if (!memory.Contains(address, elements * 4)) return ChannelError::kBadAddress;
  return ChannelError::kNone;
}

// Alignment errors first, then range errors, over all operands.
ChannelError CheckOperands(const SparseMemory& memory,
                           std::initializer_list<std::pair<uint64_t, uint64_t>> operands) {
  for (const auto& [address, elements] : operands) {
    if (address % 4 != 0) return ChannelError::kBadAlignment;
  }
  for (const auto& [address, elements] : operands) {
    if (const ChannelError e = CheckOperand(memory, address, elements); e != ChannelError::kNone) {
      return e;
    }
  }
  return ChannelError::kNone;
}

// fp32 operands are little-endian in device memory, as on the (little-endian) host CPU.
std::vector<float> Load(const SparseMemory& memory, uint64_t address, uint64_t elements) {
  std::vector<float> v(elements);
  memory.Read(address, std::span<uint8_t>(reinterpret_cast<uint8_t*>(v.data()), elements * 4));
  return v;
}

// The transpose of a row-major rows x cols matrix.
std::vector<float> Transposed(const std::vector<float>& m, uint64_t rows, uint64_t cols) {
  std::vector<float> t(m.size());
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t col = 0; col < cols; ++col) t[col * rows + r] = m[r * cols + col];
  }
  return t;
}

void Store(SparseMemory& memory, uint64_t address, const std::vector<float>& v) {
  memory.Write(address,
               std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4));
}

// amount / rate in ns, computed as amount * 1e9 / rate so that a whole number of ns comes out
// exactly (1e6 flop at 1e12 flop/s is 1000 ns, not 1000.0000000000001).
double Nanoseconds(double amount, double per_second) {
  return per_second > 0 ? amount * 1e9 / per_second : 0.0;
}

}  // namespace

KernelCost CostOf(const Memset32Command& c) { return {.flops = 0, .bytes = 4.0 * c.count}; }

KernelCost CostOf(const AxpyCommand& c) { return {.flops = 2.0 * c.n, .bytes = 12.0 * c.n}; }

KernelCost CostOf(const GemmCommand& c) {
  const double m = c.m;
  const double n = c.n;
  const double k = c.k;
  return {.flops = 2 * m * n * k, .bytes = 4 * (m * k + k * n + 2 * m * n)};
}

KernelCost CostOf(const ReduceSumCommand& c) { return {.flops = 1.0 * c.n, .bytes = 4.0 * c.n}; }

uint64_t KernelNs(const Roofline& roofline, const KernelCost& cost) {
  const double ns = std::max(Nanoseconds(cost.flops, roofline.peak_fp32_flops),
                             Nanoseconds(cost.bytes, roofline.memory_bandwidth_bytes));
  return roofline.launch_overhead_ns + static_cast<uint64_t>(std::ceil(ns));
}

uint64_t KernelNs(const TimedCommand& c) { return c.ns; }

uint64_t DeviceCopyNs(const Roofline& roofline, uint64_t size) {
  return static_cast<uint64_t>(
      std::ceil(Nanoseconds(2.0 * static_cast<double>(size), roofline.memory_bandwidth_bytes)));
}

ChannelError RunKernel(SparseMemory& memory, const Memset32Command& c) {
  if (c.count > kMaxVectorElements) return ChannelError::kKernelTooBig;
  if (const ChannelError e = CheckOperands(memory, {{c.dst, c.count}}); e != ChannelError::kNone) {
    return e;
  }
  const uint64_t bytes = uint64_t{c.count} * 4;
  if (c.value == 0) {
    memory.Zero(c.dst, bytes);
    return ChannelError::kNone;
  }
  std::vector<uint8_t> pattern(std::min<uint64_t>(bytes, SparseMemory::kPageSize));
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<uint8_t>(c.value >> (8 * (i % 4)));
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min<uint64_t>(bytes - done, pattern.size());
    memory.Write(c.dst + done, std::span<const uint8_t>(pattern.data(), n));
    done += n;
  }
  return ChannelError::kNone;
}

ChannelError RunKernel(SparseMemory& memory, const AxpyCommand& c) {
  if (c.n > kMaxVectorElements) return ChannelError::kKernelTooBig;
  if (const ChannelError e = CheckOperands(memory, {{c.x, c.n}, {c.y, c.n}});
      e != ChannelError::kNone) {
    return e;
  }
  const std::vector<float> x = Load(memory, c.x, c.n);
  std::vector<float> y = Load(memory, c.y, c.n);
  for (size_t i = 0; i < y.size(); ++i) y[i] = c.a * x[i] + y[i];
  Store(memory, c.y, y);
  return ChannelError::kNone;
}

ChannelError RunKernel(SparseMemory& memory, const GemmCommand& c) {
  const uint64_t mk = uint64_t{c.m} * c.k;
  const uint64_t kn = uint64_t{c.k} * c.n;
  const uint64_t mn = uint64_t{c.m} * c.n;
  if (mk > kMaxGemmMatrix || kn > kMaxGemmMatrix || mn > kMaxGemmMatrix ||
      mn * c.k > kMaxGemmWork) {
    return ChannelError::kKernelTooBig;
  }
  if (const ChannelError e = CheckOperands(memory, {{c.a, mk}, {c.b, kn}, {c.c, mn}});
      e != ChannelError::kNone) {
    return e;
  }
  if ((c.flags & ~kGemmFlagsMask) != 0) return ChannelError::kBadFlags;
  // Operands as stored, then in the layout the product reads (op(A) m x k, op(B) k x n): a
  // transposed operand is transposed first, so the arithmetic is the same either way.
  std::vector<float> a = Load(memory, c.a, mk);
  std::vector<float> b = Load(memory, c.b, kn);
  if ((c.flags & kGemmTransposeA) != 0) a = Transposed(a, c.k, c.m);
  if ((c.flags & kGemmTransposeB) != 0) b = Transposed(b, c.n, c.k);
  std::vector<float> out = c.beta == 0.0f ? std::vector<float>(mn) : Load(memory, c.c, mn);
  std::vector<float> row(c.n);
  for (uint64_t i = 0; i < c.m; ++i) {
    // row[j] accumulates A[i][p] * B[p][j] for p = 0, 1, ...: each element's sum in order.
    std::fill(row.begin(), row.end(), 0.0f);
    for (uint64_t p = 0; p < c.k; ++p) {
      const float aip = a[i * c.k + p];
      const float* bp = &b[p * c.n];
      for (uint64_t j = 0; j < c.n; ++j) row[j] += aip * bp[j];
    }
    float* ci = &out[i * c.n];
    for (uint64_t j = 0; j < c.n; ++j) {
      ci[j] = c.beta == 0.0f ? c.alpha * row[j] : c.alpha * row[j] + c.beta * ci[j];
    }
  }
  Store(memory, c.c, out);
  return ChannelError::kNone;
}

ChannelError RunKernel(SparseMemory& memory, const ReduceSumCommand& c) {
  if (c.n > kMaxVectorElements) return ChannelError::kKernelTooBig;
  if (const ChannelError e = CheckOperands(memory, {{c.x, c.n}, {c.out, 1}});
      e != ChannelError::kNone) {
    return e;
  }
  const std::vector<float> x = Load(memory, c.x, c.n);
  double sum = 0;
  for (const float v : x) sum += v;
  Store(memory, c.out, {static_cast<float>(sum)});
  return ChannelError::kNone;
}

ChannelError RunKernel(SparseMemory& /*memory*/, const TimedCommand& c) {
  return c.ns > kMaxTimedNs ? ChannelError::kKernelTooBig : ChannelError::kNone;
}

}  // namespace dxpu::gpu
