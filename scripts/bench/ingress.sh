#!/usr/bin/env bash
# End-to-end cost of the gateway's other ways in, as a ratio against the bare proxy of the same run:
# ../shared/bench/gateway.sh run on a copy of its directory whose gateway requests are, by MODE,
#
#   messages   POST /v1/messages, an Anthropic Messages body, translated to chat for the mock (openai)
#   responses  POST /v1/responses with store:false, an OpenAI Responses body, translated to chat
#              for an OpenAI-compatible (groq) virtual key on the mock
#   prompt     POST /v1/prompts/{id}/completions: a saved prompt rendered with two variables, then chat
#
#   MODE=messages scripts/bench/ingress.sh
#
# The bare proxy and the direct runs send the plain chat body as always, so rps/bare is the whole
# cost of the ingress (decode, translate, render) on top of the gateway's. For MODE=prompt the server
# is started by a wrapper that saves the prompt as soon as the port opens (the warm-up absorbs the
# few requests before). Knobs are gateway.sh's (ROUNDS, DUR, GW_FLAGS; default flags: the server's
# defaults, -db gateway.db with logs stored).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARED=${SHARED:-$(cd "$ROOT/../shared/bench" && pwd)}
export PROJECT=${PROJECT:-$ROOT}
MODE=${MODE:-messages}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp -r "$SHARED"/. "$work"/
cat > "$work/gateway-config.json" <<'JSON'
{
  "api_keys": [{"id": "key-bench", "key": "gw-bench-test-key-0001", "workspace_id": "ws-bench", "role": "admin"}],
  "virtual_keys": [{"slug": "mock", "provider": "openai", "api_key": "sk-mock",
                    "base_url": "http://127.0.0.1:18001/v1", "workspace_id": "ws-bench"},
                   {"slug": "compat", "provider": "groq", "api_key": "sk-mock",
                    "base_url": "http://127.0.0.1:18001/v1", "workspace_id": "ws-bench"}]
}
JSON
base=http://127.0.0.1:18095
case $MODE in
messages)
  url=$base/v1/messages
  echo '{"model":"gpt-4o-mini","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}' > "$work/req/ingress.json" ;;
responses)
  url=$base/v1/responses
  # Responses go unchanged to openai targets (the mock speaks only chat): an OpenAI-compatible kind
  # that is not openai is translated, as Anthropic-less agents' traffic to groq or together would be.
  sed -i 's/^x-gateway-virtual-key: mock$/x-gateway-virtual-key: compat/' "$work/req/h-gateway.txt"
  echo '{"model":"gpt-4o-mini","store":false,"input":"Hi"}' > "$work/req/ingress.json" ;;
prompt)
  url=$base/v1/prompts/bench-prompt/completions
  echo '{"variables":{"name":"Ada","question":"Hi"}}' > "$work/req/ingress.json"
  cat > "$work/prompt.json" <<'JSON'
{"name":"Bench Prompt","collection_id":"COLLECTION","virtual_key":"mock","model":"gpt-4o-mini","parameters":{},
 "string":"[{\"role\":\"system\",\"content\":\"You answer {{name}}.\"},{\"role\":\"user\",\"content\":\"{{question}}\"}]"}
JSON
  ;;
*) echo "MODE must be messages, responses or prompt" >&2; exit 2 ;;
esac
# gateway.sh fixes the gateway's URL and body; point them at this mode's.
sed -i "s|^export GW_URL=.*|export GW_URL=$url GW_HEADERS=\$HERE/req/h-gateway.txt GW_BODY=\$HERE/req/ingress.json|" "$work/gateway.sh"
if [ "$MODE" = prompt ]; then
  # The server runs under a wrapper that saves the prompt once the port answers, then waits on it.
  cat > "$work/serve.sh" <<SH
#!/usr/bin/env bash
"\$@" & pid=\$!
trap 'kill \$pid' TERM INT
until curl -s -o /dev/null $base/; do sleep 0.05; done
h=(-H 'x-gateway-api-key: gw-bench-test-key-0001' -H 'Content-Type: application/json')
c=\$(curl -s "\${h[@]}" --data '{"name":"Bench"}' $base/v1/collections)
c=\$(echo "\$c" | sed -n 's/.*"id":"\\([^"]*\\)".*/\\1/p')
sed "s/COLLECTION/\$c/" $work/prompt.json | curl -sf -o /dev/null "\${h[@]}" --data @- $base/v1/prompts ||
  echo "saving the prompt failed" >&2
wait \$pid
SH
  chmod +x "$work/serve.sh"
  sed -i "s|exec \$BIN/gw-server|exec $work/serve.sh \$BIN/gw-server|" "$work/gateway.sh"
  grep -q serve.sh "$work/gateway.sh" || { echo "could not wrap the server" >&2; exit 1; }
fi
grep -q "GW_URL=$url" "$work/gateway.sh" || { echo "could not point gateway.sh at $url" >&2; exit 1; }
"$work/gateway.sh"
