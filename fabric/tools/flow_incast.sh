#!/usr/bin/env bash
# Incast 31 -> 1 in modelled time under each flow-control mode: every GPU except 0 writes 64 KiB
# to GPU 0 at once, REPEAT times, through one switch whose egress queues hold 64 KiB (the
# tail-drop limit of "none"). Prints a Markdown table (docs/link-layer.md "Measured: incast").
#
#   none:              tail drop, no end-to-end recovery (a dropped write times out after 1 s)
#   none + go-back-n:  tail drop, [reliability] mode = "go-back-n" resends what was dropped
#   cbfc, pfc:         [link] flow_control, class_buffer_bytes 65536 per class and hop
#
# Usage: fabric/tools/flow_incast.sh [ETHX_BINARY] [REPEAT]   (defaults: build/bin/ethx, 10)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ethx="${1:-$repo/build/bin/ethx}"
repeat="${2:-10}"
work="$(mktemp -d /tmp/ethx-flow-incast.XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "| flow control | recovery | writes ok | failed | switch drops | p50 ns | p99 ns | makespan ns | Gbit/s into GPU 0 | held | credit updates | pause frames |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for variant in none none+go-back-n cbfc pfc; do
  mode="${variant%%+*}"
  config="$work/$variant.toml"
  {
    printf '[fabric]\ngpus = 32\n[switch]\negress_queue_bytes = 65536\n'
    printf '[link]\nflow_control = "%s"\nclass_buffer_bytes = 65536\n' "$mode"
    [ "$variant" = "none+go-back-n" ] && printf '[reliability]\nmode = "go-back-n"\n'
  } >"$config"
  "$ethx" sim --config "$config" --workload incast --bytes 65536 --repeat "$repeat" --json \
    2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
lat = r["latency_ns"]
fc = r.get("flow_control", {})
recovery = "go-back-n" if sys.argv[1].endswith("go-back-n") else "none"
gbps = r["payload_bytes"] * 8 / r["makespan_ns"] if r["makespan_ns"] else 0
cells = [sys.argv[1].split("+")[0], recovery, r["ops_ok"], r["ops_failed"], r["drops"],
         round(lat["p50"]), round(lat["p99"]), round(r["makespan_ns"]), f"{gbps:.0f}",
         fc.get("frames_held", "-"), fc.get("credit_updates_sent", "-"),
         fc.get("pause_frames_sent", "-")]
print("| " + " | ".join(str(cell) for cell in cells) + " |")
' "$variant"
done
