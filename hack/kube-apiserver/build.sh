#!/usr/bin/env bash
# Builds a test kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver plus an embedded etcd, main.go)
# from the Go modules pinned by go.mod/go.sum beside this script, and prints the binary's path.
# The binary is cached (hack/lib/cached-go-binary.sh) keyed by go.mod, go.sum and main.go, so a second call is instant.
# The build only talks to the Go module proxy; GOTOOLCHAIN=local keeps it on the installed Go.
# To move the pin: edit the k8s.io/kubernetes require in go.mod (or pass the version to gen-replaces.sh),
# run ./gen-replaces.sh, then GOTOOLCHAIN=local go mod tidy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cached-go-binary.sh
source "$here/../lib/cached-go-binary.sh"
if cached_go_binary kube-apiserver "$here/go.mod" "$here/go.sum" "$here/main.go"; then
  export GOTOOLCHAIN=local
  # The version /version reports comes from the pinned k8s.io/kubernetes (helm's kubeVersion checks it).
  version=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
  [[ $version =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || { echo "kube-apiserver: odd k8s.io/kubernetes version $version" >&2; exit 1; }
  pkg=k8s.io/component-base/version
  ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=${BASH_REMATCH[1]} -X $pkg.gitMinor=${BASH_REMATCH[2]}"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  echo "kube-apiserver: building k8s.io/kubernetes $version kube-apiserver + embedded etcd into $dir (first time only; 10-20 minutes)" >&2
  start=$(date +%s)
  (cd "$here" && CGO_ENABLED=0 GOFLAGS=-mod=readonly \
    go build -trimpath -buildvcs=false -ldflags="$ldflags" -o "$bin.partial" .)
  mv "$bin.partial" "$bin"
  echo "kube-apiserver: built in $(($(date +%s) - start))s" >&2
fi
echo "$bin"
