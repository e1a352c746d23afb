# wasmkube build. `make run` and `make test` are the README's quick start; both install
# what is missing first (scripts/deps.sh is idempotent).
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go
BIN := bin/wasmkube
DATA ?= _data
CONFIG ?= examples/wasmkube.yaml
GOTEST_FLAGS ?= -count=1 -timeout 25m
# The packages with concurrency, run again under the race detector by `make test`: the
# storage watch cache, the scheduler queue and cache, the wasm module fetch cache, and (only their concurrent tests:
# the others assert millisecond limits the race detector's slowdown breaks) the wasm
# instance pool and the kubelet's pod workers.
RACE_PKGS := ./core/storage/ ./core/scheduler/queue/ ./core/scheduler/cache/ ./internal/configwatch/ ./core/controller/nodeipam/ ./kubelet/overlay/ ./plugins/wasmoci/
RACE_WASMHOST_RUN := TestPoolHammer|TestCycleStateIsSharedByInstances|TestCallerCancellation|TestClosedPool|TestRunawayLoop|TestObjectCache|TestModulesShareCompiledCodeByContent|TestMemoryOutlivesACloseUnderACall|TestSetsCloseWhatTheLastUserLetsGo
RACE_KUBELET_RUN := TestWorkerOrderingOnFakeRuntime|TestStatusOnlyChange|TestImageNeverPullReason

.PHONY: all deps build examples images test race fuzz chaos unit run bench clean

all: build

deps:
	@scripts/deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/wasmkube

# Example wasm plugins: each wasm-examples/<lang>/<name>/ builds <name>.wasm beside its source.
examples:
	@scripts/build-examples.sh

# OCI archives of the images the kubelet needs offline (busybox, pause, the example webhook
# server), under bin/images/.
images: build
	@scripts/build-images.sh

test: deps build examples images
	$(GO) vet ./...
	$(GO) test $(GOTEST_FLAGS) ./...
	@$(MAKE) --no-print-directory race

# `go test -race` on the packages with concurrency (part of `make test`).
race:
	$(GO) test -race -count=1 -timeout 15m $(RACE_PKGS)
	$(GO) test -race -count=1 -timeout 10m -run '$(RACE_WASMHOST_RUN)' ./plugins/wasmhost/
	$(GO) test -race -count=1 -timeout 10m -run '$(RACE_KUBELET_RUN)' ./kubelet/

# Every fuzz target for FUZZTIME each (default 30s); `make test` runs them on their seeds.
fuzz: deps
	@scripts/fuzz.sh

# The fault suite: kill -9 of a server mid-write, scheduler failover between two servers
# (scripts/chaos; the etcd leader and quorum faults are go tests, docs/benchmarks.md).
chaos: deps build
	$(GO) run ./scripts/chaos -bin $(BIN)

run: deps build examples images
	$(BIN) up --data-dir $(DATA) --config $(CONFIG)

bench: deps build examples images
	@scripts/bench.sh

clean:
	rm -rf bin
