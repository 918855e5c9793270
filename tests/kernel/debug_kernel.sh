#!/usr/bin/env bash
# debug_kernel.sh - builds, once, the debug kernel of the kernel tests' debug lane: Debian's
# linux-source-6.1 of the version closest to the installed headers (the headers' own version
# when the archive still has it), configured as `make tinyconfig` plus
# tests/kernel/debug_kernel.config (lockdep, KASAN, atomic-sleep and object debugging, and what
# the QEMU guest needs), built with `make bzImage modules`. Prints the built kernel tree (its
# only output; progress goes to stderr): with DXPU_KDIR set to it, tests/kbuild_check.sh builds
# dxpu.ko against it and tests/kernel/guest.sh boots its arch/x86/boot/bzImage.
#
# The tree is cached under $DXPU_KERNEL_CACHE (default ~/.cache/dxpu) as
# debug-kernel-SRCVERSION-KEY, KEY a hash of the fragment's settings, this script's commands and
# the compiler's version: a change to any of them builds again, and once that build is done the
# other keys of the same source version are removed. What external modules need stays: the
# build tree without its object files and the source's headers, scripts and x86 Makefiles
# (about 460 MB; the whole source and objects are 2.7 GB).
# The build runs at `nice -n 10` with DXPU_DEBUG_KERNEL_JOBS jobs (default nproc), through
# ccache when it is installed (DXPU_DEBUG_KERNEL_CCACHE=0: not), its paths relative to the cache
# directory: a new key with the same configuration (this script changed) takes its objects from
# the cache; a configuration change misses nearly all of them (every object includes
# autoconf.h), and a fresh machine has none. Its log: build.log in the cache directory (the last
# lines printed on failure).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fragment=$here/debug_kernel.config
log() { printf 'debug_kernel: %s\n' "$*" >&2; }

# All of it in one function, which bash reads whole before it runs: a build takes half an hour,
# and an edit to this file meanwhile must not change what the rest of the run executes.
main() {
  # The source version: the installed headers' Debian version (linux-headers-6.1.0-57-amd64 is
  # 6.1.192-3), or, if the archive no longer has linux-source-6.1 of it, its candidate.
  hdr=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$hdr" ] || { log "FAIL: no Debian kernel headers (run tools/bootstrap)"; exit 1; }
  hver=$(dpkg-query -W -f='${Version}' "$(basename "$hdr")" 2>/dev/null || true)
  series=$(basename "$hdr" | sed -E 's/^linux-headers-([0-9]+\.[0-9]+).*/\1/')
  srcpkg=linux-source-$series
  srcver=$hver
  if [ -z "$srcver" ] ||
     ! apt-cache madison "$srcpkg" 2>/dev/null | awk -F'|' '{gsub(/ /,"",$2); print $2}' | grep -qxF "$srcver"; then
    srcver=$(apt-cache policy "$srcpkg" 2>/dev/null | awk '/Candidate:/ {print $2}')
    [ -n "$srcver" ] && [ "$srcver" != "(none)" ] ||
      { log "FAIL: apt knows no $srcpkg (apt-get update?)"; exit 1; }
    log "the archive has no $srcpkg $hver (the headers'); using $srcver"
  fi
  # Its settings and this script's commands: a comment changed in either builds nothing again.
  key=$( {
    grep -E '^(# )?CONFIG_' "$fragment"
    grep -vE '^[[:space:]]*#' "$0"
    gcc --version | head -n 1
  } | sha256sum | cut -c1-12)
  root=${DXPU_KERNEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/dxpu}
  cache=$root/debug-kernel-$srcver-$key
  tree=$cache/build

  if [ -f "$cache/done" ]; then echo "$tree"; exit 0; fi

  mkdir -p "$root"
  exec 9>"$root/debug-kernel.lock"
  flock 9
  if [ -f "$cache/done" ]; then echo "$tree"; exit 0; fi
  for tool in flex bison bc gcc make lz4 xz; do
    command -v "$tool" >/dev/null || { log "FAIL: $tool missing (run tools/bootstrap)"; exit 1; }
  done
  [ -f /usr/include/gelf.h ] || { log "FAIL: libelf-dev missing (run tools/bootstrap)"; exit 1; }
  start=$(date +%s)
  rm -rf "$cache"
  mkdir -p "$cache/dl"
  log "$srcpkg $srcver, configuration $key: building into $cache (once)"
  (cd "$cache/dl" && apt-get download -q "$srcpkg=$srcver" >"$cache/dl/download.log" 2>&1) || {
    cat "$cache/dl/download.log" >&2
    log "FAIL: cannot download $srcpkg=$srcver (apt-get download; apt-get update?)"
    exit 1
  }
  dpkg-deb --fsys-tarfile "$cache"/dl/"$srcpkg"_*.deb | tar -xO "./usr/src/$srcpkg.tar.xz" |
    xz -dc | tar -x -C "$cache"
  rm -rf "$cache/dl"
  mv "$cache/$srcpkg" "$cache/src"
  log "downloaded and unpacked in $(( $(date +%s) - start )) s"
  echo "$srcpkg $srcver" >"$cache/source-version"
  mkdir -p "$tree"
  cc=gcc
  if [ "${DXPU_DEBUG_KERNEL_CCACHE:-1}" = 1 ] && command -v ccache >/dev/null; then
    cc="ccache gcc"
    export CCACHE_BASEDIR=$cache
  fi
  jobs=${DXPU_DEBUG_KERNEL_JOBS:-$(nproc)}
  kmake() { nice -n 10 make -C "$cache/src" O="$tree" CC="$cc" HOSTCC=gcc "$@"; }
  if ! {
    kmake tinyconfig &&
      "$cache/src/scripts/kconfig/merge_config.sh" -m -O "$tree" "$tree/.config" "$fragment" &&
      kmake olddefconfig &&
      kmake -j "$jobs" bzImage modules
  } >"$cache/build.log" 2>&1; then
    tail -n 30 "$cache/build.log" >&2
    log "FAIL: the build failed (log: $cache/build.log)"
    exit 1
  fi
  # Every line of the fragment must have survived olddefconfig (a dependency it lacks drops it).
  missing=$(grep -E '^(# )?CONFIG_' "$fragment" | sed -E 's/^# (CONFIG_[A-Z0-9_]+) is not set/\1=n/' |
    while IFS= read -r line; do
      k=${line%%=*} v=${line#*=}
      got=$(grep -E "^$k=|^# $k is not set" "$tree/.config" | sed -E 's/^# .* is not set/n/; s/^[^=]*=//' || true)
      [ "$got" = "$v" ] || { [ "$v" = n ] && [ -z "$got" ]; } || echo "$k=$v (got '${got:-unset}')"
    done)
  [ -z "$missing" ] || { log "FAIL: the configuration lost: $missing"; exit 1; }
  # Its modules (virtio_net and what it needs) where guest.sh finds them: modroot/lib/modules.
  if ! kmake INSTALL_MOD_PATH="$tree/modroot" modules_install >>"$cache/build.log" 2>&1; then
    tail -n 30 "$cache/build.log" >&2
    log "FAIL: modules_install failed (log: $cache/build.log)"
    exit 1
  fi
  # Not needed to build external modules or to boot: the objects, the C sources, the other
  # architectures, the documentation, the largest driver trees (2.2 GB of 2.7).
  find "$tree" \( -name '*.o' -o -name '*.a' \) -type f ! -path '*/scripts/*' -delete
  (
    cd "$cache/src"
    for a in arch/*; do [ "$a" = arch/x86 ] || rm -rf "$a"; done
    rm -rf Documentation sound samples drivers/gpu drivers/media drivers/staging
    find . -name '*.c' ! -path './scripts/*' ! -path './tools/*' -delete
  )
  : >"$cache/done"
  log "built $(cat "$tree/include/config/kernel.release") in $(( $(date +%s) - start )) s; bzImage $(du -m "$tree/arch/x86/boot/bzImage" | cut -f1) MB"
  # The older configurations of this source version are not used any more.
  for old in "$root"/debug-kernel-"$srcver"-*; do
    [ "$old" = "$cache" ] || [ ! -d "$old" ] || rm -rf "$old"
  done
  echo "$tree"
}
main "$@"
