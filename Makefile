# gw — every target sets up what it needs first; `make setup` is quick when nothing changed.
SHELL := bash
export PATH := $(CURDIR)/.tools/bin:$(PATH)
STAMP := node_modules/.gw-setup-stamp
CONFIG ?=

.PHONY: setup test-services kube-build run test unit lint typecheck gen verify-gen bench bench-quick clean

setup: $(STAMP)

$(STAMP): .node-version package.json pnpm-lock.yaml pnpm-workspace.yaml $(wildcard packages/*/package.json) hack/bootstrap.sh
	@./hack/bootstrap.sh
	@pnpm install --frozen-lockfile --prefer-offline --reporter=append-only | grep -v '^Progress' || true
	@test -d node_modules/.pnpm || { echo "setup: pnpm install failed" >&2; exit 1; }
	@touch $(STAMP)

run: setup ## the gateway on the embedded default config (or CONFIG=path)
	./bin/gw $(if $(CONFIG),-f $(CONFIG))

test: setup lint typecheck verify-gen unit

unit: setup test-services
	node hack/test.ts

test-services: ## real services the tests start: Debian's redis-server, envoyproxy/ratelimit built once per go.sum
	@./hack/ratelimit/setup.sh >/dev/null

kube-build: ## a real kube-apiserver + embedded etcd for tests, built once per go.sum (not part of `make test` yet)
	@./hack/kube-apiserver/build.sh

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
	rm -rf node_modules packages/*/node_modules .tools
