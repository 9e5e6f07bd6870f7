# Developer commands. CI runs .ci/run (vet, gofmt, go test ./..., race).
GO ?= go
FUZZTIME ?= 60s
# Go's default minimization time (60s) can eat a whole short run.
FUZZMINTIME ?= 5s

.PHONY: test test-race lint fuzz bench bench-peers crash-long stress stress-race run tool-readme

test:
	$(GO) test ./...

test-race:
	$(GO) test -race ./...

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	@command -v staticcheck >/dev/null && staticcheck ./... || echo "staticcheck not installed; skipped"

# Runs every fuzz target for FUZZTIME each (go test -fuzz runs one target at a time).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) $$pkg || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./...

# The peer benchmark (bench/peers, its own module): sieve, Pebble, goleveldb, Badger.
bench-peers:
	cd bench/peers && $(GO) run . -n=1000000 -engines=sieve,sieve-cuckoo,pebble,pebble-l6f,goleveldb,badger,pebble2

# Long crash test: 30,000 writes (the default run makes 3,000), every
# distinct crash clone reopened read-only and read-write. The figures in
# README.md's Reliability table come from this target.
crash-long:
	SIEVE_CRASH_OPS=30000 $(GO) test -run '^TestCrashRecovery$$' -count=1 -timeout 60m -v .

# Long concurrent stress test with the expected-state oracle (stress_test.go):
# 24 writers, 8 readers and a maintainer on 2 cores, 8 rounds of 30 s.
stress:
	SIEVE_STRESS_LONG=1 $(GO) test -run 'TestStress$$' -timeout 60m -v .

# The same under the race detector, which also checks the lock order.
stress-race:
	SIEVE_STRESS_LONG=1 $(GO) test -race -run 'TestStress$$' -timeout 90m -v .

run:
	$(GO) run ./cmd/lsmbench

# Regenerates the sample output in cmd/sieve/README.md, the picture
# cmd/sieve/lsm-sample.svg and README.md's "sieve lsm" sample from a newly
# generated database.
tool-readme:
	$(GO) test ./cmd/sieve -run '^TestREADME$$' -update -count=1
