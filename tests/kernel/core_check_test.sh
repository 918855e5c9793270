#!/usr/bin/env bash
# The kernel test: lib/core built as a module (tests/kbuild_check.sh) is loaded into the pinned
# Debian kernel under QEMU, runs its self-test there, and unloads, with a clean console.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d /tmp/dxpu-kernel-core.XXXXXX)}
source "$here/kernel_env.sh"
kernel_modules "$work"
exec bash "$here/guest.sh" --name core-check --script "$here/scenario_core_check.sh" \
  --ko "$ko_dir/dxpu_core_check.ko" --out "$work/guest"
