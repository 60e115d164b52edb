# syntax=docker/dockerfile:1

# freshcrawl: one static binary on a distroless base.
#
#   docker build -t freshcrawl .
#   docker run --rm -p 8080:8080 -v freshcrawl-data:/data freshcrawl run --listen 0.0.0.0:8080
#
# The default command, `run`, starts everything in one process (embedded NATS,
# coordinator, workers, HTTP API). docker-compose.yml runs the same image as
# `coordinator` and `worker` against a NATS cluster.

# --- build -------------------------------------------------------------------
# Built on the build host's platform and cross-compiled (CGO is off), so a
# multi-platform build (`docker buildx build --platform linux/amd64,linux/arm64`)
# does not run the compiler under emulation.
FROM --platform=$BUILDPLATFORM golang:1.26-alpine AS build
WORKDIR /src

# Modules first, in their own layer: it is rebuilt only when go.mod or go.sum
# change, not on every source edit.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
ARG TARGETOS TARGETARCH
# Static binary (no libc needed), no local paths in it, no debug symbols.
# The build cache mount only speeds up rebuilds; it is not part of any layer.
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/freshcrawl ./cmd/freshcrawl

# The data directory, owned by the runtime user (distroless "nonroot",
# uid/gid 65532): the final image has no shell to create it. Docker copies
# this ownership into a named volume the first time it is mounted on /data.
RUN mkdir -p /out/data && chown 65532:65532 /out/data

# --- run ---------------------------------------------------------------------
# distroless/static: CA certificates (needed to fetch https URLs), tzdata and
# /etc/passwd with a nonroot user, and nothing else: no shell, no package
# manager. Its :nonroot tag already runs as uid 65532; USER says so explicitly.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/freshcrawl /usr/local/bin/freshcrawl
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532

# The bbolt store and, with no external NATS, the embedded server's files:
# `run` and `coordinator` are given --data /data (a worker keeps no data).
VOLUME /data
# The HTTP API and /metrics. Note the default --listen is 127.0.0.1:8080:
# set FRESHCRAWL_LISTEN=0.0.0.0:8080 (as docker-compose.yml does) to reach it
# from outside the container.
EXPOSE 8080

# On PATH, so `docker compose exec coordinator freshcrawl seed ...` works.
ENTRYPOINT ["/usr/local/bin/freshcrawl"]
CMD ["run", "--data", "/data"]
