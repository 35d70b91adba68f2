test:
	go test -race -count=1 ./...

soak:
	SMARTPOOL_SOAK=30m go test -run Soak -count=1 -v -timeout 40m .

ci:
	bash .ci/run

.PHONY: test soak ci
