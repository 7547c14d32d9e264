# herald — build, run and test. `make run` and `make test` are all a fresh
# machine needs (see README.md).

GO        ?= go
BIN       := bin/herald
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X github.com/herald-bridge/herald/delivery/egress.Version=$(VERSION)
# The packager, run as a Go tool through the module proxy at this version.
NFPM      ?= github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0
CONFIG    ?= configs/herald.example.yaml
DATA_DIR  ?= ./data
FUZZTIME  ?= 5s

# Redis-backed tests run whenever a Redis answers on 127.0.0.1:6379 (CI
# makes sure one does); HERALD_TEST_REDIS_URL overrides the address.
# (/dev/tcp is bash's; make's own shell may be dash.)
REDIS_UP  := $(shell bash -c "(exec 3<>/dev/tcp/127.0.0.1/6379 && printf 'PING\\r\\n' >&3 && timeout 2 head -c 5 <&3) 2>/dev/null | grep -c PONG")
ifeq ($(HERALD_TEST_REDIS_URL),)
ifeq ($(REDIS_UP),1)
export HERALD_TEST_REDIS_URL := redis://127.0.0.1:6379/0
endif
endif

.PHONY: all build run test vet fmt-check unit bench scale fuzz-smoke dist package clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/herald

run: build
	./$(BIN) serve --config $(CONFIG) --data-dir $(DATA_DIR)

# Everything CI runs: vet, the gofmt check, unit and integration tests
# (with the race detector), the store conformance suite on bbolt and, when
# reachable, Redis.
test: vet fmt-check unit

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

unit:
	@if [ -z "$$HERALD_TEST_REDIS_URL" ]; then echo "note: no Redis on 127.0.0.1:6379; Redis-backed tests skip (CI starts one)"; fi
	$(GO) test -race -count=1 -timeout 30m ./...
	@# The Feishu SDK's websocket client races with itself; its tests run without the detector.
	$(GO) test -count=1 -run '^TestWebsocket' ./channels/feishu/

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2x ./store/... ./tasks/... ./delivery/... ./webhook/...

# One process with SCALE_TASKS config-declared tasks on the embedded store,
# feeds on loopback: start, a stop during the baselines, a restart, a quiet
# minute (README, Scale). Bounded: about ten minutes at 100,000 tasks.
SCALE_TASKS ?= 100000
scale: build
	$(GO) run ./cmd/herald-scale -n $(SCALE_TASKS) -bin $(BIN)

# Each fuzz target for FUZZTIME; corpora that found bugs live in testdata/fuzz.
fuzz-smoke:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# Static release binaries for linux/amd64, linux/arm64 and darwin/arm64 (not
# Windows yet: the store locks use flock), an archive each and SHA256SUMS in dist/.
dist:
	GO=$(GO) VERSION=$(VERSION) COMMIT=$(COMMIT) configs/packaging/dist.sh

# The .deb and .rpm (ARCH=amd64 or arm64) in dist/; .ci/package-test installs
# the .deb for real.
package:
	GO=$(GO) VERSION=$(VERSION) COMMIT=$(COMMIT) NFPM=$(NFPM) configs/packaging/package.sh

clean:
	rm -rf bin dist
