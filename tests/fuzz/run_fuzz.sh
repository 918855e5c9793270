#!/usr/bin/env bash
# run_fuzz.sh - one libFuzzer target over its seed corpus, then new inputs (docs/fuzzing.md).
#   run_fuzz.sh --runs N | --seconds S  [--max-len L]  TARGET CORPUS WORKDIR
# New inputs that find new coverage go to WORKDIR/corpus (never into CORPUS, the repository's);
# a crash, leak, timeout or out-of-memory input is kept in WORKDIR/artifacts/ and named at the
# end of the log, with the command that reproduces it. Exit status: libFuzzer's (0: nothing
# found).
set -uo pipefail

limit=()
max_len=4096
while [ $# -gt 3 ]; do
  case "$1" in
    --runs) limit=(-runs="$2"); shift 2 ;;
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --max-len) max_len="$2"; shift 2 ;;
    *) echo "run_fuzz.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ $# -ne 3 ] || [ ${#limit[@]} -eq 0 ]; then
  echo "usage: run_fuzz.sh --runs N | --seconds S [--max-len L] TARGET CORPUS WORKDIR" >&2
  exit 2
fi
target=$1 corpus=$2 work=$3

# Each run from the seed corpus alone: the same work every time (a previous run's kept inputs go
# with it; its log named them).
rm -rf "$work/corpus" "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts"
# libFuzzer's own leak check per input (-detect_leaks) needs LeakSanitizer at exit too.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=1"
log="$work/fuzz.log"
"$target" "${limit[@]}" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$work/corpus" "$corpus" >"$log" 2>&1
status=$?
# The log's progress lines are many: the seed, the start and the end say enough; a failure's
# report (the sanitizer's or the target's, and its stack) is at the log's end.
grep -E '^INFO: Seed|#[0-9]+[[:space:]]+(INITED|DONE)|^stat::' "$log"
if [ "$status" -ne 0 ]; then
  tail -n 60 "$log"
  echo "run_fuzz.sh: $(basename "$target") failed (exit $status); full log: $log"
  for a in "$work"/artifacts/*; do
    [ -e "$a" ] || continue
    echo "run_fuzz.sh: input kept: $a"
    echo "run_fuzz.sh: reproduce: $target $a"
  done
fi
exit "$status"
