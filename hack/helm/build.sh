#!/usr/bin/env bash
# Builds helm (helm.sh/helm/v3/cmd/helm) from its Go module, pinned by go.mod/go.sum beside this script,
# and prints the binary's path. The chart tests lint, render and install charts/ with it.
# The binary is cached (hack/lib/cached-go-binary.sh) keyed by go.mod, go.sum and this script, so a second
# call is instant. The build only talks to the Go module proxy; GOTOOLCHAIN=local keeps it on the installed Go.
# To move the pin: GOTOOLCHAIN=local go get -tool helm.sh/helm/v3/cmd/helm@<version> && go mod tidy, here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cached-go-binary.sh
source "$here/../lib/cached-go-binary.sh"
if cached_go_binary helm "$here/go.mod" "$here/go.sum" "$here/build.sh"; then
  export GOTOOLCHAIN=local
  # The ldflags helm's own Makefile sets: `helm version` reports the release, and `helm template`/`helm lint`
  # assume the Kubernetes minor of the client-go helm is built with (not 1.20) when no cluster is asked.
  version=$(cd "$here" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
  kube=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/client-go)
  [[ $kube =~ ^v0\.([0-9]+)\.[0-9]+$ ]] || { echo "helm: odd k8s.io/client-go version $kube" >&2; exit 1; }
  minor=${BASH_REMATCH[1]}
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  echo "helm: building helm.sh/helm/v3 $version into $dir (first time only; a few minutes)" >&2
  start=$(date +%s)
  if ! (cd "$here" && CGO_ENABLED=0 GOFLAGS=-mod=readonly \
    go build -trimpath -buildvcs=false -ldflags="$ldflags" -o "$bin.partial" helm.sh/helm/v3/cmd/helm); then
    echo "helm: building helm.sh/helm/v3 $version failed (see the go output above; it needs the Go module proxy)" >&2
    exit 1
  fi
  mv "$bin.partial" "$bin"
  echo "helm: built in $(($(date +%s) - start))s" >&2
fi
echo "$bin"
