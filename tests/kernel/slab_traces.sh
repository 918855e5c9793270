#!/bin/sh
# slab_traces.sh - runs in the guest, booted with slub_debug=U and with debugfs mounted: what
# the kernel's allocation tracking says is alive, to find what some work left behind.
#   slab_traces.sh snapshot > FILE
#     every live slab object's allocation stack, one line per distinct cache and stack:
#     "COUNT CACHE SITE FRAME FRAME..." (/sys/kernel/debug/slab/*/alloc_traces)
#   slab_traces.sh grown OLD NEW MIN
#     the lines of NEW whose count is at least MIN more than in OLD: "GROWTH CACHE SITE FRAME..."
case "$1" in
snapshot)
  # KASAN holds freed objects in its quarantine, where the slab still counts them as alive:
  # shrinking a cache empties its quarantine. Only with KASAN: each write opens a sysfs file,
  # whose kernfs_open_file, freed to a CPU's freelist after its cache was shrunk, is counted as
  # alive by alloc_traces (on Debian's kernel kernel.cycles saw kmalloc-96 grow by 186, one per
  # cache, between two snapshots).
  if grep -q ' kasan_' /proc/kallsyms 2>/dev/null; then
    for s in /sys/kernel/slab/*/shrink; do echo 1 2>/dev/null >"$s"; done
  fi
  for c in /sys/kernel/debug/slab/*; do
    [ -r "$c/alloc_traces" ] || continue
    awk -v cache="${c##*/}" '
      /^ *[0-9]+ / && !rec { n = $1; key = cache " " $2; rec = 1; next }
      rec && NF == 0 { print n, key; rec = 0; next }
      rec { key = key " " $1 }
      END { if (rec) print n, key }' "$c/alloc_traces"
  done
  ;;
grown)
  awk -v min="$4" '
    { k = $0; sub(/^[0-9]+ /, "", k) }
    FNR == NR { old[k] += $1; next }
    { new[k] += $1 }
    END { for (k in new) if (new[k] - old[k] >= min) print new[k] - old[k], k }' "$2" "$3"
  ;;
*)
  echo "usage: slab_traces.sh snapshot | grown OLD NEW MIN" >&2
  exit 2
  ;;
esac
