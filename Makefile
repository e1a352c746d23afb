# wasmkube build. `make run` and `make test` are the README's quick start; both install
# what is missing first (scripts/deps.sh is idempotent).
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go
BIN := bin/wasmkube
DATA ?= _data
CONFIG ?= examples/wasmkube.yaml
GOTEST_FLAGS ?= -count=1 -timeout 25m

.PHONY: all deps build examples images test unit run bench clean

all: build

deps:
	@scripts/deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/wasmkube

# Example wasm plugins: each wasm-examples/<lang>/<name>/ builds <name>.wasm beside its source.
examples:
	@scripts/build-examples.sh

# OCI archives of the images the kubelet needs offline (busybox, pause), under bin/images/.
images: build
	@scripts/build-images.sh

test: deps build examples images
	$(GO) vet ./...
	$(GO) test $(GOTEST_FLAGS) ./...

run: deps build examples images
	$(BIN) up --data-dir $(DATA) --config $(CONFIG)

bench: deps build examples images
	@scripts/bench.sh

clean:
	rm -rf bin
