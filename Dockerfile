# The hookback image: the same binary as on the laptop, static, run as
# non-root from a distroless base. make image builds it; make image-check
# runs the build stage's command without a container engine.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN hack/image-build /out/hookback "${VERSION}"

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hookback /hookback
USER 65532:65532
ENTRYPOINT ["/hookback"]
