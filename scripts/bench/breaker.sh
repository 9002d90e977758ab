#!/usr/bin/env bash
# End-to-end cost of a dead primary behind a two-target fallback, with and without circuit breakers,
# as a ratio against the bare proxy: ../shared/bench/gateway.sh run on a copy of its directory whose
# config adds a virtual key "down" (a loopback port nothing listens on: every attempt is refused) and
# whose requests carry an inline fallback config, down first, then the mock.
#
#   scripts/bench/breaker.sh                                   # after: fallback with cb_config (this branch)
#   BREAKER=0 PROJECT=/work/main scripts/bench/breaker.sh      # before: the same fallback without it (main)
#
# Run both on a quiet machine and compare their rps/bare and cpu_us/req columns: with the breaker the
# dead primary is tried 3 times, then skipped, so the run should match a plain virtual-key run.
# Knobs are gateway.sh's (ROUNDS, DUR, GW_FLAGS; default GW_FLAGS here: -db :memory: -request-log off).
# Port 18002 must be free.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARED=${SHARED:-$(cd "$ROOT/../shared/bench" && pwd)}
export PROJECT=${PROJECT:-$ROOT}
if ss -Hltn "sport = :18002" | grep -q .; then echo "port 18002 is busy: the dead primary must refuse connections" >&2; exit 1; fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp -r "$SHARED"/. "$work"/
cat > "$work/gateway-config.json" <<'JSON'
{
  "api_keys": [{"id": "key-bench", "key": "gw-bench-test-key-0001", "workspace_id": "ws-bench", "role": "member"}],
  "virtual_keys": [{"slug": "mock", "provider": "openai", "api_key": "sk-mock",
                    "base_url": "http://127.0.0.1:18001/v1", "workspace_id": "ws-bench"},
                   {"slug": "down", "provider": "openai", "api_key": "sk-down",
                    "base_url": "http://127.0.0.1:18002/v1", "workspace_id": "ws-bench"}]
}
JSON
cb=',"cb_config":{"failure_threshold":3,"cooldown_interval":60000}'
[ "${BREAKER:-1}" = 0 ] && cb=
cat > "$work/req/h-gateway.txt" <<HDR
# The gateway: a fallback from the dead "down" to "mock"$( [ -n "$cb" ] && echo ", with a circuit breaker" ).
Content-Type: application/json
x-gateway-api-key: gw-bench-test-key-0001
x-gateway-config: {"strategy":{"mode":"fallback"$cb},"targets":[{"virtual_key":"down"},{"virtual_key":"mock"}]}
HDR
export GW_FLAGS=${GW_FLAGS:-"-db :memory: -request-log off"}
"$work/gateway.sh"
