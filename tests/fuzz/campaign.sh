#!/usr/bin/env bash
# campaign.sh - make fuzz: every target for FUZZ_SECONDS each, one after the other, the corpus
# growing in the build tree (BUILD/tests/fuzz/campaign/NAME/corpus), progress printed as it
# goes (docs/fuzzing.md).  campaign.sh BUILD_DIR SECONDS [NAME...]
set -uo pipefail
build=$1 seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
list="$build/tests/fuzz/campaign_targets.txt"
[ -r "$list" ] || { echo "campaign.sh: $list missing: build the asan preset first" >&2; exit 2; }
mapfile -t entries <"$list"
failed=()
# libFuzzer's lines worth showing: the start, the pulses (at powers of two), every 50th NEW,
# the end, the final statistics and any report.
progress='^#[0-9]+[[:space:]]+(INITED|pulse|DONE|NEW)|ERROR|^stat::|SUMMARY'
for ((i = 0; i + 2 < ${#entries[@]}; i += 3)); do
  name=${entries[i]} target=${entries[i + 1]} max_len=${entries[i + 2]}
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  work="$build/tests/fuzz/campaign/$name"
  mkdir -p "$work/corpus" "$work/artifacts"
  echo "== $name: ${seconds}s, corpus $work/corpus"
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=1" "$target" -max_total_time="$seconds" \
    -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" "$work/corpus" "$here/corpus/$name" 2>&1 |
    tee "$work/fuzz.log" | grep --line-buffered -E "$progress" |
    awk -v n="$name" '/NEW/ { if (++k % 50) next } { print n ": " $0; fflush() }'
  if [ "${PIPESTATUS[0]}" -ne 0 ]; then
    failed+=("$name")
    ls "$work"/artifacts/* 2>/dev/null | sed "s/^/$name: input kept: /"
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "campaign.sh: found something in: ${failed[*]}"
  exit 1
fi
echo "campaign.sh: nothing found"
