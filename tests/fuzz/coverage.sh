#!/usr/bin/env bash
# coverage.sh - line coverage of the parsers reached by the fuzz targets' corpora
# (docs/fuzzing.md, "Coverage"): the targets built by clang 14 with -fprofile-instr-generate
# -fcoverage-mapping (no sanitizers) in BUILD, each run once over its corpora, llvm-cov-14's
# report over the parsers' sources.
#   coverage.sh BUILD [CORPUS_ROOT...]   (default: tests/fuzz/corpus and, when there,
#                                         build/asan/tests/fuzz/campaign: make fuzz's corpora)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$1
shift
roots=("$@")
if [ ${#roots[@]} -eq 0 ]; then
  roots=("$here/corpus")
  [ -d "$src/build/asan/tests/fuzz/campaign" ] && roots+=("$src/build/asan/tests/fuzz/campaign")
fi
flags="-fprofile-instr-generate -fcoverage-mapping"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g1 -O1 $flags" \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1 $flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
  -DDXPU_BENCH=OFF -DDXPU_CHECKS=OFF -DDXPU_KERNEL_TESTS=OFF -DDXPU_RTL=OFF >/dev/null
names=(tlp dxfp_frame dxfp_session mgmt rest_body firmware_image kineto_trace bridge_config)
cmake --build "$build" --target "${names[@]/%/_fuzz}"
sources=(lib/core/tlp_codec.c lib/core/dxfp_frame.c lib/core/dxfp_session.c lib/core/dxfp_credit.c
  lib/core/dxpu_mgmt.c bridge-fw/management.cc bridge-fw/management_client.cc
  bridge-fw/firmware/image.cc bridge-fw/firmware/firmware_service.cc
  lib/perfmodel/kineto_trace.cc manager/pool_json.cc bridge-fw/bridge_config.cc)
rm -rf "$build/coverage"
mkdir -p "$build/coverage"
objects=()
for name in "${names[@]}"; do
  dirs=()
  for r in "${roots[@]}"; do
    for d in "$r/$name" "$r/$name/corpus"; do [ -d "$d" ] && dirs+=("$d"); done
  done
  exe="$build/tests/fuzz/${name}_fuzz"
  LLVM_PROFILE_FILE="$build/coverage/$name.profraw" "$exe" -runs=0 "${dirs[@]}" 2>&1 |
    grep -E 'INITED' | sed "s/^/$name: /"
  objects+=(-object "$exe")
done
llvm-profdata-14 merge -sparse "$build"/coverage/*.profraw -o "$build/coverage/all.profdata"
llvm-cov-14 report -instr-profile="$build/coverage/all.profdata" "${objects[@]:1}" \
  "${sources[@]/#/$src/}" | sed "s|$src/||"
