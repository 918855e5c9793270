#!/usr/bin/env bash
# The harness can fail: a scenario that reports a failure, a kernel log line that looks like
# a WARNING splat, and a guest whose kernel crashes (sysrq c) must each make guest.sh exit
# non-zero. The first two share a guest (guest.sh names every reason it failed a run). A guest
# that never reaches /init (here its initramfs starts cat on the console instead, which waits
# forever) is stopped at the boot limit, reported with its console's tail, booted once more,
# and fails the run.
# On a kernel with lockdep and KASAN (DXPU_KDIR a debug kernel tree, tests/kernel/debug_kernel.sh:
# the debug lane), throwaway modules (tests/kernel/can_fail/) fail a guest whose scenario
# passes, each with the report of one checker: two mutexes taken in both orders (lockdep), a
# GFP_KERNEL allocation under a spinlock (DEBUG_ATOMIC_SLEEP), a pending timer freed
# (DEBUG_OBJECTS), a read of a freed buffer (KASAN).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d /tmp/dxpu-kernel-harness.XXXXXX)}
mkdir -p "$work"
status=0
# A FAIL line and a WARNING in one guest: the run must fail and name both, each found on its own.
printf '#!/bin/sh\necho "DXPU-TEST: PASS one"\necho "DXPU-TEST: FAIL two"\necho "WARNING: CPU: 0 PID: 1 at test" > /dev/kmsg\n' >"$work/fails.sh"
printf '#!/bin/sh\necho "DXPU-TEST: PASS before"\necho 1 > /proc/sys/kernel/sysrq\necho c > /proc/sysrq-trigger\n' >"$work/oops.sh"
if bash "$here/guest.sh" --name reports-fail --script "$work/fails.sh" --out "$work/fails" >"$work/fails.txt" 2>&1; then
  echo "FAIL: a scenario's FAIL line and a WARNING on the console passed"; status=1
else
  if grep -q "scenario reported failures" "$work/fails.txt"; then
    echo "PASS: a scenario's FAIL line fails the run"
  else
    echo "FAIL: no reason given for the FAIL line"; cat "$work/fails.txt"; status=1
  fi
  if grep -q "kernel reported trouble" "$work/fails.txt"; then
    echo "PASS: a WARNING on the console fails the run"
  else
    echo "FAIL: the WARNING was not recognised"; cat "$work/fails.txt"; status=1
  fi
fi
if bash "$here/guest.sh" --name oops --script "$work/oops.sh" --timeout 90 --out "$work/oops" >"$work/oops.txt" 2>&1; then
  echo "FAIL: a crashed kernel passed"; status=1
elif ! grep -q "kernel reported trouble" "$work/oops.txt"; then
  echo "FAIL: the crash was not recognised"; cat "$work/oops.txt"; status=1
else
  echo "PASS: a kernel crash fails the run"
fi
# Its time limits as given (no DXPU_GUEST_TIME_FACTOR): it never reaches /init, on any kernel.
if DXPU_GUEST_TIME_FACTOR=1 bash "$here/guest.sh" --name stall --script "$work/fails.sh" \
     --timeout 30 --append rdinit=/bin/cat --out "$work/stall" >"$work/stall.txt" 2>&1; then
  echo "FAIL: a guest that never reached /init passed"; status=1
elif grep -q "did not reach /init within 10s" "$work/stall.txt" &&
     grep -q "booting once more" "$work/stall.txt" &&
     grep -q "never reached /init" "$work/stall.txt" &&
     grep -q "the console's last lines:" "$work/stall.txt" &&
     [ -s "$work/stall/console.stalled.log" ]; then
  echo "PASS: a boot that stalls before /init is retried once, reported, and fails the run"
else
  echo "FAIL: the stalled boot was not handled as it should be"; cat "$work/stall.txt"; status=1
fi
kdir=${DXPU_KDIR:-$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)}
if ! grep -qx CONFIG_PROVE_LOCKING=y "$kdir/.config" 2>/dev/null ||
   ! grep -qx CONFIG_KASAN=y "$kdir/.config" 2>/dev/null; then
  echo "(lockdep and KASAN: not in this kernel ($kdir); the debug lane, kernel-debug.*, checks them)"
  exit $status
fi
rm -rf "$work/can_fail"
cp -r "$here/can_fail" "$work/can_fail"
if ! make -s -C "$kdir" M="$work/can_fail" modules >"$work/can_fail/build.log" 2>&1; then
  echo "FAIL: the can-fail modules do not build against $kdir"; cat "$work/can_fail/build.log"
  exit 1
fi
# The modules in one guest whose scenario passes (each loads: --expect), so only the kernel's reports can
# fail the run. Each report must be among the console lines guest.sh counts as trouble. Lockdep
# goes first: it turns itself off after a report of its own or KASAN's.
mods=(dxpu_lockorder dxpu_atomic_sleep dxpu_odebug dxpu_uaf)
{
  echo '#!/bin/sh'
  for mod in "${mods[@]}"; do
    echo "insmod /lib/dxpu/$mod.ko && echo 'DXPU-TEST: PASS $mod loaded'"
  done
} >"$work/can-fail.sh"
kos=()
for mod in "${mods[@]}"; do
  kos+=(--ko "$work/can_fail/$mod.ko" --expect "DXPU-TEST: PASS $mod loaded")
done
if bash "$here/guest.sh" --name can-fail --script "$work/can-fail.sh" "${kos[@]}" \
     --out "$work/can-fail" >"$work/can-fail.txt" 2>&1; then
  echo "FAIL: the can-fail modules' bugs passed"; cat "$work/can-fail.txt"; status=1
elif ! grep -q "kernel reported trouble" "$work/can-fail.txt" ||
     grep -qE "scenario reported|FAIL can-fail: the guest|no 'DXPU-TEST" "$work/can-fail.txt"; then
  echo "FAIL: the can-fail guest did not fail on the kernel's reports alone"
  cat "$work/can-fail.txt"; status=1
else
  # expect WHAT REGEX: a trouble line guest.sh printed matches REGEX
  expect() {
    local line
    if line=$(grep -m 1 -E -- "$2" "$work/can-fail.txt"); then
      echo "PASS: $1 fails the run (${line#*:})"
    else
      echo "FAIL: $1 was not reported (no line matching '$2'; console: $work/can-fail/console.log)"
      status=1
    fi
  }
  expect "two mutexes taken in both orders (lockdep)" \
    "WARNING: possible circular locking dependency detected"
  expect "a GFP_KERNEL allocation under a spinlock (DEBUG_ATOMIC_SLEEP)" \
    "BUG: sleeping function called from invalid context"
  expect "a pending timer freed (DEBUG_OBJECTS)" "WARNING: .* at .*lib/debugobjects.c"
  expect "a read of a freed buffer (KASAN)" "BUG: KASAN: use-after-free in uaf_init"
fi
exit $status
