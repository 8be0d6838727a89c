#!/usr/bin/env bash
# Prints the config/crd directory of the Gateway API module pinned by go.mod beside this script
# (its standard/ and experimental/ channel directories hold the CRDs the test API server installs).
# The CRDs are read straight from the Go module cache, never copied into the repo: `go mod download`
# fetches the module from the Go module proxy the first time and is instant afterwards.
# To move the pin: edit the require in go.mod, then run this script (it updates go.sum).
# No Go code here imports the module, so `go mod tidy` would drop the require: don't run it.
set -euo pipefail
cd "$(dirname "$0")"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
command -v go >/dev/null || { echo "gateway-api: go is not installed" >&2; exit 1; }
go mod download sigs.k8s.io/gateway-api
dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)
[ -d "$dir/config/crd" ] || { echo "gateway-api: no config/crd in $dir" >&2; exit 1; }
echo "$dir/config/crd"
