# sparklet: one static binary for the webhook, the sidecar, the init
# container and the offline injector.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/sparklet/sparklet/internal/version.Version=${VERSION} -X github.com/sparklet/sparklet/internal/version.Commit=${COMMIT}" \
      -o /out/sparklet ./cmd/sparklet

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sparklet /sparklet
# 65532 is distroless's nonroot user; the webhook injects the sidecar with it.
USER 65532:65532
ENTRYPOINT ["/sparklet"]
