#!/usr/bin/env bash
# Runs every check of every module: gofmt, go vet, staticcheck, go test -race.
# Each module is tested on its own go.mod (GOWORK=off), as its users build it.
set -euo pipefail
cd "$(dirname "$0")/.."

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
    export GOWORK=off
    go vet ./...
    "${staticcheck[@]}" ./...
    go test -race -count=1 ./...
  )
done
echo "all checks passed"
