#!/usr/bin/env bash
# One job per function: no non-test C/C++ function longer than 80 lines, counted from its first
# line to its closing brace by Universal Ctags (end lines), so C files that clang-tidy never sees
# (the guest's, the QEMU device's, the OpenSHMEM library's) are held to it too.
# Usage: fabric/tools/check-function-size.sh [MAX_LINES]   (default 80)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
max_lines="${1:-80}"
cd "$repo"
command -v ctags > /dev/null && ctags --version 2> /dev/null | grep -q 'Universal Ctags' || {
  echo "check-function-size.sh: needs Universal Ctags (apt install universal-ctags)" >&2
  exit 1
}

# ctags -x with the end field: "<end> <start> <name> <file>" per function definition.
too_long="$(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cc' | grep -v '^tests/' |
  ctags --fields=+ne -x --_xformat='%{end} %{line} %N %F' --kinds-c++=f --kinds-c=f -L - |
  awk -v max="$max_lines" '$1 != "" && $1 - $2 + 1 > max {
    printf "%s:%s: %s is %d lines (at most %d)\n", $4, $2, $3, $1 - $2 + 1, max }')"
if [ -n "$too_long" ]; then
  echo "$too_long" >&2
  echo "check-function-size.sh: split these by phase into named steps (docs/architecture.md, "One job per function")" >&2
  exit 1
fi
