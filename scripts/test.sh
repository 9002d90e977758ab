#!/usr/bin/env bash
# Runs every check of every module: gofmt, go build, go vet, staticcheck,
# go test -race. Every module is checked inside the workspace (go.work), so
# the sub-modules build against this working tree's root module rather than
# a published version; RELEASING.md says how a release is checked without
# the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# The workspace, whatever GOWORK the environment or `go env -w` sets.
export GOWORK="$PWD/go.work"

staticcheck=(go run honnef.co/go/tools/cmd/staticcheck@v0.8.2)
if command -v staticcheck >/dev/null 2>&1; then
  staticcheck=(staticcheck)
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

for mod in $(find . -name go.mod -not -path '*/testdata/*' -exec dirname {} \; | sort); do
  echo "== $mod"
  (
    cd "$mod"
    go build ./...
    go vet ./...
    "${staticcheck[@]}" ./...
    go test -race -count=1 -timeout 30m ./...
  )
done
# sqlstore's tests above ran on the native SQLite engine (cgo); the
# pure-Go one, which CGO_ENABLED=0 builds get, passes the same.
echo "== ./sqlstore -tags sqlite_wasm"
(
  cd sqlstore
  go vet -tags sqlite_wasm ./...
  "${staticcheck[@]}" -tags sqlite_wasm ./...
  go test -race -count=1 -timeout 30m -tags sqlite_wasm ./...
)
echo "all checks passed"
