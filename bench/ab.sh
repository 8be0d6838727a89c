#!/usr/bin/env bash
# A/B of the plain request path: CPU per request of the proxy bundle of BASE (default: the commit
# before HEAD) against HEAD's, run alternately so a host whose speed drifts affects both alike. Each
# run starts one gw worker pinned to core 0 in front of nginx (core 1), drives it with wrk (core 1,
# 64 connections, 3 s) and reads the process's CPU time from /proc; logs off, then the access log.
#
#   bench/ab.sh [BASE] [ROUNDS]      e.g. bench/ab.sh fd82606 4
#
# It checks BASE out to bundle it (with the installed node_modules: a BASE whose dependencies differ
# needs them installed), so the working tree must be clean; HEAD is checked out again before it
# measures. Needs nginx, wrk and taskset (bench/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD~1}
rounds=${2:-4}
export PATH="$PWD/.tools/bin:$PATH"
if [ -n "$(git status --porcelain)" ]; then
  echo "bench/ab.sh: the working tree has changes; commit or stash them first" >&2
  exit 1
fi
head=$(git rev-parse --abbrev-ref HEAD)
[ "$head" = HEAD ] && head=$(git rev-parse HEAD)
work=$(mktemp -d)
# the bundles live beside packages/proxy/dist, where their imports resolve
a=packages/proxy/dist-ab-base
b=packages/proxy/dist-ab-head
cleanup() {
  if [ -f "$work/nginx.pid" ]; then kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; fi
  rm -rf "$a" "$b" "$work"
}
trap cleanup EXIT

echo "bundling $base and $head" >&2
git checkout -q "$base"
node hack/bundle.ts >/dev/null
rm -rf "$a" && cp -r packages/proxy/dist "$a"
git checkout -q "$head"
node hack/bundle.ts >/dev/null
rm -rf "$b" && cp -r packages/proxy/dist "$b"

cat >"$work/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:18180; location / { return 200 'hello\n'; } }
}
EOF
for log in off on; do
  level=$([ "$log" = on ] && echo info || echo "info,request=warn")
  cat >"$work/gw-$log.yaml" <<EOF
config:
  adminAddr: 127.0.0.1:18101
  statsAddr: 127.0.0.1:18102
  readinessAddr: 127.0.0.1:18103
  workerThreads: 1
  logging: { level: "$level" }
binds:
- port: 18181
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: 127.0.0.1:18180
EOF
done
(taskset -c 1 nginx -c "$work/nginx.conf" >/dev/null 2>&1 &)
sleep 0.5

# node's flags as bin/gw passes them (its exec line), so each bundle runs as gw runs
read -r -a node_flags <<<"$(sed -n '/^exec "\$node"/,/"\$entry"/p' bin/gw | tr '\\\n' '  ' | sed 's/.*exec "\$node"//; s/"\$entry".*//')"
[ "${#node_flags[@]}" -gt 0 ] || { echo "bench/ab.sh: no node flags found in bin/gw's exec line" >&2; exit 1; }

# CPU µs per request of one bundle with one config
measure() {
  taskset -c 0 node "${node_flags[@]}" "$1/gw.js" -f "$2" >"$work/gw.log" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do
    curl -s -o /dev/null http://127.0.0.1:18181/ && break
    sleep 0.1
  done
  local t0 t1 n
  t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
  n=$(taskset -c 1 wrk -t1 -c64 -d3s http://127.0.0.1:18181/ | awk '/requests in/{print $1}')
  t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo $(((t1 - t0) * 10000 / n))
}

printf '%-6s %-5s %12s %12s\n' round build 'logs off' 'access log'
for r in $(seq "$rounds"); do
  for side in base head; do
    dir=$a
    [ "$side" = head ] && dir=$b
    printf '%-6s %-5s %9s µs %9s µs\n' "$r" "$side" "$(measure "$dir" "$work/gw-off.yaml")" \
      "$(measure "$dir" "$work/gw-on.yaml")"
  done
done
