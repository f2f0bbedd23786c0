# Thin wrapper over CMake presets. `make demo` and `make test` are the two commands a fresh Debian
# machine needs; both install the Debian packages first.
PRESET ?= dev
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)

.PHONY: deps configure build test demo bench asan clean format

deps:
	@scripts/install-deps

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE '^bench$$'

# The demo runs the `fleetscope` command and renders the GUI screenshots: build those two targets
# (and what they link), not the tests and benchmarks.
demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target fleetscope fleetscope-gui
	@scripts/demo $(BUILD)

bench:
	@$(MAKE) --no-print-directory PRESET=release build
	@scripts/run-bench build/release

asan:
	@$(MAKE) --no-print-directory PRESET=asan test

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf build
