#!/usr/bin/env bash
# debug_lane.sh - the kernel tests' debug lane (ctest label kernel-debug, `make test-kernel-debug`):
# the same tests on a kernel with lockdep, KASAN, atomic-sleep and object debugging
# (tests/kernel/debug_kernel.sh), where a lock-order inversion, a use after free or a sleep in
# atomic context is a console report that fails the run (guest.sh).
#
#   debug_lane.sh --build KBUILD_DIR   the debug kernel (built once, then cached), and dxpu.ko
#                                      and dxpu_core_check.ko built against it into KBUILD_DIR
#                                      (tests/kbuild_check.sh: W=1, sparse): the lane's fixture
#   debug_lane.sh TEST.sh ARGS...      a kernel test on the debug kernel: DXPU_KDIR is its tree,
#                                      so kbuild_check.sh, guest.sh and the test use it; the
#                                      bridges bridge_env.sh starts allow 10 s for a DMA read,
#                                      and guest.sh's time limits are three times as long
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --build ]; then
  out=${2:?usage: debug_lane.sh --build KBUILD_DIR}
  DXPU_KDIR=$(bash "$here/debug_kernel.sh")
  export DXPU_KDIR
  echo "debug kernel: $DXPU_KDIR ($(cat "$DXPU_KDIR/include/config/kernel.release"))"
  exec bash "$here/../kbuild_check.sh" "$out"
fi
test=${1:?usage: debug_lane.sh --build KBUILD_DIR | TEST.sh ARGS...}
shift
DXPU_KDIR=$(bash "$here/debug_kernel.sh")
export DXPU_KDIR
# The debug kernel is far slower under TCG (a null system call 5 us against 0.5 on Debian's, a
# runtime workload over /dev/dxgpuN tens of times longer): kernel-debug.two-bridges' workloads ran
# into the bridge's 1 s device DMA timeout, 10 s here. Its boot took 20-40 s to reach /init on a
# loaded host, where Debian's takes 3-5: the guests' time limits three times as long.
export DXPU_BRIDGE_COMPLETION_TIMEOUT=10s
export DXPU_GUEST_TIME_FACTOR=3
# A 4 KiB configuration-space read at power-on took 13-20 s there, about 15 ms a request, and
# requests ended at dxpu.ko's 1 s deadline ("no device answers"): 20 s for each in the lane.
# Sessions went down for want of progress in 2 s (kernel-debug.dxgpu's first copy): 10 s at
# both ends, where a scenario does not set its own (its link_down_ms comes after this one).
export DXPU_GUEST_DXPU_PARAMS="request_timeout_ms=20000 link_down_ms=10000"
export bridge_link_down=10s
exec bash "$test" "$@"
