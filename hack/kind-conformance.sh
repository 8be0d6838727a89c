#!/usr/bin/env bash
# Usage: hack/kind-conformance.sh [suite flag...]
#
# Runs the Gateway API conformance suite (hack/conformance: profile GATEWAY-HTTP with the features gw
# claims, GatewayClass gw) against the kind cluster hack/kind-up.sh made. Flags are passed to the
# suite, e.g. -run-test=HTTPRouteSimpleSameNamespace or -debug. The report and the full log go to
# $GW_CONFORMANCE_OUT (default .cache/kind/conformance/): report.yaml, conformance.log.
#
# The suite sends traffic to the address in each Gateway's status.addresses: the cluster IP of the
# Service the controller provisions (hack/kind/values.yaml: proxy.serviceType ClusterIP), which the
# suite, running outside the cluster, may not reach; the report says which tests fail and why.
set -euo pipefail
# shellcheck source=hack/kind/lib.sh
source "$(dirname "$0")/kind/lib.sh"
need kind kubectl go
use_cluster
kubectl -n gw-system rollout status deployment/gw --timeout=60s >/dev/null ||
  die "gw-controller is not ready: run hack/kind-up.sh"

out=${GW_CONFORMANCE_OUT:-$root/.cache/kind/conformance}
mkdir -p "$out"
# What the report says about the implementation: this checkout.
if [ -n "${GITHUB_REPOSITORY:-}" ]; then
  url="${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_REPOSITORY"
else
  url=$(git -C "$root" remote get-url origin 2>/dev/null || echo "(no git remote)")
fi
version=$(git -C "$root" describe --always --dirty 2>/dev/null || echo dev)
contact=${GITHUB_REPOSITORY_OWNER:+@$GITHUB_REPOSITORY_OWNER}

say "running the Gateway API conformance suite against kind cluster $cluster (log: $out/conformance.log)"
cd "$root/hack/conformance"
status=0
GOTOOLCHAIN=local GOFLAGS=-mod=mod \
  GW_CONFORMANCE_REPORT="$out/report.yaml" GW_CONFORMANCE_URL="$url" GW_CONFORMANCE_VERSION="$version" \
  GW_CONFORMANCE_CONTACT="${contact:-gw maintainers}" \
  go test -count=1 -timeout=90m -v -run '^TestGatewayAPIConformance$' . -args "$@" 2>&1 |
  tee "$out/conformance.log" || status=$?
if [ -f "$out/report.yaml" ]; then
  say "report: $out/report.yaml"
else
  say "no report was written (the suite stopped before its end); see $out/conformance.log"
fi
exit "$status"
