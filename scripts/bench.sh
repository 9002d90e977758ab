#!/usr/bin/env bash
# End-to-end benchmark: the standalone server (examples/server) against a
# bare httputil.ReverseProxy, both in front of one instant mock provider, on
# this machine over loopback. Each round starts each server afresh, warms it
# up, then measures it; rounds alternate the two servers so that drift in the
# machine's load falls on both. Every figure is printed as the gateway's
# ratio to the bare proxy of the same run: the load generator, the servers
# and the mock share the cores, so absolute numbers only describe this
# machine at this moment.
#
#   scripts/bench.sh                       # 3 rounds of 10 s per test
#   ROUNDS=1 DURATION=2 RATES=500 scripts/bench.sh   # a quick check
#
# What it measures, per server and round:
#   - throughput: wrk, closed loop, CONNS connections for DURATION seconds;
#   - CPU per request: the server's user+system CPU time during that test
#     divided by the requests it answered (from /proc/PID/stat);
#   - latency at a fixed rate: vegeta, open loop, RATES req/s for DURATION
#     seconds each (queueing shows as latency instead of lower throughput);
#   - peak RSS: the server's VmHWM at the end of the round.
#
# Knobs (environment):
#   ROUNDS=3 DURATION=10 WARMUP=2 CONNS=32 RATES="500 2000"
#   GW_PATH=/v1/chat/completions   path requested of both servers
#   GW_BODY=FILE                   request body (default: a one-message chat)
#   GW_DB=DSN                      the server's -db (default: a fresh SQLite
#                                  file per round, as the server ships;
#                                  ":memory:" keeps nothing)
#   GW_FLAGS="..."                 more examples/server flags, e.g.
#                                  "-request-log off -store-logs=false"
#   PORT=18101                     mock on PORT, bare proxy PORT+1, gateway PORT+2
#   OUT=DIR                        raw outputs (default: a temporary directory)
#
# Tools: go, curl, jq, wrk and vegeta. On Debian or Ubuntu:
#   apt-get install -y wrk jq curl
#   go install github.com/tsenart/vegeta/v12@v12.12.0   # into $(go env GOPATH)/bin
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-3} DURATION=${DURATION:-10} WARMUP=${WARMUP:-2} CONNS=${CONNS:-32}
RATES=${RATES:-"500 2000"} GW_PATH=${GW_PATH:-/v1/chat/completions} PORT=${PORT:-18101}
MOCK_ADDR=127.0.0.1:$PORT BARE_ADDR=127.0.0.1:$((PORT + 1)) GW_ADDR=127.0.0.1:$((PORT + 2))

VEGETA=$(command -v vegeta || echo "$(go env GOPATH)/bin/vegeta")
missing=
for tool in go curl jq wrk; do command -v $tool >/dev/null || missing="$missing $tool"; done
[ -x "$VEGETA" ] || missing="$missing vegeta"
if [ -n "$missing" ]; then
  echo "bench.sh: missing:$missing" >&2
  sed -n '/^# Tools:/,/^set /p' "$0" | sed '$d' >&2
  exit 2
fi
HZ=$(getconf CLK_TCK)

WORK=$(mktemp -d)
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT" "$WORK/bin"
MOCK= PID=
cleanup() {   # ends the servers this script started and still runs, by their ids
  for pid in $PID $MOCK; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK/bin" "$WORK"/round*
}
trap cleanup EXIT

echo "building examples/server and scripts/bench/benchd…"
go build -o "$WORK/bin/gateway" ./examples/server
go build -o "$WORK/bin/benchd" ./scripts/bench/benchd

# The request, and the gateway's operator config: one member key and one
# virtual key whose base URL is the mock (loopback: an operator may).
BODY=${GW_BODY:-$WORK/body.json}
[ -n "${GW_BODY:-}" ] || echo '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello, bench"}]}' > "$BODY"
GW_KEY=gw-bench-0123456789abcdef
cat > "$WORK/gateway.json" <<EOF
{
  "api_keys": [{"id": "bench", "key": "$GW_KEY", "workspace_id": "ws-bench", "role": "member"}],
  "virtual_keys": [{"slug": "bench-mock", "provider": "openai", "api_key": "sk-bench",
                    "base_url": "http://$MOCK_ADDR/v1", "workspace_id": "ws-bench"}]
}
EOF
BARE_HEADERS=(-H "Content-Type: application/json" -H "Authorization: Bearer sk-bench")
GW_HEADERS=(-H "Content-Type: application/json" -H "x-gateway-api-key: $GW_KEY" -H "x-gateway-virtual-key: bench-mock")

# wrk: POST the body; done() prints one line to parse.
cat > "$WORK/post.lua" <<EOF
wrk.method = "POST"
local f = assert(io.open("$BODY")); wrk.body = f:read("*a"); f:close()
function done(s, lat)
  local e = s.errors
  io.write(string.format("RESULT requests=%d seconds=%.3f errors=%d\n", s.requests, s.duration / 1e6,
    e.connect + e.read + e.write + e.status + e.timeout))
end
EOF

busy() { curl -s -o /dev/null --max-time 1 "http://$1/" && return 0 || [ $? -ne 7 ]; }
for a in $MOCK_ADDR $BARE_ADDR $GW_ADDR; do
  if busy "$a"; then echo "bench.sh: $a is taken; set PORT" >&2; exit 1; fi
done

# start NAME CMD...: runs CMD in the background, sets PID.
start() {
  local name=$1; shift
  "$@" > "$OUT/$name.log" 2>&1 &
  PID=$!
}
# stop: ends the server start started last, and waits for it.
stop() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=; }
# ready URL PID: waits up to 30 s for URL to answer 200.
ready() {
  for _ in $(seq 150); do
    kill -0 "$2" 2>/dev/null || return 1
    curl -sf -o /dev/null "$1" && return 0
    sleep 0.2
  done
  return 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
peak_rss_mb() { awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

# measure NAME ROUND PID HEADERS...: appends "NAME key=value…" to results.
measure() {
  local name=$1 round=$2 pid=$3; shift 3
  local url=http://${ADDR[$name]}$GW_PATH code
  code=$(curl -s -o "$OUT/$name-sample.json" -w '%{http_code}' -X POST "$@" --data-binary "@$BODY" "$url")
  if [ "$code" != 200 ]; then
    echo "bench.sh: $name answered $code to $GW_PATH (see $OUT/$name-sample.json)" >&2; return 1
  fi
  local hargs=() vargs=() h
  while [ $# -gt 0 ]; do hargs+=("$1" "$2"); vargs+=(-header "$2"); shift 2; done
  wrk -t1 -c"$CONNS" -d"${WARMUP}s" -s "$WORK/post.lua" "${hargs[@]}" "$url" > /dev/null

  local t0 t1 line req secs errs
  t0=$(cpu_ticks "$pid")
  wrk -t1 -c"$CONNS" -d"${DURATION}s" --timeout 10s -s "$WORK/post.lua" "${hargs[@]}" "$url" > "$OUT/$name-r$round-wrk.txt"
  t1=$(cpu_ticks "$pid")
  line=$(grep '^RESULT ' "$OUT/$name-r$round-wrk.txt")
  read -r req secs errs < <(sed 's/^RESULT requests=\(.*\) seconds=\(.*\) errors=\(.*\)$/\1 \2 \3/' <<< "$line")
  [ "$errs" = 0 ] || echo "bench.sh: $name round $round: $errs errors under load" >&2
  local out="$name round=$round rps=$(jq -n "$req / $secs") cpu_us=$(jq -n "($t1 - $t0) / $HZ * 1e6 / $req")"

  local r p50 p99 ok
  for r in $RATES; do
    echo "POST $url" | "$VEGETA" attack -rate="$r/1s" -duration="${DURATION}s" -timeout=10s -body="$BODY" "${vargs[@]}" |
      "$VEGETA" report -type=json > "$OUT/$name-r$round-rate$r.json"
    read -r p50 p99 ok < <(jq -r '[.latencies["50th"] / 1e6, .latencies["99th"] / 1e6, .success] | @tsv' "$OUT/$name-r$round-rate$r.json")
    [ "$ok" = 1 ] || echo "bench.sh: $name round $round at $r req/s: success ratio $ok" >&2
    out="$out p50_$r=$p50 p99_$r=$p99"
  done
  echo "$out rss_mb=$(peak_rss_mb "$pid")" | tee -a "$OUT/results.txt"
}

declare -A ADDR=([bare]=$BARE_ADDR [gateway]=$GW_ADDR)
: > "$OUT/results.txt"
start mock "$WORK/bin/benchd" -mode mock -addr "$MOCK_ADDR"
MOCK=$PID PID=
ready "http://$MOCK_ADDR/health" "$MOCK" || { echo "bench.sh: the mock did not start" >&2; exit 1; }

echo "rounds=$ROUNDS duration=${DURATION}s conns=$CONNS rates=$RATES path=$GW_PATH cpus=$(nproc) $(go version | cut -d' ' -f3)"
for round in $(seq "$ROUNDS"); do
  order="bare gateway"; [ $((round % 2)) = 0 ] && order="gateway bare"
  for name in $order; do
    if [ "$name" = bare ]; then
      start bare "$WORK/bin/benchd" -mode proxy -addr "$BARE_ADDR" -upstream "http://$MOCK_ADDR"
      ready "http://$BARE_ADDR/health" "$PID" || { echo "bench.sh: the bare proxy did not start" >&2; exit 1; }
      measure bare "$round" "$PID" "${BARE_HEADERS[@]}"
    else
      dir=$WORK/round$round; mkdir -p "$dir"
      # shellcheck disable=SC2086 # GW_FLAGS is a list of flags
      start gateway-r$round bash -c "cd '$dir' && exec '$WORK/bin/gateway' -addr $GW_ADDR \
        -config '$WORK/gateway.json' -db '${GW_DB:-$dir/gateway.db}' ${GW_FLAGS:-} > /dev/null"
      ready "http://$GW_ADDR/healthz" "$PID" || { echo "bench.sh: the gateway did not start (see $OUT/gateway-r$round.log)" >&2; exit 1; }
      measure gateway "$round" "$PID" "${GW_HEADERS[@]}"
    fi
    stop
  done
done

# Means over the rounds, and the gateway's ratio to the bare proxy.
echo
echo "means of $ROUNDS round(s); raw outputs in $OUT"
awk -v rates="$RATES" -v conns="$CONNS" '
  { n[$1]++; for (i = 2; i <= NF; i++) { split($i, kv, "="); s[$1, kv[1]] += kv[2] } }
  function m(who, k) { return s[who, k] / n[who] }
  function row(label, k, unit, fmt) {
    b = m("bare", k); g = m("gateway", k)
    printf "| %-34s | %12s | %12s | %6.2f× |\n", label, sprintf(fmt, b) unit, sprintf(fmt, g) unit, b ? g / b : 0
  }
  END {
    printf "| %-34s | %12s | %12s | %7s |\n", "figure", "bare proxy", "gateway", "gw/bare"
    printf "|%s|%s|%s|%s|\n", "------------------------------------", "--------------", "--------------", "---------"
    row("throughput at " conns " connections", "rps", " r/s", "%.0f")
    row("CPU per request at saturation", "cpu_us", " us", "%.1f")
    k = split(rates, rs, " ")
    for (i = 1; i <= k; i++) {
      row("median latency at " rs[i] " req/s", "p50_" rs[i], " ms", "%.3f")
      row("p99 latency at " rs[i] " req/s", "p99_" rs[i], " ms", "%.3f")
    }
    row("peak RSS", "rss_mb", " MB", "%.1f")
  }' "$OUT/results.txt" | tee "$OUT/table.txt"
