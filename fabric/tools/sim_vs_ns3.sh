#!/usr/bin/env bash
# Speed against a peer: packets delivered per wall-clock second by `ethx sim` and by ns-3 on the
# same topology and traffic, measured in one run (method and caveats: docs/sim-vs-ns3.md).
#
#   N hosts on one switch, all-to-all, 64 B payloads, the same number of packets delivered end to
#   end. ethx: `ethx sim --topology single --workload all-to-all`. ns-3 (Debian's libns3-dev,
#   3.37): fabric/tools/ns3/ethx_ns3_alltoall.cc, N hosts with a CsmaNetDevice each on its own
#   CSMA link to one switch node holding a BridgeNetDevice over N CSMA ports, UDP over IPv4.
#
# Usage: fabric/tools/sim_vs_ns3.sh [options] [ETHX_BINARY]     (default ETHX_BINARY: build/bin/ethx)
#   --hosts N            hosts / GPUs on the switch (default 32)
#   --bytes B            payload bytes per packet, 1..1472 (default 64)
#   --repeat R           `ethx sim --repeat`; default: calibrated so ethx runs ~--seconds
#   --seconds S          wall seconds to aim the ethx run at when calibrating (default 3)
#   --threads T          `ethx sim --threads` (1 or 2; default: ethx's own, 2 on two or more
#                        cores); ns-3 runs on one
#   --rounds N           run both N times, alternating, and report the median ratio with its
#                        range (default 1; the host's load moves one run's ratio by a sixth)
#   --json               print one JSON object on stdout instead of the table
#   --ns3-only P         skip ethx; run ns-3 alone with P packets per pair (develop/test the peer)
#   -h, --help
#
# Installs libns3-dev with apt-get when it is missing (the only package it needs: the program is
# linked against the ns-3 libraries directly, so libgsl-dev, which `pkg-config ns3-core` would
# want, is not required). Builds the ns-3 program into ${XDG_CACHE_HOME:-$HOME/.cache}/ethx/ns3.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ns3_source="$repo/fabric/tools/ns3/ethx_ns3_alltoall.cc"
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/ethx/ns3"
ns3_binary="$cache_dir/ethx_ns3_alltoall"

hosts=32
bytes=64
repeat=""
target_seconds=3
rounds=1
threads=""
json=0
ns3_only=""
ethx=""

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'sim_vs_ns3.sh: error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts="${2:?--hosts needs a value}"; shift 2 ;;
    --bytes) bytes="${2:?--bytes needs a value}"; shift 2 ;;
    --repeat) repeat="${2:?--repeat needs a value}"; shift 2 ;;
    --seconds) target_seconds="${2:?--seconds needs a value}"; shift 2 ;;
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --threads) threads="${2:?--threads needs a value}"; shift 2 ;;
    --json) json=1; shift ;;
    --ns3-only) ns3_only="${2:?--ns3-only needs packets per pair}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) [ -z "$ethx" ] || die "one ETHX_BINARY only"; ethx="$1"; shift ;;
  esac
done
{ is_uint "$hosts" && [ "$hosts" -ge 2 ]; } || die "--hosts must be an integer >= 2"
{ is_uint "$bytes" && [ "$bytes" -ge 1 ] && [ "$bytes" -le 1472 ]; } ||
  die "--bytes must be 1..1472 (one ns-3 UDP datagram in a 1500 B MTU)"
[ -z "$repeat" ] || { is_uint "$repeat" && [ "$repeat" -ge 1 ]; } || die "--repeat must be >= 1"
{ is_uint "$rounds" && [ "$rounds" -ge 1 ]; } || die "--rounds must be an integer >= 1"
[ -z "$threads" ] || [ "$threads" = 1 ] || [ "$threads" = 2 ] || die "--threads must be 1 or 2"
[ -z "$ns3_only" ] || { is_uint "$ns3_only" && [ "$ns3_only" -ge 1 ]; } ||
  die "--ns3-only needs packets per pair >= 1"
awk -v s="$target_seconds" 'BEGIN { exit !(s + 0 > 0) }' || die "--seconds must be > 0"
ethx="${ethx:-$repo/build/bin/ethx}"
pairs=$((hosts * (hosts - 1)))

# --- ns-3: install, build ------------------------------------------------------------------------
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

ensure_ns3() {
  command -v g++ >/dev/null || die "g++ not found (apt-get install build-essential)"
  [ -f "$ns3_source" ] || die "missing $ns3_source"
  if installed libns3-dev; then
    say "libns3-dev is installed"
  else
    command -v apt-get >/dev/null || die "libns3-dev (ns-3) is missing and apt-get is not available"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || die "libns3-dev is missing; install it as root: apt-get install libns3-dev"
      sudo="sudo"
    fi
    say "libns3-dev (ns-3) is missing: installing it with apt-get (~12 MB download, ~57 MB installed with libns3.37)"
    $sudo apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libns3-dev >/dev/null ||
      die "apt-get install libns3-dev failed"
  fi
  [ -f /usr/include/ns3/core-module.h ] || die "libns3-dev is installed but /usr/include/ns3 is missing"
}

build_ns3() {
  local version stamp want
  local -a compile=(g++ -O2 -std=c++17 -o "$ns3_binary.tmp" "$ns3_source" -lns3-applications
    -lns3-bridge -lns3-csma -lns3-internet -lns3-network -lns3-core)
  version="$(dpkg-query -W -f='${Version}' libns3-dev 2>/dev/null || echo unknown)"
  want="$(sha256sum "$ns3_source" | cut -d' ' -f1) ns3-$version ${compile[*]}"
  stamp="$ns3_binary.stamp"
  mkdir -p "$cache_dir" || die "cannot create $cache_dir"
  if [ -x "$ns3_binary" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "ns-3 program is up to date: $ns3_binary"
    return
  fi
  say "compiling the ns-3 program into $cache_dir (ns-3 $version, ~10 s)"
  "${compile[@]}" || die "compiling $ns3_source failed"
  mv "$ns3_binary.tmp" "$ns3_binary"
  printf '%s\n' "$want" >"$stamp"
}

# value KEY < "key value" lines
kv() { awk -v k="$1" '$1 == k { print $2; found = 1 } END { exit !found }'; }

# run_ns3 PACKETS_PER_PAIR: sets ns3_out (its stdout)
run_ns3() {
  local err
  err="$(mktemp)"
  if ! ns3_out="$(env -u NS_LOG "$ns3_binary" --hosts="$hosts" --payload="$bytes" \
      --packets-per-pair="$1" 2>"$err")"; then
    cat "$err" >&2
    printf '%s\n' "$ns3_out" >&2
    rm -f "$err"
    die "the ns-3 run failed or lost packets (see above)"
  fi
  rm -f "$err"
}

# --- ethx sim ------------------------------------------------------------------------------------
# run_ethx REPEAT: sets ethx_json, ethx_stderr_line (its speed), ethx_stderr (all its own
# lines), and ethx_wall / ethx_cpu (seconds of the whole process, timed from outside with bash's
# `time`: real, and user + sys).
run_ethx() {
  local out err timing status=0 real user sys TIMEFORMAT='%3R %3U %3S'
  out="$(mktemp)"; err="$(mktemp)"; timing="$(mktemp)"
  { time "$ethx" sim --gpus "$hosts" --workload all-to-all --bytes "$bytes" --repeat "$1" \
      --json --topology single ${threads:+--threads "$threads"} >"$out" 2>"$err"; } \
    2>"$timing" || status=$?
  if [ "$status" -ne 0 ]; then
    cat "$err" >&2
    rm -f "$out" "$err" "$timing"
    die "ethx sim exited with status $status (see above)"
  fi
  ethx_json="$(cat "$out")"
  ethx_stderr_line="$(grep -m1 '^ethx sim:' "$err" || true)"
  ethx_stderr="$(grep '^ethx sim:' "$err" || true)"
  read -r real user sys <"$timing"
  rm -f "$out" "$err" "$timing"
  ethx_wall="$real"
  ethx_cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')"
}

# The threads ethx used and how far apart their cores were (a cache line's round trip, ns; "-"
# if not measured), from its stderr: "wall 0.652 s on 2 threads, cores 55 ns apart, ..." or,
# when it kept to one, "one thread, not two: the second core is 330 ns away ...".
ethx_threads_and_cores() {
  local threads cores
  threads="$(printf '%s\n' "$ethx_stderr" | grep -m1 -oE 'on [0-9]+ thread' | grep -oE '[0-9]+' ||
    echo 1)"
  cores="$(printf '%s\n' "$ethx_stderr" | grep -m1 -oE '(cores|core is) [0-9]+ ns' |
    grep -oE '[0-9]+' || echo -)"
  printf '%s %s\n' "$threads" "$cores"
}

# json_uint KEY: the top-level integer KEY of $ethx_json (jq, else python3, else a plain match).
json_uint() {
  local v
  if command -v jq >/dev/null; then
    v="$(printf '%s' "$ethx_json" | jq -er --arg k "$1" '.[$k] // empty')" || return 1
  elif command -v python3 >/dev/null; then
    v="$(printf '%s' "$ethx_json" | python3 -c 'import json, sys
print(json.load(sys.stdin).get(sys.argv[1], ""))' "$1")" || return 1
  else
    v="$(printf '%s' "$ethx_json" | tr -d '\n' |
      grep -o "\"$1\"[[:space:]]*:[[:space:]]*[0-9]\+" | head -n1 | grep -o '[0-9]\+$')" || return 1
  fi
  is_uint "$v" || return 1
  printf '%s\n' "$v"
}

# The wall-clock figure of ethx sim's own stderr line ("ethx sim: wall 2.931 s, ..."; it times
# the model's setup and run, not process start); empty if the line has none.
ethx_run_seconds() {
  printf '%s\n' "$ethx_stderr_line" |
    grep -o -E '(run|wall|simulat[a-z]*)[[:space:]=:]+[0-9]+(\.[0-9]+)?[[:space:]]*s\b' |
    head -n1 | grep -o -E '[0-9]+(\.[0-9]+)?' | head -n1 || true
}

# --- main ----------------------------------------------------------------------------------------
if [ -z "$ns3_only" ]; then
  [ -x "$ethx" ] ||
    die "no ethx binary at $ethx (build it: fabric/tools/setup.sh build, or pass its path)"
  if ! help="$("$ethx" sim --help 2>&1)" || grep -qi 'unknown command' <<<"$help"; then
    die "$ethx has no working 'sim' command ('$ethx sim --help' failed); build a tree with ethx sim"
  fi
fi
ensure_ns3
build_ns3

if [ -n "$ns3_only" ]; then
  say "ns-3 only: $hosts hosts, $ns3_only packets per pair, $bytes B payload"
  run_ns3 "$ns3_only"
  printf '%s\n' "$ns3_out"
  exit 0
fi

if [ -z "$repeat" ]; then
  # Calibrate: time a short run, then scale --repeat to aim at --seconds of wall time.
  calibration=4
  while :; do
    run_ethx "$calibration"
    if awk -v w="$ethx_wall" 'BEGIN { exit !(w >= 0.3) }' || [ "$calibration" -ge 1048576 ]; then
      break
    fi
    calibration=$((calibration * 8))
  done
  repeat="$(awk -v r="$calibration" -v w="$ethx_wall" -v t="$target_seconds" \
    'BEGIN { x = int(r * t / w); if (x < 1) x = 1; print x }')"
  say "calibration: --repeat $calibration took ${ethx_wall} s; using --repeat $repeat"
fi

say "ethx sim: --gpus $hosts --workload all-to-all --bytes $bytes --repeat $repeat --topology single"
run_ethx "$repeat"
ethx_frames="$(json_uint frames_delivered)" || die "ethx sim printed no frames_delivered in its JSON"
ethx_events="$(json_uint events || true)"
[ "$ethx_frames" -gt 0 ] || die "ethx sim delivered no frames"

# ns-3: the packets per pair that make its total closest to ethx's frames delivered.
per_pair=$(((ethx_frames + pairs / 2) / pairs))
[ "$per_pair" -ge 1 ] || per_pair=1
ns3_target=$((per_pair * pairs))
# A short ns-3 run first, only to say how long the real one will take.
run_ns3 "$(( per_pair < 10 ? per_pair : 10 ))"
estimate="$(kv wall_seconds <<<"$ns3_out" | awk -v p="$(kv packets_received <<<"$ns3_out")" \
  -v t="$ns3_target" '{ printf "%.0f", $1 / p * t }')"
say "ns-3: $hosts hosts, $per_pair packets per pair = $ns3_target packets (ethx delivered" \
  "$ethx_frames); this takes about $estimate s"

# measure_ns3: runs ns-3 with per_pair and sets its figures.
measure_ns3() {
  run_ns3 "$per_pair"
  ns3_packets="$(kv packets_received <<<"$ns3_out")" || die "no packets_received from ns-3"
  ns3_wall="$(kv wall_seconds <<<"$ns3_out")" || die "no wall_seconds from ns-3"
  ns3_cpu="$(kv cpu_seconds <<<"$ns3_out")" || die "no cpu_seconds from ns-3"
  ns3_events="$(kv events <<<"$ns3_out" || true)"
  [ "$ns3_packets" -eq "$ns3_target" ] || die "ns-3 delivered $ns3_packets of $ns3_target packets"
}

# cores_apart NS: ", cores NS ns apart", or nothing when not measured.
cores_apart() { [ "$1" = "-" ] || printf ', cores %s ns apart' "$1"; }

# Rates. The ethx wall time is the whole process timed from outside (process start and model
# setup included); the ns-3 wall time is Simulator::Run() only (setup excluded). Both favour ns-3.
# Each round runs both, ethx first; its figures are kept as one line of `round_figures`.
round_figures=()
for ((round = 1; round <= rounds; round++)); do
  if [ "$round" -gt 1 ]; then
    run_ethx "$repeat"
    [ "$(json_uint frames_delivered)" = "$ethx_frames" ] ||
      die "ethx sim delivered a different number of frames in round $round"
  fi
  measure_ns3
  read -r ethx_pps ns3_pps ratio cpu_ratio < <(awk -v ef="$ethx_frames" -v ew="$ethx_wall" \
    -v ec="$ethx_cpu" -v nf="$ns3_packets" -v nw="$ns3_wall" -v nc="$ns3_cpu" 'BEGIN {
      e = ef / ew; n = nf / nw
      printf "%.0f %.0f %.2f %.2f\n", e, n, e / n, (ef / ec) / (nf / nc) }')
  ethx_run="$(ethx_run_seconds)"
  read -r round_threads round_cores < <(ethx_threads_and_cores)
  round_figures+=("$ratio $cpu_ratio $ethx_wall $ethx_cpu $ethx_pps $ns3_wall $ns3_cpu $ns3_pps ${ethx_run:--} $round_threads $round_cores")
  [ "$rounds" -eq 1 ] || say "round $round of $rounds: ethx $ethx_pps (on $round_threads" \
    "thread(s)$(cores_apart "$round_cores")), ns-3 $ns3_pps packets / wall s: ${ratio}x" \
    "(${cpu_ratio}x per CPU second)"
done
# The round with the median ratio (the lower of the middle two for an even count) is the one
# reported; the range is printed beside it.
median_line="$(printf '%s\n' "${round_figures[@]}" | sort -g -k1,1 | sed -n "$(((rounds + 1) / 2))p")"
read -r ratio cpu_ratio ethx_wall ethx_cpu ethx_pps ns3_wall ns3_cpu ns3_pps ethx_run ethx_threads \
  ethx_cores <<<"$median_line"
[ "$ethx_run" != "-" ] || ethx_run=""
ratio_min="$(printf '%s\n' "${round_figures[@]}" | sort -g -k1,1 | head -n1 | cut -d' ' -f1)"
ratio_max="$(printf '%s\n' "${round_figures[@]}" | sort -g -k1,1 | tail -n1 | cut -d' ' -f1)"

if [ "$json" -eq 1 ]; then
  printf '{"hosts":%s,"payload_bytes":%s,' "$hosts" "$bytes"
  printf '"ethx":{"binary":"%s","repeat":%s,"threads":%s,"packets_delivered":%s,' \
    "$ethx" "$repeat" "$ethx_threads" "$ethx_frames"
  printf '"cores_round_trip_ns":%s,"wall_seconds":%s,' "${ethx_cores/#-/null}" "$ethx_wall"
  printf '"cpu_seconds":%s,"packets_per_wall_second":%s,"events":%s,"run_seconds_from_stderr":%s},' \
    "$ethx_cpu" "$ethx_pps" "${ethx_events:-null}" "${ethx_run:-null}"
  printf '"ns3":{"packets_per_pair":%s,"packets_delivered":%s,"wall_seconds":%s,"cpu_seconds":%s,' \
    "$per_pair" "$ns3_packets" "$ns3_wall" "$ns3_cpu"
  printf '"packets_per_wall_second":%s,"events":%s},' "$ns3_pps" "${ns3_events:-null}"
  printf '"ratio_ethx_over_ns3":%s,"ratio_per_cpu_second":%s,' "$ratio" "$cpu_ratio"
  printf '"rounds":%s,"ratio_min":%s,"ratio_max":%s}\n' "$rounds" "$ratio_min" "$ratio_max"
  exit 0
fi

printf '\n%d hosts on one switch, all-to-all, %d B payloads (ethx --repeat %d on %d thread(s)%s; ns-3 %d packets per pair)\n\n' \
  "$hosts" "$bytes" "$repeat" "$ethx_threads" "$(cores_apart "$ethx_cores")" "$per_pair"
printf '%-9s %18s %13s %12s %18s %11s\n' tool "packets delivered" "wall seconds" "cpu seconds" \
  "packets / wall s" "events/pkt"
row() {
  awk -v t="$1" -v p="$2" -v w="$3" -v c="$4" -v r="$5" -v e="$6" 'BEGIN {
    epp = (e == "" ? "-" : sprintf("%.1f", e / p))
    printf "%-9s %18d %13.3f %12.3f %18.0f %11s\n", t, p, w, c, r, epp }'
}
row "ethx sim" "$ethx_frames" "$ethx_wall" "$ethx_cpu" "$ethx_pps" "$ethx_events"
row "ns-3" "$ns3_packets" "$ns3_wall" "$ns3_cpu" "$ns3_pps" "$ns3_events"
printf '\nratio ethx/ns-3: %sx packets per wall second (%sx per CPU second)\n' "$ratio" "$cpu_ratio"
if [ "$rounds" -gt 1 ]; then
  printf 'the median of %d rounds (its round in the table), range %sx to %sx\n' "$rounds" \
    "$ratio_min" "$ratio_max"
fi
printf 'wall and cpu seconds: ethx, the whole process timed from outside; ns-3, Simulator::Run() only.\n'
if [ -n "$ethx_run" ]; then
  printf 'ethx sim timed itself (model setup + run, no process start): %s s, %s packets / wall s\n' \
    "$ethx_run" "$(awk -v f="$ethx_frames" -v w="$ethx_run" 'BEGIN { printf "%.0f", f / w }')"
fi
