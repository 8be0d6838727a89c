#!/usr/bin/env bash
# Usage: hack/kind/proxy-for-gateway.sh [--print] [--no-wait] <namespace> <gateway> <port>...
#
# Runs a gw proxy for one Gateway, as the deployer will once the controller has one (it does not yet,
# so on kind a test or a user creates the proxy with this script):
#   - ServiceAccount <gateway>: the controller lets a token of system:serviceaccount:<ns>:<gateway> read
#     Gateway <ns>/<gateway> and nothing else;
#   - Deployment <gateway> of gw-proxy:dev taking its config from gw-controller.gw-system:9978, with a
#     projected token of that ServiceAccount (audience gw.dev/xds, as the controller's
#     --xds-token-audience) at /var/run/secrets/gw/token;
#   - Service <gateway> with one port per listener <port>.
# Then waits until the proxy is ready (it is ready once the controller has sent it a config), unless
# --no-wait. --print writes the manifests to stdout instead of applying them.
set -euo pipefail

usage() {
  echo "usage: $0 [--print] [--no-wait] <namespace> <gateway> <port>..." >&2
  exit 2
}

print=false
wait=true
while [ $# -gt 0 ]; do
  case $1 in
    --print) print=true ;;
    --no-wait) wait=false ;;
    -h | --help) usage ;;
    -*)
      echo "proxy-for-gateway: unknown flag $1" >&2
      usage
      ;;
    *) break ;;
  esac
  shift
done
[ $# -ge 3 ] || usage
ns=$1 gateway=$2
shift 2
dns1123='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
[[ $ns =~ $dns1123 ]] || { echo "proxy-for-gateway: invalid namespace '$ns'" >&2; exit 2; }
[[ $gateway =~ $dns1123 ]] || { echo "proxy-for-gateway: invalid Gateway name '$gateway'" >&2; exit 2; }
for port in "$@"; do
  if ! [[ $port =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
    echo "proxy-for-gateway: invalid port '$port'" >&2
    exit 2
  fi
  case $port in 15000 | 15020 | 15021)
    echo "proxy-for-gateway: port $port is the proxy's own (admin, metrics, readiness)" >&2
    exit 2
    ;;
  esac
done

container_ports="" service_ports=""
for port in "$@"; do
  container_ports+="
            - { name: l-$port, containerPort: $port }"
  service_ports+="
    - { name: l-$port, port: $port, targetPort: $port }"
done

manifests() {
  cat <<YAML
apiVersion: v1
kind: ServiceAccount
metadata:
  name: $gateway
  namespace: $ns
  labels: { gw.dev/gateway: $gateway }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $gateway
  namespace: $ns
  labels: { gw.dev/gateway: $gateway }
spec:
  replicas: 1
  selector:
    matchLabels: { gw.dev/gateway: $gateway }
  template:
    metadata:
      labels: { gw.dev/gateway: $gateway }
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: "15020"
    spec:
      serviceAccountName: $gateway
      # the proxy does not call the API server; its only credential is the projected xDS token below
      automountServiceAccountToken: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 1000
        runAsGroup: 1000
        seccompProfile: { type: RuntimeDefault }
        # listeners on ports below 1024 (80, 443) without root or capabilities; a safe sysctl
        sysctls:
          - { name: net.ipv4.ip_unprivileged_port_start, value: "0" }
      containers:
        - name: proxy
          image: gw-proxy:dev
          # loaded into the nodes by \`kind load docker-image\`; never pulled
          imagePullPolicy: Never
          args:
            - --xds-address=http://gw-controller.gw-system:9978
            - --gateway=$ns/$gateway
            - --xds-token-file=/var/run/secrets/gw/token
            # one worker per core of the node is too many for a CI-sized kind cluster
            - --workers=2
          ports:$container_ports
            - { name: metrics, containerPort: 15020 }
            - { name: readiness, containerPort: 15021 }
          readinessProbe:
            httpGet: { path: /healthz/ready, port: readiness }
            periodSeconds: 2
          resources:
            requests: { cpu: 100m, memory: 128Mi }
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: { drop: [ALL] }
          volumeMounts:
            - { name: xds-token, mountPath: /var/run/secrets/gw, readOnly: true }
      volumes:
        - name: xds-token
          projected:
            sources:
              - serviceAccountToken: { path: token, audience: gw.dev/xds, expirationSeconds: 3600 }
---
apiVersion: v1
kind: Service
metadata:
  name: $gateway
  namespace: $ns
  labels: { gw.dev/gateway: $gateway }
spec:
  type: ClusterIP
  selector: { gw.dev/gateway: $gateway }
  ports:$service_ports
YAML
}

if $print; then
  manifests
  exit 0
fi
command -v kubectl >/dev/null || { echo "proxy-for-gateway: kubectl is not installed" >&2; exit 1; }
echo "proxy-for-gateway: applying the proxy for Gateway $ns/$gateway (ports $*)" >&2
manifests | kubectl apply -f - >&2
if $wait; then
  echo "proxy-for-gateway: waiting for the proxy to get its config from the controller and be ready" >&2
  kubectl -n "$ns" rollout status "deployment/$gateway" --timeout=120s >&2 || {
    echo "proxy-for-gateway: the proxy for $ns/$gateway is not ready; its log:" >&2
    kubectl -n "$ns" logs "deployment/$gateway" --tail=50 >&2 || true
    exit 1
  }
fi
