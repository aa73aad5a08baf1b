# Sluice — make targets. `make run` and `make test` are the two the README promises.
GO        ?= go
# gitleaks runs its rules on go-re2 (pure Go, ~12x faster than regexp) with this tag;
# the env var also reaches the go build that the e2e tests run.
export GOFLAGS := $(strip $(GOFLAGS) -tags=gore2regex)
PKGS      ?= ./...
LDFLAGS   ?= -X main.version=$(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BIN       ?= bin/sluice

.PHONY: run build test test-short soak fuzz bench aeb check fmt vet

run: ## run the gateway on its embedded default (deny-all, tenant "default")
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/sluice serve

build: ## the release binary; deploy/image/Dockerfile and build.sh use the same tags and flags
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN) ./cmd/sluice

test: ## the whole suite; the namespace tests need root (CI sets SLUICE_REQUIRE_NETNS=1)
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	# Memory bounds, measured where sync.Pool keeps what it is given (not under -race).
	$(GO) test -count=1 -run 'TestPeakMemory' ./scanner/

test-short:
	$(GO) test -short -count=1 $(PKGS)

SOAK      ?= 10m
soak: ## the gateway under mixed load on loopback for $(SOAK) (make test runs it for 60s); resources must come back
	SLUICE_SOAK=$(SOAK) $(GO) test -count=1 -run '^TestSoak$$' -timeout 60m -v ./gateway/

FUZZTIME ?= 2s
fuzz: ## every fuzz target for FUZZTIME each (CI runs it), starting from its committed corpus
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/'); do \
	    echo "fuzz $$dir $$f"; log=$$(mktemp); rc=0; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$dir >$$log 2>&1 || rc=$$?; cat $$log; \
	    if [ $$rc -ne 0 ] && grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
	      echo "fuzz $$dir $$f: the fuzzing engine's own deadline race (go.dev/issue/75804, fixed in Go 1.27), no input failed: once more"; \
	      rc=0; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$dir || rc=$$?; \
	    fi; rm -f $$log; [ $$rc -eq 0 ]; \
	  done; \
	done

bench: ## the gateway vs. direct, an open tunnel and squid ssl-bump (if installed), and the scanner vs. the gitleaks CLI
	$(GO) run ./internal/benchharness
	sh scanner/bench.sh

aeb: ## the agent-egress-bench corpus through sluice serve (needs root; corpus in SLUICE_AEB_CORPUS or ../shared/agent-egress-bench)
	SLUICE_AEB=1 $(GO) test -count=1 -v -run TestAgentEgressBench ./e2e

check: fmt vet test
	$(GO) mod verify
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)
	$(GO) run golang.org/x/vuln/cmd/govulncheck@v1.9.0 $(PKGS)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
