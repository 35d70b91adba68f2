test:
	go test -race -count=1 ./...

soak:
	SMARTPOOL_SOAK=30m go test -run Soak -count=1 -v -timeout 40m .

ci:
	bash .ci/run

# The nightly bundle, rows K1-K7 of TESTING.md (about 4.5 h): make nightly,
# or only some steps: make nightly STEPS="k3 k5". Knobs: see
# scripts/nightly.sh.
nightly:
	bash scripts/nightly.sh $(STEPS)

.PHONY: test soak ci nightly
