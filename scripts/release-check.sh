#!/usr/bin/env bash
# Usage: scripts/release-check.sh vX.Y.Z
#
# Checks, once vX.Y.Z is tagged and published, that every sub-module builds
# as its users build it: on its own go.mod and go.sum (GOWORK=off), with no
# replace directive, requiring the root module (and its sibling
# sub-modules) at vX.Y.Z as published on the module proxy, not this
# working tree. See RELEASING.md.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:?usage: $0 vX.Y.Z}
export GOWORK=off

for mod in $(find . -mindepth 2 -name go.mod -not -path '*/testdata/*' -exec dirname {} \; | sort); do
  echo "== $mod"
  (
    cd "$mod"
    if go mod edit -json | grep -q '"Replace": \['; then
      echo "$mod/go.mod has a replace directive, which its users would not see"; exit 1
    fi
    for dep in $(go list -m -f '{{if not .Main}}{{.Path}}@{{.Version}}{{end}}' all | grep '^github.com/modelgateway/gateway[@/]'); do
      if [ "${dep#*@}" != "$version" ]; then
        echo "$mod requires $dep, not $version"; exit 1
      fi
    done
    go mod verify
    go build ./...
    go vet ./...
    go test -count=1 ./...
  )
done
echo "every sub-module builds against $version"
