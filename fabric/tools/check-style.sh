#!/usr/bin/env bash
# The house's habits, checked (CI runs this from setup.sh test):
#   1. every C/C++ file is clang-format clean (.clang-format);
#   2. every #include points down the layers (fabric/tools/check-layers.py);
#   3. no non-test function is longer than 80 lines (fabric/tools/check-function-size.sh);
#   4. clang-tidy's agreed check set (.clang-tidy) finds nothing in non-test code.
# Usage: fabric/tools/check-style.sh [BUILD_DIR]   (a configured build with compile_commands.json)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$repo/build}"
jobs="$(nproc)"
cd "$repo"
say() { printf '==> %s\n' "$*" >&2; }

say "clang-format: every C/C++ file"
git ls-files '*.c' '*.h' '*.cpp' '*.hpp' | grep -v '^tests/fuzz/corpus/' |
  xargs -r clang-format --dry-run -Werror

say "layers: every #include points down"
python3 fabric/tools/check-layers.py

say "function size: at most 80 lines each"
fabric/tools/check-function-size.sh 80

# Non-test sources in the compilation database: the guest image's C files and the QEMU file
# build elsewhere (build-guest-image.sh, build-qemu.sh) against headers this build lacks.
[ -f "$build/compile_commands.json" ] ||
  { echo "check-style.sh: $build/compile_commands.json is missing: configure the build first" >&2; exit 1; }
mapfile -t sources < <(git ls-files '*.cpp' | grep -v '^tests/')
say "clang-tidy (.clang-tidy): ${#sources[@]} files"
# The GCC build's own flags are unknown to clang: warnings (-Wno-restrict), and the fat LTO
# objects of a Release build (-ffat-lto-objects, cmake/link_time_optimisation.cmake).
run-clang-tidy -p "$build" -quiet -j "$jobs" -extra-arg=-Wno-unknown-warning-option \
  -extra-arg=-Wno-ignored-optimization-argument \
  "${sources[@]/#/$repo/}" > "$build/clang-tidy.log" 2>&1 || {
  grep -E 'warning:|error:' "$build/clang-tidy.log" | sort -u >&2
  echo "check-style.sh: clang-tidy findings (whole log: $build/clang-tidy.log)" >&2
  exit 1
}
# clang-tidy 14 falls back to its defaults, and succeeds, when it cannot read .clang-tidy.
if grep -q '\.clang-tidy:.*error' "$build/clang-tidy.log"; then
  grep -m 3 '\.clang-tidy:.*error' "$build/clang-tidy.log" >&2
  echo "check-style.sh: .clang-tidy is not valid; nothing was checked" >&2
  exit 1
fi
say "style: clean"
