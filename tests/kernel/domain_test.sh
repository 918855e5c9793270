#!/usr/bin/env bash
# dxpu.ko in the pinned Debian kernel under QEMU: its virtual PCI domain comes and goes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d /tmp/dxpu-kernel-domain.XXXXXX)}
source "$here/kernel_env.sh"
kernel_modules "$work"
exec bash "$here/guest.sh" --name domain --script "$here/scenario_domain.sh" \
  --ko "$ko_dir/dxpu.ko" --out "$work/guest"
