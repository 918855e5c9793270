#!/usr/bin/env bash
# The DMA API on dxpu's bus against a real dxpu-bridge: in the guest, dxpu_dma_api_check.ko
# drives the model GPU through dma_alloc_coherent, dma_map_single and dma_map_sg, checks the
# bytes it copies both ways, has the GPU write and read where nothing is mapped (dropped or UR,
# counted, a canary page unchanged), runs the windows out and measures the copies' bandwidth
# (scenario_dma_api.sh, driver/dma_api_check.c). The bridge also grants the guest's RAM
# (0..1 GiB) so that the GPU's accesses to a never-mapped page reach dxpu, which must refuse
# them: the host proxy is the IOMMU, not the bridge. About 40 s.
#   dma_api_test.sh DXPU_BRIDGE DXPU [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge_bin=${1:?usage: dma_api_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
dxpu_bin=${2:?usage: dma_api_test.sh DXPU_BRIDGE DXPU [WORKDIR]}
work=${3:-$(mktemp -d /tmp/dxpu-kernel-dma-api.XXXXXX)}
source "$here/bridge_env.sh"
start_bridge "$bridge_bin" "$work"
lend_gpu "$dxpu_bin" "unix:$work/mgmt.sock" 01:00.0 0x0:0x40000000
status=0
bash "$here/guest.sh" --name dma-api --script "$here/scenario_dma_api.sh" \
  --nic "$work/bridge.sock" --ko "$ko_dir/dxpu.ko" --ko "$ko_dir/dxpu_dma_api_check.ko" \
  --out "$work/guest" --timeout 240 --expect "dxpu_dma_api_check: 0 failures" || status=1
grep "dxpu_dma_api_check: bandwidth" "$work/guest/console.log" || true
stop_bridge
exit $status
