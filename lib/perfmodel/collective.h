// collective.h - an NCCL/RCCL collective's time on a path, from its size, its group and where
// the group's GPUs sit (docs/perf-model.md, "Collectives"). Ring algorithms pass chunks from each
// GPU to the next in the group's order; tree all-reduce reduces up a binary tree and broadcasts
// down. Natively every GPU reaches the others through the host's root complex (two PCIe links
// one way); through DxPU, GPUs in one box through the box's switch (the same), GPUs in two
// boxes through the fabric twice (box to host, host to box), each box's fabric link shared by
// the group's edges that cross it. The model adds the difference to the kernel the trace shows:
// what the collective does besides moving data (its reductions, waiting for the slowest rank)
// stays as it was.
#ifndef DXPU_LIB_PERFMODEL_COLLECTIVE_H_
#define DXPU_LIB_PERFMODEL_COLLECTIVE_H_

#include <cstdint>
#include <vector>

#include "perfmodel/model.h"
#include "perfmodel/trace.h"

namespace dxpu::perfmodel {

// The collective's data movement in ns. `box_of_rank`: the box of each of its ranks, in the
// group's order (as many as c.ranks); through DxPU when `dxpu`, else natively (then the boxes do
// not matter). 0 for a group of one.
double CollectiveNs(const Collective& c, const ModelParams& p,
                    const std::vector<int64_t>& box_of_rank, bool dxpu);

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_COLLECTIVE_H_
