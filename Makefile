# sparklet: every target a developer or CI needs. Tools are built from Go
# modules into the git-ignored bin/ and rebuilt only when their pin changes.
SHELL := /bin/bash
BIN   := $(CURDIR)/bin
GO    ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X github.com/sparklet/sparklet/internal/version.Version=$(VERSION) -X github.com/sparklet/sparklet/internal/version.Commit=$(COMMIT)
export PATH := $(BIN):$(PATH)

.PHONY: all build image node-images test unit-test fuzz lint imports demo bench cluster-binaries yunikorn-binary helm-binary python-client connect-client spark-tools spark-dists cluster-up cluster-down chart-test clean

all: build

build: $(BIN)/sparklet $(BIN)/sparklet-sidecar

SOURCES := $(shell find . -name '*.go' -not -name '*_test.go' -not -path './bin/*' -not -path './hack/*' -not -path './test/*' -not -path './e2e/*' -not -path './bench/*' -not -path './charts/*')

# The binary's sources: everything but tests, the test harness (test/), the
# tools under hack/ and the commands built on them (bench/ and hack/ are
# mains; test/layering_test.go keeps the binary off test/ and hack/).
$(BIN)/sparklet: $(SOURCES) go.mod go.sum
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./cmd/sparklet

# The same command with only the sidecar (cmd/sparklet/commands_sidecaronly.go):
# `sparklet sidecar` hands over to it when it sits next to sparklet.
$(BIN)/sparklet-sidecar: $(SOURCES) go.mod go.sum
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -tags sidecaronly -ldflags '$(LDFLAGS)' -o $@ ./cmd/sparklet

# sparklet's image as a tarball, without a container engine (hack/image):
# bin/sparklet and bin/sparklet-sidecar on an empty base, user 65532, entrypoint /sparklet,
# labelled with the version the binary reports, tagged with the chart's
# appVersion so the chart's default image is this one.
# Reproducible: the same commit gives the same digest. Load it with
# docker load, podman load or kind load image-archive.
IMAGE_REPOSITORY ?= ghcr.io/sparklet/sparklet
IMAGE_TAG ?= $(shell sed -n 's/^appVersion: *"*\([^"]*\)"*$$/\1/p' charts/sparklet/Chart.yaml)
image: $(BIN)/sparklet $(BIN)/sparklet-sidecar
	cd hack/image && GOFLAGS=-mod=mod $(GO) run . --binary $(BIN)/sparklet --sidecar-binary $(BIN)/sparklet-sidecar --out $(BIN)/sparklet-image.tar \
	  --tag $(IMAGE_REPOSITORY):$(IMAGE_TAG) --version $$($(BIN)/sparklet version | sed -n 's/^version: //p') \
	  --revision $$(git rev-parse HEAD 2>/dev/null) --created $$(git log -1 --format=%ct 2>/dev/null || echo 0)

# The images of the real node, as tarballs in bin/images/ for `ctr -n k8s.io
# images import`, built without a container engine or a registry
# (hack/nodeimages, docs/real-node.md): the pause image, the kubectl image of
# helm test, apache/spark:<version> and its other tags for each pinned
# Spark, and sparklet's own (make image). A second run is a no-op.
node-images: image spark-dists
	@hack/nodeimages/build.sh $(BIN)
	@ln -sf ../sparklet-image.tar $(BIN)/images/sparklet.tar

# The real control plane (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kwok), built from the separate module hack/cluster.
cluster-binaries:
	@hack/cluster/build.sh $(BIN)

# The real node (test/node): the kubelet and kube-proxy of the control
# plane's Kubernetes version, containerd and CoreDNS, built from Go modules;
# runc, the CNI plugins and nft from Debian's packages (hack/node/build.sh).
.PHONY: node-binaries
node-binaries: cluster-binaries
	@hack/node/build.sh $(BIN)

# Apache YuniKorn's scheduler, for the gang-scheduling tests (e2e/gang),
# built from the separate module hack/yunikorn.
yunikorn-binary:
	@hack/yunikorn/build.sh $(BIN)

# Kueue and its CRDs (bin/kueue, bin/kueue-crds), for e2e/queue.
.PHONY: kueue-binary
kueue-binary:
	@hack/kueue/build.sh $(BIN)

# The Versity S3 Gateway (bin/versitygw), the object store of the event-log
# tests, built from the separate module hack/versitygw.
.PHONY: versitygw-binary
versitygw-binary:
	@hack/versitygw/build.sh $(BIN)

# metrics-server (bin/metrics-server), which the real node's tests run so
# that the API server serves metrics.k8s.io from the kubelet's real usage
# (test/metricsserver), built from the separate module hack/metricsserver.
.PHONY: metrics-server-binary
metrics-server-binary:
	@hack/metricsserver/build.sh $(BIN)

# cert-manager's controller, cainjector and webhook and its CRDs
# (bin/cert-manager-controller, bin/cert-manager-cainjector,
# bin/cert-manager-webhook, bin/cert-manager-crds), for the chart's
# cert-manager tests, built from the separate modules hack/certmanager and
# hack/certmanager/webhook.
.PHONY: certmanager-binary
certmanager-binary:
	@hack/certmanager/build.sh $(BIN)

# The Gateway API's GRPCRoute CRD (bin/gateway-api-crds), pinned by
# version and sha256, for e2e's TestGRPCRouteAgainstTheCRD.
.PHONY: gateway-api-crds
gateway-api-crds:
	@hack/gatewayapi/crds.sh $(BIN)

# helm, for the chart tests.
helm-binary:
	@hack/helm/build.sh $(BIN)

# Debian's python3-kubernetes: an independent client in the sidecar's
# conformance test. It loads under /usr/bin/python3.
python-client:
	@/usr/bin/python3 -c 'import kubernetes' 2>/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-kubernetes python3-websocket >/dev/null; }

# The official Spark Connect Python client, pinned
# (hack/connect-client/requirements.txt), in .cache/connect-client/site
# for e2e/realspark's TestConnectAuth.
connect-client:
	@hack/connect-client/install.sh

# The Spark Connect server jar for Spark 3.5 (hack/spark/connect-jar),
# pinned by sha256, in .cache/spark, for e2e/realspark's TestConnect35.
.PHONY: connect-jar
connect-jar:
	@hack/spark/connect-jar.sh

# The pinned Spark distributions (hack/spark/versions) in bin/spark/<version>,
# laid out as the official image's /opt/spark, from the pyspark sdist on
# PyPI; see docs/real-spark.md. They need a JDK (javac, jar) and pip.
spark-dists: spark-tools
	@hack/spark/install.sh $(BIN)

spark-tools:
	@command -v java >/dev/null && command -v javac >/dev/null && command -v jar >/dev/null || hack/apt-install.sh openjdk-17-jdk-headless
	@python3 -m pip --version >/dev/null 2>&1 || hack/apt-install.sh python3-pip

# GOTESTFLAGS adds flags to go test, e.g. GOTESTFLAGS=-v for every test's time.
test: build cluster-binaries yunikorn-binary helm-binary kueue-binary versitygw-binary certmanager-binary metrics-server-binary gateway-api-crds node-binaries node-images python-client connect-client connect-jar spark-dists
	$(GO) vet ./...
	SPARKLET_BIN_DIR=$(BIN) SPARKLET_E2E=1 $(GO) test -count=1 -parallel 4 -timeout 55m $(GOTESTFLAGS) ./...

unit-test:
	$(GO) test -count=1 -short ./...

# Every fuzz target, one after the other, each for FUZZTIME (go test runs
# their seed corpora; this explores). A crasher is saved under the
# package's testdata/fuzz/ and then runs in go test as a seed.
FUZZTIME ?= 10m
FUZZ_TARGETS := ./patches/submitargs:FuzzRead ./patches/submitargs:FuzzParseSubmit ./patches/submitargs:FuzzSplitShell \
	./patches/submitargs:FuzzSplitEnvOptions ./patches/submitargs:FuzzExpand ./patches:FuzzEnvRoutes \
	./patches:FuzzParseSparkConf ./patches:FuzzSparkConfRoundTrip ./patches:FuzzDriverAnnotations \
	./fetch/spec:FuzzParseAnnotation ./fetch/spec:FuzzAllowedURLStaysInside ./policy:FuzzParse ./sidecar:FuzzAPI
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

# Import groups: the standard library, then other modules, then
# github.com/sparklet/sparklet, each group once. gci (pinned, run as
# staticcheck is) checks the order and merges a split group; goimports
# -local only splits a mixed group, and leaves a project group above the
# others or split in two. The modules under hack/ keep their own groups.
GCI       := $(GO) run github.com/daixiang0/gci@v0.14.0
GCI_ORDER := -s standard -s default -s 'prefix(github.com/sparklet/sparklet)'
MODULE_GO := $(shell git ls-files '*.go' $(foreach m,$(dir $(shell git ls-files '*/go.mod')),':!:$(m)'))

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	@misgrouped=$$($(GCI) list $(GCI_ORDER) $(MODULE_GO)) && test -z "$$misgrouped" || { $(GCI) diff $(GCI_ORDER) $$misgrouped; echo "gci: imports above are misgrouped; make imports regroups them"; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags sidecaronly ./cmd/...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags sidecaronly ./cmd/...
	$(GO) test -count=1 -run 'Layering|DocLinks|FunctionLength|PackageDocs' ./test

imports:
	$(GCI) write $(GCI_ORDER) $(MODULE_GO)

# The walkthrough of README.md's quickstart on the real node
# (docs/real-node.md): the chart installed with helm as docs/install.md
# tells, the example drivers run as containers.
demo: build cluster-binaries helm-binary node-binaries node-images
	@hack/demo.sh

# The same drivers on the pod runner (docs/pod-runner.md), the webhook run
# as a local process: no node binaries or images to build.
.PHONY: demo-pod-runner
demo-pod-runner: build cluster-binaries spark-dists
	@hack/demo.sh --pod-runner

bench: build cluster-binaries spark-dists
	$(GO) run ./bench --bin $(BIN)

# SparkPi from kubectl apply to Succeeded on the pod runner and on the real
# node, side by side (bench/node.go, bench/results/node.md); apart from
# make bench, which the node and its images would make heavier.
.PHONY: bench-node
bench-node: build cluster-binaries helm-binary node-binaries node-images
	$(GO) run ./bench node --bin $(BIN)

# The time from a driver pod's scheduling to its Spark container's first
# process, with and without sparklet, on the pod runner and on the real
# node (bench/start.go, bench/results/start.md); apart from make bench.
.PHONY: bench-start
bench-start: build cluster-binaries helm-binary node-binaries node-images
	$(GO) run ./bench start --node --bin $(BIN)

# A Spark Connect server as the example Deployment on the pod runner, from
# kubectl apply to its first query's result through the sidecar
# (bench/connect.go, bench/results/connect.md); apart from make bench.
.PHONY: bench-connect
bench-connect: build cluster-binaries spark-dists connect-client
	$(GO) run ./bench connect --bin $(BIN)

# The same SparkPi and PySpark job through sparklet and through
# spark-submit --deploy-mode cluster on the real node, timed with their API
# requests (bench/e2e.go, bench/results/e2e.md); apart from make bench.
.PHONY: bench-e2e
bench-e2e: build cluster-binaries helm-binary node-binaries node-images spark-dists
	$(GO) run ./bench e2e --bin $(BIN)

cluster-up: build cluster-binaries
	@$(GO) run ./hack/localcluster up --bin $(BIN) --dir $(CURDIR)/.cache/cluster

# Stops the control planes of make cluster-up and hack/demo.sh --emulator,
# or the one in DIR, and removes what killed pod runners left.
DOWN_DIRS := $(CURDIR)/.cache/cluster,$(CURDIR)/.cache/demo/cluster
cluster-down:
	@$(GO) run ./hack/localcluster down --dir $(or $(DIR),$(DOWN_DIRS))

# The chart: lint and render with helm (built from hack/helm), then apply to
# the local control plane and run the self-managed webhook (bin/sparklet).
chart-test: build cluster-binaries
	hack/helm/build.sh $(BIN)
	SPARKLET_BIN_DIR=$(BIN) SPARKLET_E2E=1 $(GO) test -count=1 -timeout 10m ./charts/... ./webhook/selfcert/...

clean:
	rm -rf $(BIN) .cache
