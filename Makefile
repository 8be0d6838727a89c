# gw — every target sets up what it needs first; `make setup` is quick when nothing changed.
SHELL := bash
export PATH := $(CURDIR)/.tools/bin:$(PATH)
STAMP := node_modules/.gw-setup-stamp
CONFIG ?=

.PHONY: setup test-services kube-build kube-up kube-down run test unit e2e lint typecheck gen verify-gen bench bench-quick clean

setup: $(STAMP)

$(STAMP): .node-version package.json pnpm-lock.yaml pnpm-workspace.yaml $(wildcard patches/*.patch) $(wildcard packages/*/package.json) hack/bootstrap.sh
	@./hack/bootstrap.sh
	@pnpm install --frozen-lockfile --prefer-offline --reporter=append-only | grep -v '^Progress' || true
	@test -d node_modules/.pnpm || { echo "setup: pnpm install failed" >&2; exit 1; }
	@touch $(STAMP)

run: setup ## the gateway on the embedded default config (or CONFIG=path)
	./bin/gw $(if $(CONFIG),-f $(CONFIG))

test: setup lint typecheck verify-gen unit unit-net

unit: setup test-services kube-build
	node hack/test.ts

# The front door's suites again on gw's own HTTP/1.1 server (experimental, GW_HTTP1_SERVER=net), so
# that it keeps passing what node:http passes (about 80 s).
NET_SUITES = $(wildcard packages/proxy/src/server/*.test.ts packages/proxy/src/pipeline/*.test.ts) \
	e2e/standalone.test.ts e2e/large-body.test.ts e2e/downstream-limits.test.ts e2e/listeners.test.ts
unit-net: setup test-services kube-build ## the server, pipeline and front-door e2e suites on GW_HTTP1_SERVER=net
	GW_HTTP1_SERVER=net node hack/test.ts $(NET_SUITES)

e2e: setup test-services kube-build ## the end-to-end suites only (each starts its own API server, controller and proxies)
	node hack/test.ts $(wildcard e2e/*.test.ts)

test-services: ## real services and tools the tests use: Debian's redis-server, tmux and curl; envoyproxy/ratelimit and helm built once per go.sum
	@./hack/test-tools.sh
	@./hack/ratelimit/setup.sh >/dev/null
	@./hack/helm/build.sh >/dev/null

kube-build: ## a real kube-apiserver + embedded etcd for tests, built once per go.sum (first build 4-6 minutes)
	@./hack/kube-apiserver/build.sh >/dev/null
	@./hack/gateway-api/crd-dir.sh >/dev/null
	@./hack/inference-extension/crd-dir.sh >/dev/null

kube-up: setup ## the test kube-apiserver in the background, Gateway API CRDs and ours installed; prints KUBECONFIG=...
	@node hack/kube-up.ts

kube-down: setup ## stops what kube-up started
	@node hack/kube-up.ts --down

lint: setup
	pnpm exec biome check .

typecheck: setup
	pnpm exec tsc -p tsconfig.json

gen: setup
	node hack/gen.ts

verify-gen: setup
	node hack/gen.ts --check

bench: setup
	node bench/run.ts

bench-quick: setup
	BENCH_QUICK=1 node bench/run.ts

clean:
	rm -rf node_modules packages/*/node_modules packages/proxy/dist .tools
