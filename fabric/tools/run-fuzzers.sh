#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each for a bounded
# time. Fails if any target crashes. docs/fuzzing.md explains the targets and their input format.
#
#   run-fuzzers.sh [seconds-per-target]     default 60; CI uses about 15
#
# The committed seeds (tests/fuzz/corpus/) are copied into build-fuzz/corpus-work/, which keeps
# what earlier runs found; libFuzzer writes only there, never into the committed corpus.
# Crash inputs land in build-fuzz/fuzz-artifacts/<target>/, full logs in build-fuzz/fuzz-logs/.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seconds="${1:-60}"
jobs="${ETHX_FUZZ_JOBS:-2}"
build="$repo/build-fuzz"
targets=(fuzz_frame_decode fuzz_endpoint_rx fuzz_switch_ingress fuzz_topology_config fuzz_roce_decode
  fuzz_link_retry)

say() { printf '==> %s\n' "$*" >&2; }

case "$seconds" in
  '' | *[!0-9]*) echo "usage: $0 [seconds-per-target]" >&2; exit 2 ;;
esac

say "building ${#targets[@]} fuzz targets in build-fuzz/"
mkdir -p "$build"
if ! { cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DETHX_WITH_FUZZERS=ON \
         -DETHX_WITH_TESTS=OFF -DETHX_WITH_XDP=OFF &&
       cmake --build "$build" -j "$jobs" --target "${targets[@]}"; } >"$build/fuzz-build.log" 2>&1
then
  tail -n 30 "$build/fuzz-build.log" >&2
  exit 1
fi

# The frame targets share one dictionary (EtherTypes, MAC prefix); the config target its own.
dictionary_for() {
  case "$1" in
    fuzz_topology_config) echo "$repo/tests/fuzz/topology.dict" ;;
    *) echo "$repo/tests/fuzz/frames.dict" ;;
  esac
}

# Last value of a libFuzzer field ("cov: 185", "stat::peak_rss_mb: 460") in a log, or "?".
field() {
  grep -oE "(^|[[:space:]])$1:[[:space:]]+[0-9]+" "$2" | tail -n 1 | grep -oE '[0-9]+$' || echo '?'
}

say "running each target for ${seconds} s"
failed=0
for target in "${targets[@]}"; do
  work="$build/corpus-work/$target"
  artifacts="$build/fuzz-artifacts/$target"
  log="$build/fuzz-logs/$target.log"
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  cp -n "$repo/tests/fuzz/corpus/$target/"* "$work/"

  status=0
  "$build/bin/$target" "$work" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=25 \
    -print_final_stats=1 -dict="$(dictionary_for "$target")" -artifact_prefix="$artifacts/" \
    >"$log" 2>&1 || status=$?

  result=ok
  if [ "$status" -ne 0 ]; then
    failed=1
    why="$(grep -m 1 -E 'invariant failed|SUMMARY:|ERROR:' "$log" | cut -c 1-120 || true)"
    input="$(grep -m 1 -oE 'Test unit written to [^ ]+' "$log" | cut -d ' ' -f 5 || true)"
    result="CRASH (exit $status): $why; input: ${input:-see $log}"
  fi
  printf '%-22s %10s execs %7s execs/s  cov %5s  ft %6s  corpus %5s  %s\n' "$target" \
    "$(field 'stat::number_of_executed_units' "$log")" \
    "$(field 'stat::average_exec_per_sec' "$log")" \
    "$(field 'cov' "$log")" "$(field 'ft' "$log")" "$(find "$work" -type f | wc -l)" "$result"
done
exit "$failed"
