# orderwire: the two commands of the README, and a few more for developers.
#
#   make demo    install what is missing, build, run the main job
#   make test    install what is missing, build, run the whole test suite
#
# Others: make build, make asan (tests under ASan+UBSan), make fuzz
# (libFuzzer targets, FUZZ_SECONDS each), make bench, make format, make clean.

JOBS ?= 2
FUZZ_SECONDS ?= 30
BUILD := build/release

.PHONY: all setup build demo test asan fuzz bench format clean

all: build

setup:
	@scripts/setup.sh

build: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@ctest --preset release

asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	@ctest --preset asan

fuzz:
	@scripts/setup.sh fuzz
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)
	@scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS)

bench: build
	@scripts/bench.sh $(BUILD)

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf build
