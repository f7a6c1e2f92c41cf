# The hookback image: the same binary as on the laptop, static, run as
# non-root from a distroless base. make image builds it; make image-check
# runs the build stage's command without a container engine.
# The build stage runs on the builder's own platform and cross-compiles
# (TARGETOS/TARGETARCH are set by BuildKit for each --platform, empty with
# the legacy builder: then the host's), so a multi-arch build never runs
# the Go toolchain under emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN GOOS="${TARGETOS}" GOARCH="${TARGETARCH}" hack/image-build /out/hookback "${VERSION}"

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hookback /hookback
USER 65532:65532
ENTRYPOINT ["/hookback"]
