// bench_virtio.h - `dxpu bench virtio`: what a virtio device in a GPU box costs against the same
// device model attached natively, in one run: virtio-blk IOPS and throughput (random 4 KiB and
// sequential 128 KiB, reads and writes, at several queue depths) and what a virtio-gpu frame
// costs (a full-screen transfer and flush, and a small damaged rectangle). Each through the
// direct port (the function on an ideal local link: the native baseline) and through DxPU (the
// userspace host proxy, DxFP over the chosen link, a dxpu-bridge in this process), driven by
// lib/virtio's driver, with the ratio.
#ifndef DXPU_TOOLS_DXPU_BENCH_VIRTIO_H_
#define DXPU_TOOLS_DXPU_BENCH_VIRTIO_H_

#include <CLI/CLI.hpp>
#include <functional>

namespace dxpu::cli {

// Adds `virtio` under `bench`; the returned function runs it (once parsed).
std::function<int()> AddBenchVirtioCommand(CLI::App& bench, CLI::App** app);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_BENCH_VIRTIO_H_
