# Thin wrapper over CMake. The two commands of README.md:
#   make bench   installs what is missing, builds, runs the node simulation
#   make test    installs what is missing, builds with -Werror and runs the
#                whole suite: plain, ASan+UBSan, TSan stress, reliability tiers
# Only these two, and `make deps`, install packages (scripts/deps.sh: apt,
# and Go through pip where no Go >= 1.21 is found). Every other target
# installs nothing: it stops with a message naming `make deps` when a tool
# it needs is missing.
# Other targets: build, check (plain suite only), bench-suite, gpu-check,
#                test-go / bench-go (the Go binding, bindings/go, and its
#                Prometheus collector, bindings/go/promcollector),
# package (Debian packages libaccel0 and libaccel-dev in build-pkg/), clean.
JOBS    ?= $(shell nproc)
BUILD   ?= build
CMAKE_FLAGS ?=
NODESIM_ARGS ?=

.PHONY: all deps need need-go test-all bench-run build check test test-plain test-asan test-tsan test-reliability \
        test-go test-go-asan bench-go test-package package bench bench-suite gpu-check install clean

# The Go binding's commands: the Go that scripts/deps.sh installed (if it
# had to) comes first, and the promtool it unpacked (if none was on PATH)
# last; no toolchain switching and no module downloads (the package uses
# the standard library only).
GO_ENV = PATH="$(CURDIR)/.tools/go/bin:$$PATH:$(CURDIR)/.tools/prometheus/usr/bin" GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod

all: build

deps:
	@scripts/deps.sh

# The checks the other targets make instead of installing.
need:
	@command -v cmake >/dev/null 2>&1 || { echo "make: cmake not found;" \
	  "run 'make deps' (scripts/deps.sh) to install what is missing" >&2; exit 1; }

need-go:
	@$(GO_ENV) go version >/dev/null 2>&1 || { echo "make: no go on PATH or in .tools/go;" \
	  "run 'make deps' (scripts/deps.sh) to install Go >= 1.21" >&2; exit 1; }

build: need
	cmake -S . -B $(BUILD) -DACCEL_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# The plain suite: Criterion units, stress programs, bench smoke runs.
check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# README's test command: installs what is missing, then runs every tier.
test: deps
	@$(MAKE) --no-print-directory test-all

# The tiers one at a time even under an inherited -j: each already uses
# every core, and tiers side by side would shift what their tests count.
.NOTPARALLEL:
test-all: check test-asan test-tsan test-reliability test-package test-go test-go-asan
	@echo "make test: all tiers passed"

test-plain: check

test-asan: need
	cmake -S . -B $(BUILD)-asan -DACCEL_WERROR=ON -DACCEL_SANITIZE=address,undefined \
	      -DACCEL_WITH_CUDA=OFF -DACCEL_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

# Criterion cannot run under TSan: the TSan build registers only the plain
# stress programs (tests/CMakeLists.txt).
test-tsan: need
	CC=clang cmake -S . -B $(BUILD)-tsan -DACCEL_WERROR=ON -DACCEL_SANITIZE=thread -DACCEL_STRESS_SECONDS=5 \
	      -DACCEL_WITH_CUDA=OFF -DACCEL_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-tsan -j $(JOBS)
	cd $(BUILD)-tsan && ctest --output-on-failure -L stress

test-reliability: need
	@if [ -x scripts/reliability-ci.sh ]; then scripts/reliability-ci.sh; \
	 else echo "reliability tiers: scripts/reliability-ci.sh not present"; fi

# The Go package compiles the C runtime itself (cgo); -race checks the Go
# side (the C side has its own TSan tier).
# -p 1: the packages one after another: the node example's crypto load
# beside the binding's tests would shift what those tests count.
test-go: need-go
	cd bindings/go && $(GO_ENV) go vet ./... && $(GO_ENV) go test -race -count=1 -p 1 -timeout 20m ./...
	cd bindings/go && $(GO_ENV) go test -race -count=1 -tags accel_plant -timeout 5m \
	  -run '^(TestRuntimeCloseWaitsForAnInOpCloseRelease|TestRacingClosesReleaseOnce)$$' .
	$(GO_ENV) bindings/go/promcollector/test.sh -race -count=1 -timeout 5m

# The Go tests once more with the C side (and cgo's checks of Go memory)
# under AddressSanitizer: a use of a freed session or runtime from Go is
# caught here (go test -asan; not combinable with -race).
test-go-asan: need-go
	cd bindings/go && $(GO_ENV) CC=$${CC:-gcc} go test -asan -count=1 -p 1 -timeout 20m ./...

# The Go benchmarks against their same-run baselines, as a table: once
# with Go's default GOMAXPROCS, once with 2 more Ps for the 2 workers'
# callbacks (docs/go.md). BENCH_GO_REPS: interleaved repetitions.
BENCH_GO_REPS ?= 5
bench-go: need-go
	cd bindings/go && $(GO_ENV) ACCEL_BENCH_GO=1 ACCEL_BENCH_REPS=$(BENCH_GO_REPS) \
	  go test -run '^TestBenchTable$$' -count=1 -timeout 60m
	cd bindings/go && $(GO_ENV) ACCEL_BENCH_GO=1 ACCEL_BENCH_REPS=$(BENCH_GO_REPS) \
	  GOMAXPROCS=$$(( $$(nproc) + 2 )) go test -run '^TestBenchTable$$' -count=1 -timeout 60m

# Debian packages from a /usr-prefixed Release build (CPU backend; the
# CUDA backend joins when ACCEL_WITH_CUDA finds a toolkit, as everywhere).
package: need
	cmake -S . -B $(BUILD)-pkg -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
	      -DACCEL_WERROR=ON -DACCEL_BUILD_TESTS=OFF -DACCEL_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-pkg -j $(JOBS)
	cd $(BUILD)-pkg && cpack -G DEB

# Installs the packages into a scratch root and builds a program against them.
test-package: package
	scripts/package-test.sh $(BUILD)-pkg

# The node simulation: all scenarios (real op bodies where libsodium and
# libsecp256k1 are installed, scripts/deps.sh installs them), ~4.5 minutes
# (the batch scenario's five loads ~1.5 of them);
# charts (PNG) into $(BUILD)-release/nodesim-charts, JSON lines beside
# them. The build's sub-makes do not print their "Entering directory"
# lines (--no-print-directory, through GNUMAKEFLAGS: MAKEFLAGS ends with
# the command line's variables, where a flag appended would be ignored).
bench: deps
	@$(MAKE) --no-print-directory bench-run

bench-run: need
	@cmake -S . -B $(BUILD)-release -DCMAKE_BUILD_TYPE=Release -DACCEL_BUILD_TESTS=OFF $(CMAKE_FLAGS) >/dev/null
	@GNUMAKEFLAGS=--no-print-directory cmake --build $(BUILD)-release -j $(JOBS)
	$(BUILD)-release/bench/accel-nodesim --out $(BUILD)-release/nodesim-charts \
	    --json $(BUILD)-release/nodesim-charts/results.jsonl $(NODESIM_ARGS)

bench-suite: need
	cmake -S . -B $(BUILD)-release -DCMAKE_BUILD_TYPE=Release -DACCEL_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-release -j $(JOBS)
	bench/run-all.sh $(BUILD)-release

# The device run's bundle (docs/cuda.md), built and run here: on a machine
# without a GPU every device step reports skipped.
gpu-check: need
	scripts/build-gpu-bundle.sh
	scripts/gpu-check.sh build-gpu-bundle/bundle

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-release $(BUILD)-pkg
