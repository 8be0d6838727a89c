#!/usr/bin/env bash
# Usage: hack/kind-up.sh
#
# A kind cluster running gw, for hack/kind-e2e.sh and hack/kind-conformance.sh (and the kind-e2e
# GitHub workflow). Needs docker, kind, kubectl and go, so it cannot run on a machine without Docker.
#   1. creates kind cluster $GW_KIND_CLUSTER (default gw), or reuses it;
#   2. builds gw-controller:dev and gw-proxy:dev from hack/docker/Dockerfile and loads them into the nodes;
#   3. installs the Gateway API CRDs (experimental channel of the version hack/gateway-api/go.mod pins,
#      read from the Go module cache, as `make kube-up` does);
#   4. installs the charts as a user would (README "Install on Kubernetes"): `helm upgrade --install`
#      of charts/gw-crds, then of charts/gw as release gw in gw-system with hack/kind/values.yaml (the
#      images above), and waits until the controller is ready and GatewayClass gw is Accepted.
# The controller provisions each Gateway's proxy (ServiceAccount, Service, Deployment of gw-proxy:dev).
# helm is the one the tests use, built from its Go module by hack/helm/build.sh.
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

say "installing the Gateway API CRDs"
crd_dir=$("$root/hack/gateway-api/crd-dir.sh")
files=()
for f in "$crd_dir"/experimental/*.yaml; do
  [ "$(basename "$f")" = kustomization.yaml ] || files+=(--filename "$f")
done
kubectl apply --server-side --force-conflicts "${files[@]}" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd --all >/dev/null

helm=$("$root/hack/helm/build.sh")
say "helm install gw-crds and gw ($("$helm" version --short))"
existed=false
kubectl -n gw-system get deployment gw >/dev/null 2>&1 && existed=true
"$helm" upgrade --install gw-crds "$root/charts/gw-crds"
kubectl wait --for=condition=Established --timeout=60s crd -l app.kubernetes.io/instance=gw-crds >/dev/null
"$helm" upgrade --install gw "$root/charts/gw" --namespace gw-system --create-namespace \
  --values "$root/hack/kind/values.yaml"
# The image tag stays :dev, so a rebuilt image reaches a running controller only by a restart.
if $existed; then
  kubectl -n gw-system rollout restart deployment/gw
fi
kubectl -n gw-system rollout status deployment/gw --timeout=180s || {
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
say "ready: gw-controller (release gw) runs in kind cluster $cluster; export KUBECONFIG=$kubeconfig"
