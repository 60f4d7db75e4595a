#!/usr/bin/env bash
# Link-level retry against end-to-end go-back-N in modelled time: remote-load latency while one
# GPU's hop (switch port 1, both directions) corrupts frames at each rate. Prints a Markdown
# table (docs/link-layer.md "Measured").
#
#   per rate and recovery: 8 GPUs on one switch, `ethx sim --workload read-latency` (GPU 0 loads
#   from GPU 1, one load at a time, 100 per repeat) at --bytes 8 and 65536.
#   llr: [link] retry = "llr";  go-back-n: [reliability] mode = "go-back-n", no link retry;
#   none: neither (a damaged frame is a lost operation: the 1 s request timeout).
#
# Usage: fabric/tools/llr_sweep.sh [ETHX_BINARY] [REPEAT]   (defaults: build/bin/ethx, 1000)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ethx="${1:-$repo/build/bin/ethx}"
repeat="${2:-1000}"
work="$(mktemp -d /tmp/ethx-llr-sweep.XXXXXX)"
trap 'rm -rf "$work"' EXIT

recovery_table() {
  case "$1" in
    llr) printf '[link]\nretry = "llr"\n' ;;
    go-back-n) printf '[reliability]\nmode = "go-back-n"\n' ;;
    none) ;;
  esac
}

echo "| corrupt rate | recovery | bytes | ops ok | failed | p50 ns | p99 ns | max ns | replayed frames |"
echo "|---|---|---|---|---|---|---|---|---|"
for rate in 0.00001 0.0001 0.001 0.01; do
  for recovery in llr go-back-n none; do
    for bytes in 8 65536; do
      config="$work/$recovery-$rate.toml"
      {
        printf '[fabric]\ngpus = 8\n'
        recovery_table "$recovery"
        printf '[[fault]]\nport = 1\ndirection = "both"\ncorrupt_rate = %s\n' "$rate"
      } >"$config"
      reps="$repeat"
      [ "$bytes" -gt 8 ] && reps=$((repeat / 10))
      "$ethx" sim --config "$config" --workload read-latency --bytes "$bytes" --repeat "$reps" \
        --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
lat = r["latency_ns"]
replayed = r.get("link_retry", {}).get("frames_replayed", "-")
cells = [*sys.argv[1:4], r["ops_ok"], r["ops_failed"], round(lat["p50"]), round(lat["p99"]),
         round(lat["max"]), replayed]
print("| " + " | ".join(str(cell) for cell in cells) + " |")
' "$rate" "$recovery" "$bytes"
    done
  done
done
