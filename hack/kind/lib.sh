# Sourced by hack/kind-*.sh: which kind cluster, where its kubeconfig lives, and small helpers.
# GW_KIND_CLUSTER names the cluster (default gw); its kubeconfig is written to GW_KIND_KUBECONFIG
# (default ~/.cache/gw/kind-<cluster>.kubeconfig) and exported as KUBECONFIG, so the scripts never
# touch ~/.kube/config.
# shellcheck shell=bash

# shellcheck disable=SC2034 # root and cluster are for the scripts that source this file
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=${GW_KIND_CLUSTER:-gw}
kubeconfig=${GW_KIND_KUBECONFIG:-${XDG_CACHE_HOME:-$HOME/.cache}/gw/kind-$cluster.kubeconfig}
export KUBECONFIG=$kubeconfig

say() { echo "$(basename "$0"): $*" >&2; }
die() {
  say "$*"
  exit 1
}

# need CMD...: every command is on PATH, else a message saying what is missing.
need() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null || die "$c is not installed (needed: $*); this script runs only where Docker and kind are"
  done
}

cluster_exists() {
  kind get clusters 2>/dev/null | grep -x -- "$cluster" >/dev/null
}

# use_cluster: the cluster must exist; (re)writes its kubeconfig.
use_cluster() {
  cluster_exists || die "no kind cluster named $cluster: run hack/kind-up.sh first"
  mkdir -p "$(dirname "$kubeconfig")"
  kind get kubeconfig --name "$cluster" >"$kubeconfig"
}

# controller_logs: the controller's last log lines, for a failure message (the chart's Deployment gw).
controller_logs() {
  say "gw-controller log (last 50 lines):"
  kubectl -n gw-system logs deployment/gw --tail=50 >&2 || true
}
