#!/usr/bin/env bash
# dxpu.ko in the pinned Debian kernel under QEMU: its virtual PCI domain comes and goes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d /tmp/dxpu-kernel-domain.XXXXXX)}
bash "$here/../kbuild_check.sh" "$work/kbuild" >/dev/null
exec bash "$here/guest.sh" --name domain --script "$here/scenario_domain.sh" \
  --ko "$work/kbuild/driver/dxpu.ko" --out "$work/guest"
