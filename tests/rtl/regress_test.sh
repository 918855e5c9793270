#!/usr/bin/env bash
# regress_test.sh - end-to-end checks of `dxpu rtl regress` (docs/rtl.md).
#   regress_test.sh real    DXPU BUILD_DIR WORK   every RTL test of BUILD_DIR (label rtl), 2 seeds
#   regress_test.sh fixture DXPU FIXTURE_DIR WORK the fixture (regress_fixture_tb.cc) whose tests
#                                                 fail on odd seeds and hang on seed 7
# WORK is emptied first. Prints each failure and exits 1 if there was any.
set -uo pipefail

MODE=${1:?usage: regress_test.sh real|fixture DXPU DIR WORK}
DXPU=${2:?usage: regress_test.sh real|fixture DXPU DIR WORK}
DIR=${3:?usage: regress_test.sh real|fixture DXPU DIR WORK}
WORK=${4:?usage: regress_test.sh real|fixture DXPU DIR WORK}
failures=0
checks=0
rm -rf "$WORK"
mkdir -p "$WORK"

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

show() {
  sed 's/^/  stdout: /' "$WORK/out" >&2
  sed 's/^/  stderr: /' "$WORK/err" >&2
}

# run NAME EXPECTED_RC ARGS...: runs dxpu ARGS, stdout to $WORK/out, stderr to $WORK/err.
run() {
  local name=$1 want=$2
  shift 2
  checks=$((checks + 1))
  "$DXPU" "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit $rc, want $want"
    show
    return 1
  fi
  return 0
}

# check NAME CONDITION...: the test command CONDITION holds.
check() {
  local name=$1
  shift
  checks=$((checks + 1))
  if ! "$@"; then
    fail "$name: $*"
    show
  fi
}

# last_line FILE: its last line.
last_line() { tail -n 1 "$1"; }

# fsts DIR: the .fst files under DIR, sorted, one a line.
fsts() { find "$1" -name '*.fst' 2>/dev/null | sort; }

# json_check NAME PYTHON_EXPR: EXPR holds with d = the JSON on stdout of the last run.
json_check() {
  local name=$1 expr=$2
  checks=$((checks + 1))
  if ! python3 -c "import json,os,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($expr) else 1)" \
      "$WORK/out"; then
    fail "$name: JSON check failed: $expr"
    show
  fi
}

real() {
  # How many RTL tests ctest itself lists (label exactly rtl).
  local n
  n=$(ctest --test-dir "$DIR" -N -L '^rtl$' | sed -n 's/^Total Tests: //p')
  check "rtl tests listed" [ "${n:-0}" -gt 0 ]
  local out="$WORK/regress"
  if run "real regress" 0 rtl regress --no-build --build-dir "$DIR" --seeds 2 --seed 1 --jobs 1 \
      --out "$out"; then
    check "real summary" [ "$(last_line "$WORK/out")" = "$((2 * n)) passed, 0 failed" ]
    check "real header" grep -q "^rtl regress: $n tests x 2 seeds (--seed 1 --seeds 2)" "$WORK/out"
    check "real coverage line" grep -Eq "^coverage: $out/coverage.dat .*: [0-9]+/[0-9]+ points, [0-9.]+%" \
      "$WORK/out"
  fi
  check "real merged coverage" [ -s "$out/coverage.dat" ]
  check "real lcov" [ -s "$out/coverage.info" ]
  check "real annotated" [ -d "$out/coverage-annotated" ]
  check "real no waveform kept" [ -z "$(fsts "$out")" ]
  check "real a log per run" [ "$(find "$out/logs" -name '*.log' | wc -l)" -eq $((2 * n)) ]
  for seed in 1 2; do
    check "real coverage of seed $seed" [ -n "$(find "$out/cov/$seed" -name '*.dat')" ]
  done
  check "real no failure printed" bash -c "! grep -q '^FAILED' '$WORK/out'"
}

fixture() {
  local out="$WORK/a"
  # Seeds 1-4: FailsOnOddSeeds fails on 1 and 3; Passes passes; the rtl-fixture-other test and
  # HangsOnSeed7 (--filter) do not run.
  if run "fixture fails" 1 rtl regress --no-build --build-dir "$DIR" --label rtl-fixture \
      --filter 'Passes|FailsOnOddSeeds' --seed 1 --seeds 4 --jobs 2 --out "$out"; then
    check "fixture summary" [ "$(last_line "$WORK/out")" = "6 passed, 2 failed" ]
    check "fixture header" grep -q "^rtl regress: 2 tests x 4 seeds" "$WORK/out"
    check "fixture failures printed" [ "$(grep -c '^FAILED' "$WORK/out")" -eq 2 ]
    # A line on stderr as each run ends: [n/8], pass or FAIL, the test, the seed, the time.
    check "fixture a line per run" [ "$(grep -Ec '^\[[1-8]/8\] (pass|FAIL) fixture\.RegressFixture\.[A-Za-z]+ seed [1-4].* \([0-9]+\.[0-9] s\)$' "$WORK/err")" -eq 8 ]
    check "fixture run lines count up" [ "$(sed -n 's/^\[\([0-9]*\)\/8\].*/\1/p' "$WORK/err" | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 " ]
    check "fixture failed run line" grep -q '^\[[1-8]/8\] FAIL fixture.RegressFixture.FailsOnOddSeeds seed 3: exit 1 (' "$WORK/err"
    check "fixture passed run line" grep -q '^\[[1-8]/8\] pass fixture.RegressFixture.Passes seed 2 (' "$WORK/err"
    for seed in 1 3; do
      check "fixture seed $seed printed" \
        grep -q "^FAILED fixture.RegressFixture.FailsOnOddSeeds seed $seed: exit 1" "$WORK/out"
      check "fixture seed $seed log printed" \
        grep -q "^  log: *$out/logs/rtl_regress_fixture_tb.RegressFixture.FailsOnOddSeeds.$seed.log$" "$WORK/out"
      check "fixture seed $seed waveform printed" grep -q \
        "^  waveform: $out/fst/rtl_regress_fixture_tb.RegressFixture.FailsOnOddSeeds.$seed/RegressFixture.FailsOnOddSeeds.0.fst$" \
        "$WORK/out"
      check "fixture seed $seed gtest failure quoted" grep -q "^  | .*DXPU_SEED=$seed is odd" "$WORK/out"
    done
    check "fixture no other label" bash -c "! grep -q 'fixture.other' '$WORK/out'"
    # The replay commands replay: seed 1 fails again, and with seed 2 the same command passes.
    local replay
    replay=$(sed -n 's/^  replay: *//p' "$WORK/out" | head -n 1)
    check "fixture replay printed" grep -q "^cd $DIR && DXPU_SEED=1 .*regress_fixture_tb --gtest_filter=RegressFixture.FailsOnOddSeeds$" \
      <<<"$replay"
    check "fixture replay fails" bash -c "! ( $replay ) >/dev/null 2>&1"
    check "fixture replay seed 2 passes" bash -c "( ${replay/DXPU_SEED=1/DXPU_SEED=2} ) >/dev/null 2>&1"
  fi
  # Waveforms: kept for the two failing runs only.
  check "fixture waveforms kept" [ "$(fsts "$out")" = "$(printf '%s\n' \
    "$out/fst/rtl_regress_fixture_tb.RegressFixture.FailsOnOddSeeds.1/RegressFixture.FailsOnOddSeeds.0.fst" \
    "$out/fst/rtl_regress_fixture_tb.RegressFixture.FailsOnOddSeeds.3/RegressFixture.FailsOnOddSeeds.0.fst")" ]
  check "fixture waveform not empty" \
    [ -s "$out/fst/rtl_regress_fixture_tb.RegressFixture.FailsOnOddSeeds.1/RegressFixture.FailsOnOddSeeds.0.fst" ]
  check "fixture logs" [ "$(find "$out/logs" -name '*.log' | wc -l)" -eq 8 ]
  check "fixture merged coverage" [ -s "$out/coverage.dat" ]
  check "fixture report.json" [ -s "$out/report.json" ]

  # --json: one JSON document on stdout, the summary line last on stderr.
  out="$WORK/b"
  if run "fixture json" 1 rtl regress --no-build --build-dir "$DIR" --label rtl-fixture \
      --filter 'Passes|FailsOnOddSeeds' --seed 1 --seeds 4 --json --out "$out"; then
    json_check "fixture json totals" \
      'd["passed"] == 6 and d["failed"] == 2 and d["summary"] == "6 passed, 2 failed" and
       d["first_seed"] == 1 and d["seeds"] == 4 and d["tests"] == 2 and d["label"] == "rtl-fixture"
       and len(d["runs"]) == 8'
    json_check "fixture json failed runs" \
      'sorted((r["test"], r["seed"]) for r in d["runs"] if not r["passed"]) ==
       [("fixture.RegressFixture.FailsOnOddSeeds", 1), ("fixture.RegressFixture.FailsOnOddSeeds", 3)]
       and all(len(r["fst"]) == 1 and os.path.getsize(r["fst"][0]) > 0 and
               "DXPU_SEED=%d " % r["seed"] in r["replay"] and r["why"] == "exit 1" and
               not r["timed_out"] and os.path.exists(r["log"])
               for r in d["runs"] if not r["passed"])'
    json_check "fixture json coverage" \
      'd["coverage"]["inputs"] == 8 and os.path.getsize(d["coverage"]["file"]) > 0 and
       d["coverage"]["points"] > 0 and 0 <= d["coverage"]["percent"] <= 100'
    check "fixture json summary on stderr" [ "$(last_line "$WORK/err")" = "6 passed, 2 failed" ]
    check "fixture json run lines on stderr" [ "$(grep -c '^\[[1-8]/8\] ' "$WORK/err")" -eq 8 ]
  fi

  # A run past --timeout (a duration) is killed and counts as a failure.
  out="$WORK/c"
  if run "fixture timeout" 1 rtl regress --no-build --build-dir "$DIR" --label rtl-fixture \
      --filter HangsOnSeed7 --seed 7 --seeds 1 --timeout 1500ms --out "$out"; then
    check "fixture timeout summary" [ "$(last_line "$WORK/out")" = "0 passed, 1 failed" ]
    check "fixture timeout printed" \
      grep -q "^FAILED fixture.RegressFixture.HangsOnSeed7 seed 7: timed out after 1.5s" "$WORK/out"
  fi
  # A bare number is still seconds, as --timeout took before durations.
  out="$WORK/c2"
  if run "fixture timeout bare seconds" 1 rtl regress --no-build --build-dir "$DIR" --label rtl-fixture \
      --filter HangsOnSeed7 --seed 7 --seeds 1 --timeout 2 --out "$out"; then
    check "fixture timeout bare seconds" \
      grep -q "^FAILED fixture.RegressFixture.HangsOnSeed7 seed 7: timed out after 2s" "$WORK/out"
  fi

  # Errors: no test with the label, a build that fails, bad arguments.
  if run "no tests" 1 rtl regress --no-build --build-dir "$DIR" --out "$WORK/d" --json; then
    json_check "no tests" 'd["error"] == "no-tests" and "rtl" in d["message"]'
  fi
  mkdir -p "$WORK/not-a-build"
  if run "build fails" 1 rtl regress --build-dir "$WORK/not-a-build" --out "$WORK/e"; then
    check "build fails reported" grep -q "build-failed" "$WORK/err"
    check "build log shown" grep -q "the build failed; the last" "$WORK/err"
    check "build fails: no summary" bash -c "! grep -q 'passed,' '$WORK/out'"
  fi
  run "seeds 0" 2 rtl regress --no-build --seeds 0 --build-dir "$DIR"
  if run "timeout too short" 2 rtl regress --no-build --build-dir "$DIR" --timeout 500ms; then
    check "timeout too short message" grep -q -- "^--timeout: 500ms is outside 1s..86400s" "$WORK/err"
  fi
  if run "bad filter" 2 rtl regress --no-build --build-dir "$DIR" --filter '('; then
    check "bad filter message" grep -q -- "--filter" "$WORK/err"
  fi
  if run "help" 0 rtl regress --help; then
    for opt in --build-dir --no-build --seeds --seed --filter --label --jobs --timeout --out \
        --json --verbose; do
      check "help $opt" grep -q -- "$opt" "$WORK/out"
    done
  fi
}

case "$MODE" in
  real) real ;;
  fixture) fixture ;;
  *)
    echo "regress_test.sh: unknown mode $MODE" >&2
    exit 2
    ;;
esac

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
