#!/usr/bin/env bash
# Usage: hack/kind-e2e.sh [test file...]
#
# Runs the end-to-end suites that have a kind variant against the cluster hack/kind-up.sh made
# (default: e2e/*.kind.test.ts). Each such suite runs as its local twin does against `make e2e`'s
# API server harness, except that the controller is the one the chart deployed in the cluster, the
# proxy is the Deployment its deployer provisions for the Gateway, traffic goes through
# `kubectl port-forward`, and the upstream is an echo Deployment in the cluster. Without GW_E2E_KUBECONFIG these files skip.
set -euo pipefail
# shellcheck source=hack/kind/lib.sh
source "$(dirname "$0")/kind/lib.sh"
need kind kubectl
use_cluster
kubectl -n gw-system rollout status deployment/gw --timeout=60s >/dev/null ||
  die "gw-controller is not ready: run hack/kind-up.sh"

cd "$root"
make -s setup
if [ $# -gt 0 ]; then
  files=("$@")
else
  files=(e2e/*.kind.test.ts)
fi
say "running ${files[*]} against kind cluster $cluster"
GW_E2E_KUBECONFIG=$kubeconfig GW_E2E_CLUSTER=kind GW_TEST=1 \
  "$root/.tools/bin/node" --disable-warning=ExperimentalWarning --test --test-concurrency=1 \
  --test-timeout=300000 --test-force-exit "${files[@]}"
