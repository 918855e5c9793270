#!/usr/bin/env bash
# module_kernel_test.sh [WORK]: tools/module_kernel.sh (what `make module` runs after the build)
# names the kernel a module is built for, warns and exits 3 when the running kernel differs,
# and exits 1 on a file that is not a module.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check=$here/../../tools/module_kernel.sh
work=${1:-$(mktemp -d /tmp/dxpu-kernel-module-kernel.XXXXXX)}
source "$here/kernel_env.sh"
kernel_modules "$work"
ko=$ko_dir/dxpu.ko
built=$(modinfo -F vermagic "$ko" | awk '{print $1}')
fail=0
bad() { echo "FAIL: $*"; fail=1; }
out=$(DXPU_RUNNING_KERNEL=$built "$check" "$ko" 2>&1); rc=$?
[ $rc -eq 0 ] || bad "same kernel: exit $rc, want 0 ($out)"
[[ $out == *"built for kernel $built"* ]] || bad "same kernel: the kernel not named ($out)"
[[ $out != *WARNING* ]] || bad "same kernel: a warning ($out)"
out=$(DXPU_RUNNING_KERNEL=9.9.9-other "$check" "$ko" 2>&1); rc=$?
[ $rc -eq 3 ] || bad "other kernel: exit $rc, want 3 ($out)"
[[ $out == *"WARNING: this machine runs kernel 9.9.9-other, not $built"* ]] ||
  bad "other kernel: no warning naming both ($out)"
[[ $out == *"linux-headers-9.9.9-other"* ]] || bad "other kernel: the fix not named ($out)"
out=$("$check" "$0" 2>&1); rc=$?
[ $rc -eq 1 ] || bad "not a module: exit $rc, want 1 ($out)"
[ $fail -eq 0 ] && echo "PASS: module_kernel.sh names $built and warns about another kernel"
exit $fail
