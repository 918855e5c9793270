#!/usr/bin/env bash
# The harness can fail: a scenario that reports a failure, a kernel log line that looks like
# a WARNING splat, and a guest whose kernel crashes (sysrq c) must each make guest.sh exit
# non-zero. The first two share a guest (guest.sh names every reason it failed a run). A guest
# that never reaches /init (here its initramfs starts cat on the console instead, which waits
# forever) is stopped at the boot limit, reported with its console's tail, booted once more,
# and fails the run.
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
if bash "$here/guest.sh" --name stall --script "$work/fails.sh" --timeout 30 --append rdinit=/bin/cat \
     --out "$work/stall" >"$work/stall.txt" 2>&1; then
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
exit $status
