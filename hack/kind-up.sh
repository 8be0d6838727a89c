#!/usr/bin/env bash
# Usage: hack/kind-up.sh
#
# A kind cluster running gw, for hack/kind-e2e.sh and hack/kind-conformance.sh (and the kind-e2e
# GitHub workflow). Needs docker, kind, kubectl and go, so it cannot run on a machine without Docker.
#   1. creates kind cluster $GW_KIND_CLUSTER (default gw), or reuses it;
#   2. builds gw-controller:dev and gw-proxy:dev from hack/docker/Dockerfile and loads them into the nodes;
#   3. installs the Gateway API CRDs (experimental channel of the version hack/gateway-api/go.mod pins,
#      read from the Go module cache, as `make kube-up` does) and ours from crds/;
#   4. deploys hack/kind/controller.yaml and waits until the controller is ready and GatewayClass gw
#      is Accepted.
# The controller does not run proxies for Gateways yet (no deployer): hack/kind/proxy-for-gateway.sh
# does that for one Gateway.
# GW_KIND_NODE_IMAGE picks the node image (default: the one of the kind release).
set -euo pipefail
# shellcheck source=hack/kind/lib.sh
source "$(dirname "$0")/kind/lib.sh"
need docker kind kubectl go

if cluster_exists; then
  say "reusing kind cluster $cluster"
else
  say "creating kind cluster $cluster"
  create=(kind create cluster --name "$cluster" --wait 180s)
  [ -z "${GW_KIND_NODE_IMAGE:-}" ] || create+=(--image "$GW_KIND_NODE_IMAGE")
  "${create[@]}"
fi
use_cluster
say "kubeconfig: $kubeconfig"

node_version=$(cat "$root/.node-version")
pnpm_version=$(sed -n 's/.*"packageManager": *"pnpm@\([^"]*\)".*/\1/p' "$root/package.json")
[ -n "$pnpm_version" ] || die "no pnpm version in package.json's packageManager"
for target in controller proxy; do
  say "building gw-$target:dev (node $node_version, pnpm $pnpm_version)"
  DOCKER_BUILDKIT=1 docker build --file "$root/hack/docker/Dockerfile" --target "$target" \
    --build-arg "NODE_VERSION=$node_version" --build-arg "PNPM_VERSION=$pnpm_version" \
    --tag "gw-$target:dev" "$root"
done
say "loading the images into the nodes"
kind load docker-image --name "$cluster" gw-controller:dev gw-proxy:dev

say "installing the Gateway API CRDs and crds/"
crd_dir=$("$root/hack/gateway-api/crd-dir.sh")
files=()
for f in "$crd_dir"/experimental/*.yaml; do
  [ "$(basename "$f")" = kustomization.yaml ] || files+=(--filename "$f")
done
kubectl apply --server-side --force-conflicts "${files[@]}" >/dev/null
kubectl apply --server-side --force-conflicts --filename "$root/crds/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd --all >/dev/null

say "deploying gw-controller"
existed=false
kubectl -n gw-system get deployment gw-controller >/dev/null 2>&1 && existed=true
kubectl apply --filename "$root/hack/kind/controller.yaml"
# The image tag stays :dev, so a rebuilt image reaches a running controller only by a restart.
if $existed; then
  kubectl -n gw-system rollout restart deployment/gw-controller
fi
kubectl -n gw-system rollout status deployment/gw-controller --timeout=180s || {
  controller_logs
  die "gw-controller did not become ready"
}

say "waiting for GatewayClass gw to be Accepted"
for _ in $(seq 60); do
  accepted=$(kubectl get gatewayclass gw -o 'jsonpath={.status.conditions[?(@.type=="Accepted")].status}' 2>/dev/null || true)
  [ "$accepted" = True ] && break
  sleep 1
done
[ "${accepted:-}" = True ] || {
  controller_logs
  die "GatewayClass gw is not Accepted"
}
say "ready: gw-controller runs in kind cluster $cluster; export KUBECONFIG=$kubeconfig"
