#!/usr/bin/env bash
# Puts a pinned Node 24 and pnpm under .tools/ from the npm registry (no other downloads).
# Prints nothing when both are already in place, so `make setup` stays quick.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
node_version=$(cat "$root/.node-version")
pnpm_version=$(sed -n 's/.*"packageManager": *"pnpm@\([^"]*\)".*/\1/p' "$root/package.json")
mkdir -p "$tools/bin"

fetch() { # fetch <spec> <dest-dir>: unpack an npm tarball into dest-dir
  local spec=$1 dest=$2 tmp
  tmp=$(mktemp -d)
  echo "bootstrap: fetching $spec from the npm registry" >&2
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null 2>&1) || { echo "bootstrap: npm pack $spec failed" >&2; rm -rf "$tmp"; exit 1; }
  rm -rf "$dest.partial" && mkdir -p "$dest.partial"
  tar xzf "$tmp"/*.tgz -C "$dest.partial" --strip-components=1
  rm -rf "$dest" && mv "$dest.partial" "$dest" && rm -rf "$tmp"
}

# Node: a system node of the same major is used as is; otherwise the pinned binary from npm.
sys_node=$(command -v node || true)
want_major=${node_version%%.*}
if [ -n "$sys_node" ] && [ "$("$sys_node" -p 'process.versions.node.split(".")[0]')" -ge "$want_major" ] && [ "$sys_node" != "$tools/bin/node" ]; then
  ln -sfn "$sys_node" "$tools/bin/node"
elif [ ! -x "$tools/node-$node_version/bin/node" ]; then
  case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) echo "bootstrap: unsupported arch $(uname -m)" >&2; exit 1 ;; esac
  fetch "node-linux-$arch@$node_version" "$tools/node-$node_version"
  ln -sfn "$tools/node-$node_version/bin/node" "$tools/bin/node"
else
  ln -sfn "$tools/node-$node_version/bin/node" "$tools/bin/node"
fi

if [ ! -f "$tools/pnpm-$pnpm_version/bin/pnpm.cjs" ]; then
  fetch "pnpm@$pnpm_version" "$tools/pnpm-$pnpm_version"
fi
cat > "$tools/bin/pnpm" <<SH
#!/usr/bin/env bash
exec "$tools/bin/node" "$tools/pnpm-$pnpm_version/bin/pnpm.cjs" "\$@"
SH
chmod +x "$tools/bin/pnpm"
