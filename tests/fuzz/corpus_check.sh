#!/usr/bin/env bash
# corpus_check.sh - the committed seed corpora are what the generator writes today
# (docs/fuzzing.md, "The seed corpora").  corpus_check.sh GENERATOR CORPUS WORKDIR
# Only the generated files (gen-*) are compared; inputs kept from bugs found stay as they are.
set -euo pipefail
gen=$1 corpus=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
"$gen" "$work"
fail=0
while IFS= read -r f; do
  rel=${f#"$work"/}
  if ! cmp -s "$f" "$corpus/$rel"; then
    echo "corpus_check: $rel differs from what the generator writes (or is missing)"
    fail=1
  fi
done < <(find "$work" -type f -name 'gen-*' | sort)
while IFS= read -r f; do
  rel=${f#"$corpus"/}
  if [ ! -e "$work/$rel" ]; then
    echo "corpus_check: $rel is no longer written by the generator"
    fail=1
  fi
done < <(find "$corpus" -type f -name 'gen-*' | sort)
if [ "$fail" -ne 0 ]; then
  echo "corpus_check: write them again with 'make fuzz-corpus' and commit tests/fuzz/corpus"
fi
exit "$fail"
