# Flotilla's entry points. `make demo` runs a local fleet; `make test` runs every check CI runs.
# Both build what they need: kube-apiserver and etcd from tools/kubeenv (minutes the first time,
# nothing after), and the flotilla binary.

GO      ?= go
BIN     := $(CURDIR)/bin
GOFLAGS ?=
# Build tags of every binary. kustomize_disable_go_plugin_support leaves out kustomize's Go
# plugin loader, which flotilla never runs (the renderer allows builtin plugins only): linking
# Go's plugin package with cgo on makes the linker export every symbol, about 10 MB of dynamic
# symbol tables and more kept code, which the kernel maps in with the rest of the binary and
# the idle agent's resident memory counted (20 MiB more at start, BenchmarkAgentBinary).
# cmd/flotilla-agent's TestMakefileTags checks that these tags leave the plugin package out.
GOTAGS  ?= kustomize_disable_go_plugin_support
# Bounds for one `go test` run; the suites start real API servers, so give them room.
TEST_TIMEOUT ?= 30m

# PostgreSQL for the tests: a throwaway server under out/postgres (`make postgres`), unless
# FLOTILLA_TEST_POSTGRES already names one (then nothing is started).
PG_DIR  ?= $(CURDIR)/out/postgres
PG_PORT ?= 55432
ifeq ($(origin FLOTILLA_TEST_POSTGRES),environment)
PG_START :=
else
FLOTILLA_TEST_POSTGRES := postgres://flotilla@127.0.0.1:$(PG_PORT)/postgres?sslmode=disable
PG_START := tools/postgres/start.sh $(PG_DIR) $(PG_PORT)
endif
export FLOTILLA_TEST_POSTGRES

.PHONY: all build image kube-binaries chromium demo test test-all test-unit test-integration test-e2e test-image test-bins verify lint vet protoc proto-check fuzz bench clean help postgres postgres-stop test-postgres

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 18

build: ## build bin/flotilla (the CLI and the hub) and bin/flotilla-agent (the agent alone)
	$(GO) build $(GOFLAGS) -tags '$(GOTAGS)' -o $(BIN)/flotilla ./cmd/flotilla
	$(GO) build $(GOFLAGS) -tags '$(GOTAGS)' -o $(BIN)/flotilla-agent ./cmd/flotilla-agent

# The images (docs/install.md): static binaries stamped with their commit (-buildvcs=true: some
# machines' go env turns stamping off) and the release as VERSION, then each image as an OCI
# layout, named ghcr.io/flotilla/flotilla:VERSION and ghcr.io/flotilla/flotilla-agent:VERSION
# as deploy/ expects.
VERSION ?= $(shell git describe --tags --match 'v*' 2>/dev/null || echo dev)

image: ## build both binaries statically and their images: out/image (hub and CLI), out/image-agent (VERSION=v0.1.0 for a release)
	for cmd in flotilla flotilla-agent; do \
		CGO_ENABLED=0 $(GO) build $(GOFLAGS) -tags '$(GOTAGS)' -trimpath -buildvcs=true \
			-ldflags "-s -w -X github.com/flotilla/flotilla/internal/version.Version=$(VERSION)" \
			-o $(BIN)/$$cmd ./cmd/$$cmd || exit 1; \
	done
	rm -rf $(CURDIR)/out/image $(CURDIR)/out/image-agent
	$(BIN)/flotilla image build --dest $(CURDIR)/out/image
	$(BIN)/flotilla image build --binary $(BIN)/flotilla-agent --dest $(CURDIR)/out/image-agent

kube-binaries: ## build bin/kube-apiserver and bin/etcd (only when missing or their pins changed)
	@tools/kubeenv/build.sh

# cosign, built from tools/cosign's pinned module: the OCI source tests sign artifacts with it.
# Phony: build.sh itself decides whether the binary is stale (its pins changed).
.PHONY: bin/cosign
bin/cosign: ## build bin/cosign, the reference cosign CLI (only when missing or its pin changed)
	@tools/cosign/build.sh

# sops, built from tools/sops's pinned module (the same sops version as go.mod's): the secret
# tests check that files it encrypts decrypt at the agent and the other way round. Phony:
# build.sh itself decides whether the binary is stale.
.PHONY: bin/sops
bin/sops: ## build bin/sops, the reference sops CLI the secret tests interoperate with
	@tools/sops/build.sh

# bin/helm: the reference helm CLI built from tools/helm, which the chart rendering tests
# (internal/render) compare flotilla's in-process rendering with. Phony, so that build.sh
# decides: it does nothing unless bin/helm is missing or tools/helm's pins changed.
.PHONY: bin/helm
bin/helm: ## build bin/helm, the reference helm the chart tests compare with
	@tools/helm/build.sh

# bin/golangci-lint: the linter make verify runs, built from tools/golangci-lint's pin.
.PHONY: bin/golangci-lint
bin/golangci-lint: ## build bin/golangci-lint, the linter make verify runs (only when missing or its pin changed)
	@tools/golangci-lint/build.sh

protoc: ## install Debian's protoc for proto-check (only when it is missing)
	@if ! command -v protoc >/dev/null; then \
		if [ "$$(id -u)" -ne 0 ]; then echo "protoc is missing: run 'sudo apt-get install -y protobuf-compiler' (or make protoc as root)" >&2; exit 1; fi; \
		echo "installing protoc from Debian's packages" >&2; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null; \
	fi

proto-check: protoc ## fail when the committed protocol code is not what proto/generate.sh makes
	@proto/check.sh

chromium: ## install Debian's chromium for the dashboard's browser tests (only when /usr/bin/chromium is missing)
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" -ne 0 ]; then echo "chromium is missing: run 'sudo apt-get install -y chromium' (or make chromium as root)" >&2; exit 1; fi; \
		echo "installing chromium from Debian's packages" >&2; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

demo: build kube-binaries ## run a local fleet (hub, 3 clusters with agents, a Git fleet repo) until Ctrl-C
	$(BIN)/flotilla demo --bin-dir $(BIN) --data-dir $(CURDIR)/out/demo

# The tiers of the suite (README, "Tests"); tools/testpkgs.sh says which package is in which,
# from what its tests import. `make test` runs them all, as CI does.
test: verify vet test-all test-image fuzz ## everything CI runs: format, tidiness, lint, vet, every tier with the race detector, then fuzz

# The three tiers in one go test run, the end-to-end package first: its fleets mostly wait on
# their own clusters, so the other packages' work fills the cores meanwhile instead of each
# tier waiting for the one before.
#
# Four test binaries at a time, not one per core: most of them wait on API servers, databases
# and browsers. (GOTEST links without DWARF, -w: each race-built test binary links a second or
# two quicker; stack traces and race reports come from the symbol table, not DWARF.)
# Measured on 2 cores, same tree, other work running: 564 s with go test's defaults, 431 s so.
TEST_P ?= 4
test-all: kube-binaries bin/helm bin/cosign bin/sops chromium postgres test-bins ## unit, integration and e2e tiers in one go test run (what make test runs)
	$(GOTEST) -p $(TEST_P) -parallel $(E2E_PARALLEL) \
		$$(tools/testpkgs.sh e2e) $$(tools/testpkgs.sh integration) $$(tools/testpkgs.sh unit)

# The binaries tests run as processes (internal/testbin): built once per run with the race
# detector, and handed to every test through FLOTILLA_BIN. No test builds the main module.
TESTBIN := $(BIN)/race
TESTENV := FLOTILLA_BIN=$(TESTBIN)
# How every test target runs go test: with the race detector, the binaries above, one timeout.
GOTEST = $(TESTENV) $(GO) test -race -ldflags=-w -timeout $(TEST_TIMEOUT)
test-bins: ## build the race-detector binaries the tests run (bin/race: flotilla, flotilla-agent, flotilla-bench)
	$(GO) build -race $(GOFLAGS) -tags '$(GOTAGS)' -o $(TESTBIN)/flotilla ./cmd/flotilla
	$(GO) build -race $(GOFLAGS) -tags '$(GOTAGS)' -o $(TESTBIN)/flotilla-agent ./cmd/flotilla-agent
	$(GO) build -race $(GOFLAGS) -tags '$(GOTAGS)' -o $(TESTBIN)/flotilla-bench ./cmd/flotilla-bench

test-unit: bin/helm bin/cosign bin/sops ## the tests that need no API server, database server or browser (about a minute): run these while working
	$(GOTEST) $$(tools/testpkgs.sh unit)

test-integration: kube-binaries bin/helm bin/cosign bin/sops chromium postgres test-bins ## the packages whose tests start real API servers, PostgreSQL or a browser
	$(GOTEST) $$(tools/testpkgs.sh integration)

# End-to-end tests run side by side (each has its own clusters, hub and agents); on 2 cores
# three at a time keeps the machine busy without starving the fleets' own timers.
E2E_PARALLEL ?= 3
test-e2e: kube-binaries bin/helm bin/cosign bin/sops postgres test-bins ## whole fleets end to end (test/e2e)
	$(GOTEST) -parallel $(E2E_PARALLEL) $$(tools/testpkgs.sh e2e)

# The static image build, tested once: flotilla built as `make image` builds it, stamped
# v0.0.0-e2e, pushed to a real registry and run from the pulled layer (test/image).
test-image: ## build flotilla as make image does and test its image end to end (bin/static)
	CGO_ENABLED=0 $(GO) build $(GOFLAGS) -tags '$(GOTAGS)' -trimpath -buildvcs=true \
		-ldflags "-s -w -X github.com/flotilla/flotilla/internal/version.Version=v0.0.0-e2e" \
		-o $(BIN)/static/flotilla ./cmd/flotilla
	FLOTILLA_IMAGE_BIN=$(BIN)/static $(GOTEST) ./test/image

postgres: ## start PostgreSQL for the tests under out/postgres (installs Debian's package if missing)
	@$(PG_START)

postgres-stop: ## stop the PostgreSQL server `make postgres` started
	@tools/postgres/stop.sh $(PG_DIR)

test-postgres: postgres test-bins ## only the tests that use PostgreSQL: store contract suite, replicated hubs, HA e2e
	$(GOTEST) ./internal/pgtest ./internal/hub/store/...
	$(GOTEST) -run 'Replica|Lease|Fanout|Postgres' ./internal/hub
	$(GOTEST) -run 'HA' ./test/e2e

verify: bin/golangci-lint proto-check ## fail when gofmt, go mod tidy or golangci-lint would change or find something, or the protocol code is stale
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@for m in kubeenv helm cosign sops golangci-lint; do \
		(cd tools/$$m && $(GO) mod tidy -diff) || { echo "tools/$$m/go.mod is not tidy: run go mod tidy there"; exit 1; }; \
	done
	$(MAKE) lint

lint: bin/golangci-lint ## golangci-lint with .golangci.yml (make verify runs it)
	$(BIN)/golangci-lint run ./...
	$(BIN)/golangci-lint run --build-tags 'bench,$(GOTAGS)' ./bench/...

vet: ## go vet on the main module
	$(GO) vet ./...

# Budgets are counts of executions (about 5 s each here), not durations: a duration races Go's
# fuzzing coordinator at its deadline and can fail with a bare "context deadline exceeded"
# and no input on a loaded machine.
FUZZ = $(GO) test -run '^$$' -fuzzminimizetime 200x
fuzz: ## run each fuzz target for a few thousand inputs (its committed seeds first); a failing input lands in testdata/fuzz
	$(FUZZ) -fuzz '^FuzzUnpack$$' -fuzztime 20000x ./internal/artifact
	$(FUZZ) -fuzz '^FuzzDecodeManifests$$' -fuzztime 4000x ./internal/render
	$(FUZZ) -fuzz '^FuzzParseFleet$$' -fuzztime 4000x ./api/v1alpha1
	$(FUZZ) -fuzz '^FuzzReportMessage$$' -fuzztime 500x ./internal/hub/agentapi
	$(FUZZ) -fuzz '^FuzzDesiredDocument$$' -fuzztime 2000x ./internal/hub/agentapi

# The benchmarks and the simulator's larger checks (build tag bench: the cold-start and webhook
# runs), on the binaries `make build` makes, so that what is measured is what users run.
bench: build kube-binaries bin/helm chromium postgres ## benchmarks with real API servers (figures for issue notes), and bin/flotilla-bench
	$(GO) build $(GOFLAGS) -tags '$(GOTAGS)' -o $(BIN)/flotilla-bench ./cmd/flotilla-bench
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/localcluster
	$(GO) test -run '^$$' -bench . -benchmem ./internal/render
	FLOTILLA_BIN=$(BIN) $(GO) test -tags 'bench $(GOTAGS)' -bench . -benchtime 1x ./bench
	$(GO) test -run '^$$' -bench FirstPaint -benchtime 3x ./internal/hub/dashboard

clean: ## remove built binaries (the Go build cache keeps rebuilds quick)
	rm -rf $(BIN)
