# orderwire: the two commands of the README, and a few more for developers.
#
#   make demo    install what is missing, build, run the main job
#   make test    install what is missing, build, run the whole test suite
#
# Others: make build, make asan-build and make fuzz-build (build only),
# make demo-cluster (a replicated primary and standby
# on a loopback 3-node NATS cluster: the primary killed, the standby takes
# over, the old primary rejoins), make asan (tests under ASan+UBSan), make fuzz
# (libFuzzer targets, FUZZ_SECONDS each), make bench, make format, make lint
# (layering, function length, clang-format check, clang-tidy), make torture (the reliability
# run, docs/RELIABILITY.md), make install-check (install into a temporary
# prefix, build examples/trader against it, trade with the installed serve),
# make clean.

JOBS ?= 2
FUZZ_SECONDS ?= 30
BUILD := build/release

.PHONY: all setup build demo demo-cluster test asan asan-build fuzz fuzz-build \
        bench torture format lint \
        lint-layering lint-functions lint-format lint-tidy install-check clean

all: build

setup:
	@scripts/setup.sh

build: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

demo-cluster: build
	@scripts/demo_cluster.sh $(BUILD)

# The NATS tests run beside the others (scripts/run_ctest.sh says why).
# Every skipped test is listed with its reason; one that is not in
# tests/skips_allowed.txt fails the run (scripts/check_skips.py).
test: build
	@scripts/run_ctest.sh release $(BUILD)

asan: asan-build
	@scripts/run_ctest.sh asan build/asan

# The sanitizer tree is clang's and holds the libFuzzer targets too
# (scripts/fuzz.sh build/asan SECONDS runs them); make fuzz-build builds
# the fuzz targets alone, in build/fuzz.
asan-build:
	@scripts/setup.sh fuzz
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

fuzz: fuzz-build
	@scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS)

fuzz-build:
	@scripts/setup.sh fuzz
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)

bench: build
	@scripts/bench.sh $(BUILD)

torture: build
	@scripts/torture.sh $(BUILD)

# The installed package as a user sees it: scripts/check_install.sh.
install-check: build
	@JOBS=$(JOBS) scripts/check_install.sh $(BUILD)

format:
	@scripts/setup.sh lint
	@git ls-files --cached --others --exclude-standard '*.h' '*.cc' | xargs clang-format -i

# Static checks; each fails on any finding. lint-tidy needs only a configured
# build/release (its compile_commands.json), not a built one; it takes a few
# minutes (one file at a time; TIDY_JOBS=2 to use two cores).
lint: lint-layering lint-functions lint-format lint-tidy

lint-layering:
	@scripts/check_layering.sh

lint-functions:
	@scripts/lint.sh functions

lint-format:
	@scripts/setup.sh lint
	@scripts/lint.sh format

lint-tidy: setup
	@scripts/setup.sh lint
	@cmake --preset release >/dev/null
	@scripts/lint.sh tidy $(BUILD)

clean:
	rm -rf build
