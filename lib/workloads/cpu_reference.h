// cpu_reference.h - the model's kernels on the CPU, with the device's arithmetic (lib/gpu/
// kernels.cc: GEMM sums each dot product in fp32 in index order, REDUCE_SUM in double), so a
// workload's reference agrees with the device to the last bit or nearly; and the comparison
// every workload's checks go through.
#ifndef DXPU_LIB_WORKLOADS_CPU_REFERENCE_H_
#define DXPU_LIB_WORKLOADS_CPU_REFERENCE_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "dxgpu/types.h"

namespace dxpu::workloads {
namespace cpu {

// C = alpha * A * B + beta * C; row-major, A m x k, B k x n, C m x n; beta == 0: C not read.
void Gemm(size_t m, size_t n, size_t k, float alpha, std::span<const float> a,
          std::span<const float> b, float beta, std::span<float> c);
// The same with op(A), op(B) transposed as `transpose` says (A stored k x m, B n x k), as the
// model does it: the operand is transposed first, then the product above.
void Gemm(size_t m, size_t n, size_t k, float alpha, std::span<const float> a,
          std::span<const float> b, float beta, std::span<float> c, dxgpu::GemmTranspose transpose);
// y = a * x + y.
void Axpy(float a, std::span<const float> x, std::span<float> y);
// The sum of x, accumulated in double in index order, rounded to float.
float ReduceSum(std::span<const float> x);
// out (cols x rows) = in (rows x cols) transposed; row-major.
void Transpose(size_t rows, size_t cols, std::span<const float> in, std::span<float> out);
// The index of the largest value (the first of equals); 0 for an empty span.
size_t ArgMax(std::span<const float> x);

}  // namespace cpu

struct Comparison {
  bool ok = true;
  double max_abs_error = 0;  // over every element compared (infinity for a NaN)
  std::string error;         // when !ok: "<check>[<index>]: got <g>, expected <w> (|diff| ...)"
};

// Each element must satisfy |got - want| <= tolerance * max(1, |want|) (a NaN never does);
// sizes must agree. The error names `check`, the first failing index and by how much it is off.
Comparison CompareFloats(std::string_view check, std::span<const float> got,
                         std::span<const float> want, double tolerance);

}  // namespace dxpu::workloads

#endif  // DXPU_LIB_WORKLOADS_CPU_REFERENCE_H_
