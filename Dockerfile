# syntax=docker/dockerfile:1
# Mill: one image with every binary under cmd/ (workman, dupproducer,
# bitproducer, millctl, ...) in /usr/local/bin, static, run as a non-root user.
#
#   docker build -t mill .
#   docker run --rm mill millctl help
#   docker run --rm -e MILL_QUEUE_PREFIX=mill- mill workman
#
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 -t mill .
# (the builder runs on the build machine's platform and cross-compiles).

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Set by BuildKit from --platform; linux/amd64 when absent.
ARG TARGETOS
ARG TARGETARCH
# ./cmd/... builds whichever commands exist, each into /out/<name>.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-amd64} \
    go build -trimpath -buildvcs=false -ldflags='-s -w' -o /out/ ./cmd/...

# distroless/static: CA certificates and time zone data, no shell, no package
# manager; the :nonroot variant runs as uid/gid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
# No entrypoint: the command names the binary (PATH includes /usr/local/bin).
CMD ["millctl", "help"]
