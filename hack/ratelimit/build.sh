#!/usr/bin/env bash
# Builds envoyproxy/ratelimit (the global rate limit service the tests run) from its Go module,
# pinned by go.mod/go.sum beside this script, and prints the binary's path.
# The binary is cached (hack/lib/cached-go-binary.sh) keyed by those two files, so a second call is instant.
# The build only talks to the Go module proxy; GOTOOLCHAIN=local keeps it on the installed Go.
# To move the pin: GOTOOLCHAIN=local go get -tool github.com/envoyproxy/ratelimit/src/service_cmd@<version>
# && go mod tidy, here (the module publishes no release versions: its main branch comes as pseudo-versions).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cached-go-binary.sh
source "$here/../lib/cached-go-binary.sh"
if cached_go_binary ratelimit "$here/go.mod" "$here/go.sum"; then
  echo "ratelimit: building github.com/envoyproxy/ratelimit into $dir (first time only)" >&2
  start=$(date +%s)
  (cd "$here" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly \
    go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$bin.partial" github.com/envoyproxy/ratelimit/src/service_cmd)
  mv "$bin.partial" "$bin"
  echo "ratelimit: built in $(($(date +%s) - start))s" >&2
fi
echo "$bin"
