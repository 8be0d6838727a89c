#!/usr/bin/env bash
# Prints the config/crd/bases directory of the Gateway API Inference Extension module pinned by go.mod
# beside this script (inference.networking.k8s.io_inferencepools.yaml there is the InferencePool v1
# CRD the e2e tests install). Read straight from the Go module cache, never copied into the repo, as
# hack/gateway-api/crd-dir.sh does for Gateway API. To move the pin: edit the require in go.mod, then
# run this script (it updates go.sum). No Go code imports the module: don't run `go mod tidy`.
set -euo pipefail
cd "$(dirname "$0")"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
command -v go >/dev/null || { echo "inference-extension: go is not installed" >&2; exit 1; }
go mod download sigs.k8s.io/gateway-api-inference-extension
dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api-inference-extension)
[ -d "$dir/config/crd/bases" ] || { echo "inference-extension: no config/crd/bases in $dir" >&2; exit 1; }
echo "$dir/config/crd/bases"
