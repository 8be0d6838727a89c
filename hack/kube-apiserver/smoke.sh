#!/usr/bin/env bash
# Smoke test: builds (or reuses) the test kube-apiserver, starts it on loopback with the flags the
# TS harness will use (static admin token, self-signed serving cert, RBAC, service-account keys),
# runs `kubectl version` and `kubectl get ns` against it, and stops it again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$("$here/build.sh")
work=$(mktemp -d /tmp/gw-kube-smoke.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port); etcd_client=$(free_port); etcd_peer=$(free_port)
token=$(openssl rand -hex 24)
echo "$token,gw-admin,gw-admin,system:masters" > "$work/tokens.csv"
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
mkdir -p "$work/certs" "$work/etcd"
start=$(date +%s.%N)
"$bin" \
  --embedded-etcd-dir="$work/etcd" \
  --embedded-etcd-client-url="http://127.0.0.1:$etcd_client" \
  --embedded-etcd-peer-url="http://127.0.0.1:$etcd_peer" \
  --etcd-servers="http://127.0.0.1:$etcd_client" \
  --bind-address=127.0.0.1 --secure-port="$port" \
  --cert-dir="$work/certs" \
  --authorization-mode=RBAC \
  --service-cluster-ip-range=10.0.0.0/24 \
  --disable-admission-plugins=ServiceAccount \
  --allow-privileged \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$work/sa.pub" \
  --service-account-signing-key-file="$work/sa.key" \
  --token-auth-file="$work/tokens.csv" \
  >"$work/apiserver.log" 2>&1 &
pid=$!
k=(kubectl --server "https://127.0.0.1:$port" --token "$token" --insecure-skip-tls-verify=true)
for _ in $(seq 1 600); do
  if "${k[@]}" get --raw /readyz >/dev/null 2>&1; then break; fi
  kill -0 "$pid" 2>/dev/null || { echo "smoke: kube-apiserver exited:" >&2; tail -30 "$work/apiserver.log" >&2; exit 1; }
  sleep 0.1
done
echo "smoke: ready in $(python3 -c "print(round($(date +%s.%N) - $start, 1))")s on port $port" >&2
"${k[@]}" version
"${k[@]}" get ns
"${k[@]}" auth can-i '*' '*'
