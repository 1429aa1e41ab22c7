# sparklet: one static binary for the webhook, the sidecar, the init
# container and the offline injector, and its sidecar-only build, which
# `sparklet sidecar` hands over to. `make image` builds the same layout
# without a container engine (hack/image): /sparklet and /sparklet-sidecar
# on an empty base, user 65532, entrypoint /sparklet, the OCI labels below. The binary
# carries Mozilla's root certificates for when the image has none.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/sparklet/sparklet/internal/version.Version=${VERSION} -X github.com/sparklet/sparklet/internal/version.Commit=${COMMIT}" \
      -o /out/sparklet ./cmd/sparklet && \
    CGO_ENABLED=0 go build -trimpath -tags sidecaronly \
      -ldflags "-s -w -X github.com/sparklet/sparklet/internal/version.Version=${VERSION} -X github.com/sparklet/sparklet/internal/version.Commit=${COMMIT}" \
      -o /out/sparklet-sidecar ./cmd/sparklet

FROM scratch
ARG VERSION=dev
ARG REVISION=""
LABEL org.opencontainers.image.title="sparklet" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/sparklet/sparklet"
COPY --from=build --chmod=0755 /out/sparklet /out/sparklet-sidecar /
# 65532 is distroless's nonroot user; the webhook injects the sidecar with it.
USER 65532:65532
ENTRYPOINT ["/sparklet"]
