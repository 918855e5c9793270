// cpu_reference.cc - the CPU reference kernels and the comparison (cpu_reference.h).
#include "workloads/cpu_reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace dxpu::workloads {
namespace cpu {

void Gemm(size_t m, size_t n, size_t k, float alpha, std::span<const float> a,
          std::span<const float> b, float beta, std::span<float> c) {
  // The model's loop (lib/gpu/kernels.cc): a row accumulates A[i][p] * B[p][j] for p = 0, 1, ...
  // in fp32, then C[i][j] = alpha * row[j] (+ beta * C[i][j]).
  std::vector<float> row(n);
  for (size_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0.0f);
    for (size_t p = 0; p < k; ++p) {
      const float aip = a[(i * k) + p];
      const std::span<const float> bp = b.subspan(p * n, n);
      for (size_t j = 0; j < n; ++j) row[j] += aip * bp[j];
    }
    const std::span<float> ci = c.subspan(i * n, n);
    for (size_t j = 0; j < n; ++j) {
      ci[j] = beta == 0.0f ? alpha * row[j] : (alpha * row[j]) + (beta * ci[j]);
    }
  }
}

void Gemm(size_t m, size_t n, size_t k, float alpha, std::span<const float> a,
          std::span<const float> b, float beta, std::span<float> c,
          dxgpu::GemmTranspose transpose) {
  std::vector<float> at;
  std::vector<float> bt;
  if (transpose.a) {
    at.resize(m * k);
    Transpose(k, m, a.first(m * k), at);
    a = at;
  }
  if (transpose.b) {
    bt.resize(k * n);
    Transpose(n, k, b.first(k * n), bt);
    b = bt;
  }
  Gemm(m, n, k, alpha, a, b, beta, c);
}

void Axpy(float a, std::span<const float> x, std::span<float> y) {
  for (size_t i = 0; i < y.size(); ++i) y[i] = (a * x[i]) + y[i];
}

float ReduceSum(std::span<const float> x) {
  double sum = 0;
  for (const float v : x) sum += v;
  return static_cast<float>(sum);
}

void Transpose(size_t rows, size_t cols, std::span<const float> in, std::span<float> out) {
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) out[(c * rows) + r] = in[(r * cols) + c];
  }
}

size_t ArgMax(std::span<const float> x) {
  size_t best = 0;
  for (size_t i = 1; i < x.size(); ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

}  // namespace cpu

Comparison CompareFloats(std::string_view check, std::span<const float> got,
                         std::span<const float> want, double tolerance) {
  Comparison result;
  if (got.size() != want.size()) {
    result.ok = false;
    result.error = fmt::format("{}: {} values, expected {}", check, got.size(), want.size());
    return result;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    const double w = want[i];
    double diff = std::fabs(g - w);
    if (std::isnan(diff)) diff = std::numeric_limits<double>::infinity();
    result.max_abs_error = std::max(result.max_abs_error, diff);
    if (result.ok && !(diff <= tolerance * std::max(1.0, std::fabs(w)))) {
      result.ok = false;
      result.error = fmt::format("{}[{}]: got {}, expected {} (|diff| {:.3g} > {:.3g})", check, i,
                                 got[i], want[i], diff, tolerance * std::max(1.0, std::fabs(w)));
    }
  }
  return result;
}

}  // namespace dxpu::workloads
