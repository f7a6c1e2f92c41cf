# hookback: the two commands a user needs are `make run` and `make test`.
GO ?= go
BIN := bin/hookback
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/hookback/hookback/cli.Version=$(VERSION)

# Every build here but the race-instrumented unit tests is the release's
# configuration, static and -trimpath, as .goreleaser.yaml, hack/image-build,
# hack/cluster/lib.sh and the local control plane's build (localcluster) make
# theirs. Go caches a compiled package per configuration, and on a fresh
# machine each configuration is every dependency compiled again (minutes on
# 2 cores): with one, make build, vet, the e2e tests' binaries, the release
# check and the image compile each package once between them.
RELEASE_CONFIG_TARGETS := build vet e2e e2e-external e2e-external-smoke e2e-image image-check release-check release-check-host
$(RELEASE_CONFIG_TARGETS): export CGO_ENABLED = 0
$(RELEASE_CONFIG_TARGETS): export GOFLAGS += -trimpath
# The release's other platforms, type-checked from source by make vet
# (hack/crosscheck: seconds, where GOOS=windows go vet compiles every
# dependency for Windows first).
CROSS_PLATFORMS := windows/amd64 windows/arm64 darwin/amd64 darwin/arm64 linux/arm64

.PHONY: all build run test vet unit fuzz-short fuzz e2e bench cluster-up cluster-down clean image image-check e2e-image e2e-external e2e-external-smoke release-check release-check-host

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) .

## run: start hookback against $$KUBECONFIG's cluster, or the local control plane when unset.
run: build
	hack/run $(ARGS)

## test: vet, unit tests (every fuzz target's seed corpus among them), then end-to-end tests against a real kube-apiserver
## (the local control plane, built and started when needed, unless KUBECONFIG is set).
test: vet unit e2e

vet:
	$(GO) vet ./...
	@set -e; for p in $(CROSS_PLATFORMS); do \
		echo "$(GO) run ./hack/crosscheck -goos $${p%/*} -goarch $${p#*/}"; \
		$(GO) run ./hack/crosscheck -goos "$${p%/*}" -goarch "$${p#*/}"; done
	cd examples/custom-webhook && $(GO) vet ./... && $(GO) build -o /dev/null .
	cd test/e2e && $(GO) vet ./...
	cd test/e2e/crupstream && $(GO) vet ./...
	cd test/e2e/crmanager && $(GO) vet ./...
	cd test/bench && $(GO) vet ./...

unit:
	$(GO) test -race ./...
	cd test/bench && $(GO) test -race ./...

## fuzz-short: every fuzz target for a few seconds; fuzz: longer (FUZZTIME, default 1m). make test runs
## their seed corpora (in unit), not the fuzzer, so no suite runs twice and CI stays cheap.
fuzz-short:
	FUZZTIME=3s hack/fuzz

fuzz:
	FUZZTIME=$${FUZZTIME:-1m} hack/fuzz

e2e:
	cd test/e2e && $(GO) test -count=1 -timeout 30m .

## e2e-external: the suite as on kind, against the cluster of a KUBECONFIG: the local
## control plane, started first and left up; the tests that need its specifics skip and say why.
e2e-external:
	hack/e2e-external

## e2e-external-smoke: the external-cluster path of the harness (what CI runs: the suite
## itself already ran in make test): a start that registers, verifies and cleans up, and check.
e2e-external-smoke:
	hack/e2e-external -run '^(TestStartRegistersServesAndCleansUp|TestCheckAsAdmin)$$'

bench:
	hack/bench

## image: the container image (Dockerfile), with docker or podman. IMAGE_BUILD_FLAGS go to the
## engine's build (hack/ci-image mounts this machine's Go caches there, so the image's build
## stage compiles nothing make test already compiled in the same configuration).
IMAGE ?= hookback:$(VERSION)
IMAGE_BUILD_FLAGS ?=
CONTAINER_ENGINE ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)

image:
	@if [ -z "$(CONTAINER_ENGINE)" ]; then \
		echo "make image: no container engine found (looked for docker and podman on PATH; or set CONTAINER_ENGINE)" >&2; exit 1; fi
	$(CONTAINER_ENGINE) build $(IMAGE_BUILD_FLAGS) --build-arg VERSION=$(VERSION) -t $(IMAGE) .

## e2e-image: the image (make image) run by podman in the e2e tests that take
## one: TestInClusterImage (serve's two replicas) and TestTunnelStart (the relay).
## As root: rootful podman, and the tests make network namespaces.
e2e-image: image
	cd test/e2e && HOOKBACK_E2E_IMAGE=$(IMAGE) HOOKBACK_E2E_ENGINE=$(CONTAINER_ENGINE) $(GO) test -count=1 -timeout 20m -v \
		-run '^(TestInClusterImage|TestTunnelStart)$$' .

## image-check: the image's build stage (hack/image-build) run here, without an
## engine: the binary must be static and report VERSION.
image-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	hack/image-build "$$tmp/hookback" '$(VERSION)' && \
	$(GO) version -m "$$tmp/hookback" | grep -q 'CGO_ENABLED=0' || { echo "make image-check: binary is not static (CGO_ENABLED=0 missing)" >&2; exit 1; }; \
	if command -v file >/dev/null; then file "$$tmp/hookback" | grep -q 'statically linked' || { echo "make image-check: file does not say statically linked" >&2; exit 1; }; fi; \
	got=$$("$$tmp/hookback" --version) && [ "$$got" = "hookback version $(VERSION)" ] || { echo "make image-check: --version printed '$$got', want 'hookback version $(VERSION)'" >&2; exit 1; }; \
	echo "image-check: static binary, --version: $$got"

## release-check: a GoReleaser snapshot of the release (dist/: six platforms, checksums, krew
## manifest, Homebrew cask), then each install channel run from it: the archive's binary, the
## krew plugin through kubectl, the cask, go install (hack/release-check; docs/install.md).
release-check:
	hack/release-check

## release-check-host: the same for this machine's platform only (what CI runs).
release-check-host:
	hack/release-check --host

cluster-up:
	hack/cluster/up

cluster-down:
	hack/cluster/down

clean:
	rm -rf bin
