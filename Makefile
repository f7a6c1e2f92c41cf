# hookback: the two commands a user needs are `make run` and `make test`.
GO ?= go
BIN := bin/hookback
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/hookback/hookback/cli.Version=$(VERSION)

.PHONY: all build run test vet unit fuzz-short fuzz e2e bench cluster-up cluster-down clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) .

## run: start hookback against $$KUBECONFIG's cluster, or the local control plane when unset.
run: build
	hack/run $(ARGS)

## test: vet, unit tests, then end-to-end tests against a real kube-apiserver
## (the local control plane, built and started when needed, unless KUBECONFIG is set).
test: vet unit fuzz-short e2e

vet:
	$(GO) vet ./...
	GOOS=windows $(GO) vet ./session/ ./cli/
	cd examples/custom-webhook && $(GO) vet ./...
	cd e2e/crupstream && $(GO) vet ./...

unit:
	$(GO) test -race $$($(GO) list ./... | grep -v /e2e)
	cd examples/custom-webhook && $(GO) build -o /dev/null .

## fuzz-short: every fuzz target for a few seconds; fuzz: longer (FUZZTIME, default 1m).
fuzz-short:
	FUZZTIME=3s hack/fuzz

fuzz:
	FUZZTIME=$${FUZZTIME:-1m} hack/fuzz

e2e:
	$(GO) test -count=1 -timeout 30m ./e2e/

bench:
	hack/bench

cluster-up:
	hack/cluster/up

cluster-down:
	hack/cluster/down

clean:
	rm -rf bin
