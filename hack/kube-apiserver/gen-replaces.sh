#!/usr/bin/env bash
# Regenerates the `replace` lines of go.mod beside this script from the k8s.io/kubernetes go.mod.
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/apiserver, ...) at v0.0.0 and
# replaces them with ./staging paths, which do not exist outside its repository. A module that depends
# on k8s.io/kubernetes vX.Y.Z must therefore replace EVERY one of them with the published v0.Y.Z.
# The list changes between minors, so it is read from the k8s.io/kubernetes go.mod, never hand-written.
#
# Usage: ./gen-replaces.sh [vX.Y.Z]   (default: the k8s.io/kubernetes version go.mod requires)
# Then: GOTOOLCHAIN=local go mod tidy
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
version=${1:-$(go mod edit -json | python3 -c '
import json, sys
m = json.load(sys.stdin)
print(next(r["Version"] for r in m.get("Require") or [] if r["Path"] == "k8s.io/kubernetes"))')}
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "gen-replaces: not a release version: $version" >&2; exit 1; }
staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
gomod=$(go mod download -json "k8s.io/kubernetes@$version" | python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])')
# Every module k8s.io/kubernetes replaces with a path under ./staging/.
mapfile -t staging < <(go mod edit -json "$gomod" | python3 -c '
import json, sys
m = json.load(sys.stdin)
for r in m.get("Replace") or []:
    if r["New"]["Path"].startswith("./staging/"):
        print(r["Old"]["Path"])')
[ "${#staging[@]}" -gt 0 ] || { echo "gen-replaces: no staging replaces found in $gomod" >&2; exit 1; }
# Drop every replace we had, then write the fresh list.
args=()
while read -r old; do [ -n "$old" ] && args+=("-dropreplace=$old"); done < <(go mod edit -json | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    print(r["Old"]["Path"])')
for m in "${staging[@]}"; do args+=("-replace=$m=$m@$staging_version"); done
go mod edit "-require=k8s.io/kubernetes@$version" "${args[@]}"
echo "gen-replaces: k8s.io/kubernetes $version: ${#staging[@]} staging modules replaced with $staging_version" >&2
