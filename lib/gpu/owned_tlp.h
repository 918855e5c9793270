// owned_tlp.h - the GPU model's names for pcie/owned_tlp.h: a TLP it sends, with its payload
// owned and tagged with what produced it.
#ifndef DXPU_LIB_GPU_OWNED_TLP_H_
#define DXPU_LIB_GPU_OWNED_TLP_H_

#include "pcie/owned_tlp.h"

namespace dxpu::gpu {

using pcie::OwnedTlp;
using pcie::TlpOrigin;
using pcie::TlpQueue;

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_OWNED_TLP_H_
