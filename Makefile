# The core module only (the library, channels, scheduler, statuspage,
# examples): the README's quick command.
test:
	go test -race -count=1 ./...

# Every module: the core and the four with a go.mod of their own
# (prometheus/, jetstream/, otel/, benchmarks/), each vetted and tested under -race
# (the benchmark suite's tests without it, as its harness times pools), then
# the README's instructions for using the sub-modules from a checkout, tried
# from a scratch module outside the repository (needs the module proxy or a
# warm module cache).
test-all:
	go vet ./...
	go test -race -count=1 ./...
	$(MAKE) test-modules

# The sub-modules and the scratch-module check alone (CI runs the core's
# tests in steps of its own, then this).
test-modules:
	cd prometheus && go vet ./... && go test -race -count=1 ./...
	cd jetstream && go vet ./... && go test -race -count=1 -timeout=5m ./...
	cd otel && go vet ./... && go test -race -count=1 -timeout=5m ./... && go run ./examples/trace >/dev/null
	cd benchmarks && go vet ./... && go test -count=1 -timeout=5m ./...
	cd benchmarks/asynqcmp && go vet ./...
	bash scripts/scratch-module.sh

soak:
	SMARTPOOL_SOAK=30m go test -run Soak -count=1 -v -timeout 40m .

ci:
	bash .ci/run

# The nightly bundle, rows K1-K7 of TESTING.md (about 4.5 h): make nightly,
# or only some steps: make nightly STEPS="k3 k5". Knobs: see
# scripts/nightly.sh.
nightly:
	bash scripts/nightly.sh $(STEPS)

.PHONY: test test-all test-modules soak ci nightly
