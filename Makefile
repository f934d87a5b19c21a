# The two commands of the README:
#   make run    run a gateway locally on examples/default.json (memory + filesystem)
#   make test   install what the tests need, then vet, staticcheck, the conformance
#               comparison, every test, and a short benchmark run (asserts no speed)
GO ?= go
NPM_DIR := test/npm
# pipefail: `go test -json | progress` fails when go test does.
SHELL := bash
.SHELLFLAGS := -o pipefail -c
STATICCHECK_VERSION := v0.8.2

.PHONY: build run test vet staticcheck conformance conformance-check clean

build:
	$(GO) build -o bin/mcp-gateway ./cmd/mcp-gateway
	$(GO) build -o bin/mcp-gateway-codemode ./cmd/mcp-gateway-codemode

# make run PORT=50006 serves on another port (when 50005 is taken); the
# environment's PORT is not taken (servers use that name for their own).
PORT = 50005
run: build
	@mkdir -p .run
	@echo "mcp-gateway on http://127.0.0.1:$(PORT)/mcp; bearer token in .run/token (Ctrl-C stops it). Try it from a second terminal:"
	@echo '  npx -y @modelcontextprotocol/inspector@2.12.0 --cli http://127.0.0.1:$(PORT)/mcp --header "Authorization: Bearer $$(cat .run/token)" --method tools/list'
	./bin/mcp-gateway serve --config-file examples/default.json --host 127.0.0.1 --port $(PORT) \
		--token-file .run/token --github-dir .run/github

# npm ci installs the pinned MCP servers, clients and Node 22 the tests use.
$(NPM_DIR)/node_modules/.package-lock.json: $(NPM_DIR)/package-lock.json
	@echo "== npm ci: the pinned MCP servers, clients and Node 22 ($(NPM_DIR))"
	cd $(NPM_DIR) && npm ci --no-audit --no-fund --loglevel=error

vet:
	@echo "== go vet"
	$(GO) vet ./...

staticcheck:
	@echo "== staticcheck $(STATICCHECK_VERSION)"
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# The MCP conformance suite against the Go SDK's fixture, directly and through the
# gateway, compared per scenario, and its client scenarios with the SDK's client
# directly and through the gateway (the gateway as OAuth client, clientdriver);
# rewrites docs/conformance.md (test/conformance/README.md).
# Then the same with nginx between the suite and the gateway (docs/conformance-nginx.md).
# One configuration: make conformance CONFORMANCE_FLAGS='-configs alpha-2026-07-28'
# make test runs the same comparison (conformance-check) but writes its reports only
# under test/out, so that a test run leaves the checkout as it was.
conformance: $(NPM_DIR)/node_modules/.package-lock.json
	GO=$(GO) $(GO) run ./test/conformance/harness $(CONFORMANCE_FLAGS)
	GO=$(GO) $(GO) run ./test/conformance/harness -proxy nginx $(CONFORMANCE_FLAGS)

conformance-check: $(NPM_DIR)/node_modules/.package-lock.json
	@echo "== conformance suite, directly and through the gateway (about 3 minutes; reports in test/out/conformance)"
	GO=$(GO) $(GO) run ./test/conformance/harness -doc '' $(CONFORMANCE_FLAGS)
	@echo "== conformance suite with nginx in front of the gateway (reports in test/out/conformance-nginx)"
	GO=$(GO) $(GO) run ./test/conformance/harness -proxy nginx -doc '' $(CONFORMANCE_FLAGS)

# Every Go test: the unit packages first, then the end-to-end tests through the real
# binary (test/..., the longest part); progress prints each test that takes a second
# or more, every skip with its reason, and the whole output of a failure.
test: $(NPM_DIR)/node_modules/.package-lock.json vet staticcheck conformance-check bench-short
	@echo "== unit tests (go test -race, every package but test/...)"
	$(GO) test -race -count=1 -timeout 30m -json $$($(GO) list ./... | grep -v /test/) | $(GO) run ./test/progress
	@echo "== end-to-end tests through the real binary (test/..., about 8 minutes)"
	$(GO) test -race -count=1 -timeout 30m -json ./test/... | $(GO) run ./test/progress

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
	@echo "== short benchmark run (checks that calls succeed; judges no figure)"
	GO=$(GO) $(GO) run ./bench -short -era both

# Code mode's figures (docs/code-mode.md, "Figures"): tools/list bytes with code-mode
# instead of the tools, an inner call against a direct tools/call. Asserts no speed.
.PHONY: bench-codemode
bench-codemode:
	$(GO) run ./bench/codemode

# The template built and run in a real Docker engine, and host mode's OCI
# servers (test/template; root, docker.io and debootstrap; docs/template.md).
.PHONY: test-template
test-template:
	$(GO) test -count=1 -timeout 15m -v -run 'TestTemplate|TestHostOCIServer' ./test/template/
