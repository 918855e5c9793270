#!/usr/bin/env bash
# guest.sh - boots the pinned Debian kernel under QEMU (TCG) with an initramfs that holds
# busybox, the given kernel modules and files, and a scenario script; checks the console.
#
#   tests/kernel/guest.sh --name NAME --script SCENARIO.sh [--ko FILE.ko]... [--file SRC:DST]...
#                         [--bin PATH[:DST]]... [--expect TEXT]... [--timeout SECONDS]
#                         [--out DIR] [--nic PEER] [--user-net HOST_PORT:GUEST_PORT]
#                         [--append KERNEL_ARGS] [--smp CPUS] [--kmod MODULE]...
#                         [--qemu ARG]...
#
# The scenario runs as root in the guest after /proc, /sys and /dev are mounted, with the
# modules under /lib/dxpu/. It reports with lines "DXPU-TEST: PASS <what>" or
# "DXPU-TEST: FAIL <what>"; the guest powers off when it returns. The run passes when the
# console has at least one PASS line, no FAIL line, every --expect text, and none of the
# kernel's own reports of trouble (WARNING:, BUG:, Oops, a lockdep splat, a KASAN report,
# a panic). With --nic, the guest has a virtio-net NIC (eth0, up, carrier waited for) whose
# Ethernet frames QEMU exchanges, one per datagram, with the AF_UNIX datagram socket bound at
# PEER on the host (QEMU's own end is bound in the output directory). With --user-net, the
# guest has one more virtio-net NIC (MAC 52:54:00:12:34:57) on QEMU's user networking, its
# address 10.0.2.15/24: the guest reaches the host's loopback at 10.0.2.2, and the host reaches
# the guest's TCP GUEST_PORT at 127.0.0.1:HOST_PORT; /etc/dxpu-net in the guest names the two
# interfaces (FABRIC_IF=, USER_IF=). --bin puts a host program
# in the guest at DST (default /bin/<its name>), its debug info stripped, with every shared
# library ldd lists for it at the same absolute path (the dynamic loader
# /lib64/ld-linux-x86-64.so.2 among them), so a dynamically linked build of dxpu, or the
# host's own /usr/bin/lspci, runs there (lspci's names need --file
# /usr/share/misc/pci.ids:/usr/share/misc/pci.ids). The kernel image comes from Debian's
# linux-image package of the version whose headers tools/bootstrap installed (downloaded once,
# cached under $DXPU_KERNEL_CACHE); with DXPU_KDIR a built kernel tree (the debug lane's,
# tests/kernel/debug_kernel.sh), that tree's bzImage and modules; with
# DXPU_GUEST_DXPU_PARAMS="name=value ..." added to each insmod of dxpu.ko in the scenario; and
# with DXPU_GUEST_TIME_FACTOR=N every time limit N times as long. --append adds to the kernel's
# command line (slub_debug=U: allocation tracking, for a leak check). --smp sets the guest's
# vCPUs (2 by default). --kmod loads one of the kernel's own modules (virtio_blk, ext4,
# virtio-gpu, ...) and what it depends on, unchanged from the kernel package, before the
# scenario (after the NIC's). --qemu passes one more argument to QEMU (a device of QEMU's own,
# for a comparison with the one the bridge lends).
set -euo pipefail

name=guest
script=
timeout_s=120
out=
kos=()
files=()
bins=()
expects=()
nic=
user_net=
append=
smp=2
kmods=()
qemu_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name=$2; shift 2 ;;
    --script) script=$2; shift 2 ;;
    --ko) kos+=("$2"); shift 2 ;;
    --file) files+=("$2"); shift 2 ;;
    --bin) bins+=("$2"); shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --nic) nic=$2; shift 2 ;;
    --user-net) user_net=$2; shift 2 ;;
    --append) append=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --kmod) kmods+=("$2"); shift 2 ;;
    --qemu) qemu_extra+=("$2"); shift 2 ;;
    *) echo "guest.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$script" ] || { echo "guest.sh: --script is required" >&2; exit 2; }
# A slower kernel (the debug lane's, lockdep and KASAN under TCG: debug_lane.sh) has every time
# limit here multiplied by DXPU_GUEST_TIME_FACTOR (default 1).
case "${DXPU_GUEST_DXPU_PARAMS:-}" in
*[!a-z0-9_=\ ]*) echo "guest.sh: DXPU_GUEST_DXPU_PARAMS: name=value words only, not '$DXPU_GUEST_DXPU_PARAMS'" >&2
  exit 2 ;;
esac
factor=${DXPU_GUEST_TIME_FACTOR:-1}
if ! [[ "$factor" =~ ^[1-9][0-9]*$ ]]; then
  echo "guest.sh: DXPU_GUEST_TIME_FACTOR must be a positive whole number, not '$factor'" >&2
  exit 2
fi
timeout_s=$((timeout_s * factor))
out=${out:-$(mktemp -d "/tmp/dxpu-guest-$name.XXXXXX")}
mkdir -p "$out"

kdir=${DXPU_KDIR:-$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)}
[ -f "$kdir/Makefile" ] || { echo "FAIL: no kernel headers (run tools/bootstrap)" >&2; exit 1; }
# A built kernel tree (the debug kernel, tests/kernel/debug_kernel.sh) boots its own bzImage,
# with its modules installed under modroot/ in the tree; a Debian header tree boots Debian's
# image of its version.
built=
if [ -f "$kdir/arch/x86/boot/bzImage" ] && [ -f "$kdir/include/config/kernel.release" ]; then
  built=$kdir
  kver=$(cat "$kdir/include/config/kernel.release")
  cache=$kdir/modroot
else
  kver=${kdir##*/linux-headers-}
  cache=${DXPU_KERNEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/dxpu}/kernel-$kver
fi
tools=(qemu-system-x86_64 busybox cpio)
[ ${#bins[@]} -eq 0 ] || tools+=(ldd objcopy)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool missing (run tools/bootstrap)" >&2; exit 1; }
done

if [ -n "$built" ]; then
  kernel=$built/arch/x86/boot/bzImage
else
  # The kernel image, once: apt-get download and unpack (installing it would run initramfs hooks).
  # Under a lock: ctest runs several guests at once, and the first one fetches for all.
  mkdir -p "$(dirname "$cache")"
  exec 9>"$cache.lock"
  flock 9
  if [ ! -f "$cache/boot/vmlinuz-$kver" ]; then
    rm -rf "$cache.tmp"
    mkdir -p "$cache.tmp"
    (cd "$cache.tmp" && apt-get download -q "linux-image-$kver" >/dev/null 2>&1) ||
      { echo "FAIL: cannot download linux-image-$kver" >&2; exit 1; }
    dpkg-deb -x "$cache.tmp"/linux-image-"$kver"_*.deb "$cache.tmp/root"
    rm -rf "$cache"
    mv "$cache.tmp/root" "$cache"
    rm -rf "$cache.tmp"
  fi
  # The NIC's modules (virtio_net and virtio_pci are modules in Debian's kernel), in load order.
  [ -f "$cache/lib/modules/$kver/modules.dep" ] || depmod -b "$cache" "$kver"
  # The kernel uncompressed, once: Debian's bzImage holds it XZ-compressed, and its decompressor
  # took about 2.5 s of every TCG boot. QEMU starts the ELF image through its PVH entry point
  # (CONFIG_PVH); an image without one (or no XZ stream found) boots as the bzImage.
  kernel="$cache/boot/vmlinuz-$kver"
  if [ ! -f "$cache/boot/vmlinux-$kver.pvh" ] && [ ! -f "$cache/boot/vmlinux-$kver.none" ]; then
    xz_at=$(LC_ALL=C grep -obUaP '\xFD7zXZ\x00' "$kernel" | head -n 1 | cut -d: -f1 || true)
    # (xz stops reading at the end of the stream: tail's SIGPIPE is no failure.)
    if [ -n "$xz_at" ] && xz -dc --single-stream < <(tail -c +$((xz_at + 1)) "$kernel") \
         >"$cache/boot/vmlinux-$kver.tmp" 2>/dev/null &&
       [[ "$(readelf -n "$cache/boot/vmlinux-$kver.tmp" 2>/dev/null)" == *"Unknown note type: (0x00000012)"* ]]; then
      mv "$cache/boot/vmlinux-$kver.tmp" "$cache/boot/vmlinux-$kver.pvh"
    else
      rm -f "$cache/boot/vmlinux-$kver.tmp"
      : >"$cache/boot/vmlinux-$kver.none"
    fi
  fi
  [ ! -f "$cache/boot/vmlinux-$kver.pvh" ] || kernel="$cache/boot/vmlinux-$kver.pvh"
  flock -u 9
fi

# The initramfs: busybox, the modules, the files, the scenario, and /init.
root="$out/initramfs"
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,lib/dxpu,etc}
cp "$(command -v busybox)" "$root/bin/busybox"
for applet in sh mount umount insmod rmmod lsmod cat echo grep sleep poweroff ls dmesg kill sed wget; do
  ln -s busybox "$root/bin/$applet"
done
for ko in "${kos[@]}"; do cp "$ko" "$root/lib/dxpu/"; done
# The kernel's modules the test's modules need (lib/crypto's curve25519 and chacha20poly1305 for
# dxpu_core_check.ko: modules in Debian's kernel, built in in the debug kernel), in load order,
# loaded by /init before the scenario. Our own modules among the dependencies are the
# scenario's to load.
mkdir -p "$root/lib/deps"
ours=" $(for ko in "${kos[@]}"; do basename "$ko" .ko; done | tr '\n' ' ') "
wanted=()
for ko in "${kos[@]}"; do
  for d in $(modinfo -F depends "$ko" | tr ',' ' '); do
    [[ "$ours" == *" $d "* ]] || wanted+=("$d")
  done
done
if [ ${#wanted[@]} -gt 0 ]; then
  [ -f "$cache/lib/modules/$kver/modules.dep" ] || depmod -b "$cache" "$kver"
  n=0
  while read -r _ path; do
    n=$((n + 1))
    cp "$path" "$root/lib/deps/$(printf %02d $n)-$(basename "$path")"
  done < <(for m in "${wanted[@]}"; do modprobe -d "$cache" -S "$kver" --show-depends "$m"; done |
           awk '$1 == "insmod" && !seen[$2]++')
fi
qemu_nic=()
if [ -n "$nic" ] || [ -n "$user_net" ]; then
  mkdir -p "$root/lib/nic"
  n=0
  [ -f "$cache/lib/modules/$kver/modules.dep" ] ||
    { echo "FAIL: no modules installed in $cache (tests/kernel/debug_kernel.sh)" >&2; exit 1; }
  # (A module built in, as virtio_pci is in the debug kernel, is a "builtin" line: skipped.)
  while read -r _ path; do
    n=$((n + 1))
    cp "$path" "$root/lib/nic/$(printf %02d $n)-$(basename "$path")"
  done < <(for m in virtio_pci virtio_net; do modprobe -d "$cache" -S "$kver" --show-depends "$m"; done |
           awk '$1 == "insmod" && !seen[$2]++')
  for applet in ip; do ln -sf busybox "$root/bin/$applet"; done
fi
if [ -n "$nic" ]; then
  rm -f "$out/qemu.sock"
  qemu_nic=(-netdev "dgram,id=n0,local.type=unix,local.path=$out/qemu.sock,remote.type=unix,remote.path=$nic"
            -device "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56")
fi
if [ -n "$user_net" ]; then
  [[ "$user_net" =~ ^[0-9]+:[0-9]+$ ]] ||
    { echo "guest.sh: --user-net HOST_PORT:GUEST_PORT, not '$user_net'" >&2; exit 2; }
  qemu_nic+=(-netdev "user,id=n1,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:${user_net%%:*}-:${user_net#*:}"
             -device "virtio-net-pci,netdev=n1,mac=52:54:00:12:34:57")
fi
# The kernel's own modules the scenario asked for, with their dependencies, in load order; one
# the NIC's list already loads is not loaded twice; one built in is skipped.
if [ ${#kmods[@]} -gt 0 ]; then
  mkdir -p "$root/lib/kmod"
  [ -f "$cache/lib/modules/$kver/modules.dep" ] || depmod -b "$cache" "$kver"
  n=0
  while read -r _ path; do
    base=$(basename "$path")
    ls "$root"/lib/nic/*-"$base" >/dev/null 2>&1 && continue
    n=$((n + 1))
    cp "$path" "$root/lib/kmod/$(printf %02d $n)-$base"
  done < <(for m in "${kmods[@]}"; do
             modprobe -d "$cache" -S "$kver" --show-depends "$m" ||
               echo "FAIL: --kmod $m: no such module in $kver" >&2
           done | awk '$1 == "insmod" && !seen[$2]++')
fi
for f in "${files[@]}"; do
  mkdir -p "$root/$(dirname "${f#*:}")"
  cp "${f%%:*}" "$root/${f#*:}"
done
# Programs and the shared libraries they load, at the paths the host's dynamic loader finds
# them (ldd's "name => /path" lines and the loader's own "/path (addr)" line).
for b in "${bins[@]}"; do
  src=${b%%:*}
  dst=/bin/$(basename "$src")
  [ "$src" = "$b" ] || dst=${b#*:}
  [ -f "$src" ] || { echo "FAIL: --bin $src: no such file" >&2; exit 1; }
  mkdir -p "$root/$(dirname "$dst")"
  rm -f "$root/$dst"
  objcopy --strip-debug "$src" "$root/$dst"
  while read -r lib; do
    [ -e "$root/$lib" ] && continue
    mkdir -p "$root/$(dirname "$lib")"
    cp -L "$lib" "$root/$lib"
  done < <({ ldd "$src" 2>/dev/null || true; } |
           awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
done
# DXPU_GUEST_DXPU_PARAMS: module parameters added to every insmod of dxpu.ko the scenario runs
# (the debug lane's slow kernel needs a longer request_timeout_ms; checked above: name=value
# words only).
sed "s#insmod /lib/dxpu/dxpu.ko#& ${DXPU_GUEST_DXPU_PARAMS:-}#" "$script" >"$root/scenario.sh"
cat >"$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "DXPU-GUEST: up"
for ko in /lib/deps/*.ko; do
  [ -e "$ko" ] || continue
  insmod "$ko" || echo "DXPU-TEST: FAIL insmod $ko"
done
if [ -d /lib/nic ]; then
  for ko in /lib/nic/*.ko; do
    [ -e "$ko" ] || continue # none: the drivers are built in
    insmod "$ko" || echo "DXPU-TEST: FAIL insmod $ko"
  done
  # The fabric NIC and the user-networking NIC, told apart by their MACs.
  : >/etc/dxpu-net
  for n in /sys/class/net/eth*; do
    case "$(cat "$n/address")" in
      52:54:00:12:34:56) echo "FABRIC_IF=${n##*/}" >>/etc/dxpu-net ;;
      52:54:00:12:34:57) echo "USER_IF=${n##*/}" >>/etc/dxpu-net ;;
    esac
  done
  . /etc/dxpu-net
  if [ -n "$FABRIC_IF" ]; then
    ip link set "$FABRIC_IF" up || echo "DXPU-TEST: FAIL $FABRIC_IF up"
    i=0
    while [ "$(cat /sys/class/net/$FABRIC_IF/carrier 2>/dev/null)" != 1 ] && [ $i -lt 50 ]; do
      sleep 0.1; i=$((i + 1))
    done
    echo "DXPU-GUEST: $FABRIC_IF carrier $(cat /sys/class/net/$FABRIC_IF/carrier 2>/dev/null)"
  fi
  if [ -n "$USER_IF" ]; then
    ip link set lo up
    { ip addr add 10.0.2.15/24 dev "$USER_IF" && ip link set "$USER_IF" up &&
      ip route add default via 10.0.2.2; } || echo "DXPU-TEST: FAIL $USER_IF 10.0.2.15/24"
    echo "DXPU-GUEST: $USER_IF 10.0.2.15/24 (user networking)"
  fi
fi
# A module for hardware the emulated CPU lacks (crc32c-intel: SSE4.2) fails to load, and its
# generic twin, next in the list, serves instead: said, not a failure.
for ko in /lib/kmod/*.ko; do
  [ -e "$ko" ] || continue
  insmod "$ko" 2>/dev/null || echo "DXPU-GUEST: insmod $ko failed (its hardware absent?)"
done
sh /scenario.sh
echo "DXPU-GUEST: scenario returned $?"
poweroff -f
INIT
chmod +x "$root/init" "$root/scenario.sh"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initramfs.cpio.gz"

console="$out/console.log"
# One boot: QEMU for at most $1 seconds, its console in $console; its exit status in rc. When
# $2 is given and the guest has not reached /init within $2 seconds, QEMU is stopped there
# (rc 125). A guest here reaches /init in 2 - 5 s of its own time (under TCG, tens of seconds on
# a loaded host); one that never did in 400 s was seen once, in CI, with no console kept.
boot() {
  local limit=$1 boot_limit=${2:-} pid deadline
  : >"$console"
  timeout "$limit" qemu-system-x86_64 -accel tcg -smp "$smp" -m 1G -nographic -no-reboot \
    -kernel "$kernel" -initrd "$out/initramfs.cpio.gz" "${qemu_nic[@]}" "${qemu_extra[@]}" \
    -append "console=ttyS0 panic=-1 ipv6.disable=1 ignore_loglevel${append:+ $append}" \
    </dev/null >"$console" 2>&1 &
  pid=$!
  if [ -n "$boot_limit" ]; then
    # By the clock, not by counting sleeps: on a loaded host each turn of this loop takes far
    # longer than its 0.1 s sleep (timeout's limit came first once, 30 s into a 10 s wait).
    deadline=$((SECONDS + boot_limit))
    while kill -0 "$pid" 2>/dev/null && ! grep -q "DXPU-GUEST: up" "$console"; do
      if [ $SECONDS -ge $deadline ]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        rc=125
        return
      fi
      sleep 0.1
    done
  fi
  set +e
  wait "$pid"
  rc=$?
  set -e
}
# A boot that stalls before /init is the emulator's or the host's, not the scenario's: it is
# reported with its console's last lines and its console kept, and the guest boots once more
# in the time left (--timeout bounds both together). Nothing of the scenario ran in the stalled
# boot: /init starts it.
boot_limit=$(( timeout_s / 3 < 120 ? timeout_s / 3 : 120 ))
boot "$timeout_s" "$boot_limit"
if [ $rc -eq 125 ]; then
  mv "$console" "$out/console.stalled.log"
  echo "guest.sh: $name: the guest did not reach /init within ${boot_limit}s; its console's" \
    "last lines ($out/console.stalled.log):"
  tail -n 15 "$out/console.stalled.log" | sed 's/^/  | /'
  echo "guest.sh: $name: booting once more"
  timeout_s=$((timeout_s - boot_limit))
  boot "$timeout_s"
fi

fail=0
report() { echo "$1"; fail=1; }
[ $rc -eq 124 ] && report "FAIL $name: the guest did not power off within ${timeout_s}s"
grep -q "DXPU-GUEST: up" "$console" || report "FAIL $name: the guest never reached /init"
grep -q "DXPU-TEST: PASS" "$console" || report "FAIL $name: the scenario reported no PASS"
if grep -q "DXPU-TEST: FAIL" "$console"; then
  grep "DXPU-TEST: FAIL" "$console"
  report "FAIL $name: the scenario reported failures"
fi
for e in "${expects[@]}"; do
  grep -qF -- "$e" "$console" || report "FAIL $name: no '$e' on the console"
done
if grep -nE 'WARNING:|BUG:|Oops|possible circular locking|possible recursive locking|KASAN:|Kernel panic|general protection fault|Call Trace:' "$console"; then
  report "FAIL $name: the kernel reported trouble (above)"
fi
if [ $fail -ne 0 ]; then
  grep -q "DXPU-GUEST: up" "$console" ||
    { echo "the console's last lines:"; tail -n 15 "$console" | sed 's/^/  | /'; }
  echo "console: $console"
  exit 1
fi
grep "DXPU-TEST: PASS" "$console" | sed 's/^/  /'
echo "PASS $name ($(grep -c 'DXPU-TEST: PASS' "$console") checks; console $console)"
