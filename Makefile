# The two commands of the README:
#   make run    run a gateway locally on examples/default.json (memory + filesystem)
#   make test   install what the tests need, then vet, staticcheck, the conformance
#               comparison, every test, and a short benchmark run (asserts no speed)
GO ?= go
NPM_DIR := test/npm
STATICCHECK_VERSION := v0.8.2

.PHONY: build run test vet staticcheck conformance clean

build:
	$(GO) build -o bin/mcp-gateway ./cmd/mcp-gateway

run: build
	@mkdir -p .run
	@echo "mcp-gateway on http://127.0.0.1:50005/mcp; bearer token in .run/token (Ctrl-C stops it)"
	./bin/mcp-gateway serve --config-file examples/default.json --host 127.0.0.1 --port 50005 \
		--token-file .run/token --github-dir .run/github

# npm ci installs the pinned MCP servers, clients and Node 22 the tests use.
$(NPM_DIR)/node_modules/.package-lock.json: $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && npm ci --no-audit --no-fund --loglevel=error

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# The MCP conformance suite against the Go SDK's fixture, directly and through the
# gateway, compared per scenario, and its client scenarios with the SDK's client
# directly and through the gateway (the gateway as OAuth client, clientdriver);
# rewrites docs/conformance.md (test/conformance/README.md).
# Then the same with nginx between the suite and the gateway (docs/conformance-nginx.md).
# One configuration: make conformance CONFORMANCE_FLAGS='-configs alpha-2026-07-28'
conformance: $(NPM_DIR)/node_modules/.package-lock.json
	GO=$(GO) $(GO) run ./test/conformance/harness $(CONFORMANCE_FLAGS)
	GO=$(GO) $(GO) run ./test/conformance/harness -proxy nginx $(CONFORMANCE_FLAGS)

test: $(NPM_DIR)/node_modules/.package-lock.json vet staticcheck conformance bench-short
	$(GO) test -race -count=1 -timeout 30m ./...

clean:
	rm -rf bin .run

# The benchmark (bench/README.md): the gateway against a direct connection to the same
# server, side by side in one run; prints Markdown tables (docs/benchmarks.md holds the
# latest). bench-short takes seconds and asserts nothing about speed: it fails only when
# a call fails or the harness breaks, so CI can run it.
.PHONY: bench bench-short
bench:
	GO=$(GO) $(GO) run ./bench -era both

bench-short:
	GO=$(GO) $(GO) run ./bench -short -era both

# Code mode's figures (docs/code-mode.md, "Figures"): tools/list bytes with code-mode
# instead of the tools, an inner call against a direct tools/call. Asserts no speed.
.PHONY: bench-codemode
bench-codemode:
	$(GO) run ./bench/codemode
