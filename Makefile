# Thin wrapper over CMake presets. `make demo` and `make test` are the two commands a fresh Debian
# machine needs; both install the Debian packages first (scripts/install-deps: only what the build
# and the tests need; `make test` adds a Prometheus server, `make fuzz` clang).
# They build the `quick` preset (build/quick: -O1, line tables only, about half the compile time of
# `dev`'s -O2 -g); `PRESET=dev make test` gives the developers' build (warnings are errors).
PRESET ?= quick
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)

.PHONY: deps configure build test demo bench asan fuzz clean format

deps:
	@scripts/install-deps

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Everything the tests run, but no benchmark (target fleetscope_test_build: all of the tree but
# bench/); bench-labelled tests are not run. The tests also need a real Prometheus server (one
# daemon test scrapes two fleetscoped with it), so `make test` installs that extra too.
test:
	@scripts/install-deps prometheus
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target fleetscope_test_build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE '^bench$$'

# The demo runs the `fleetscope` command first (import, analyze, report, plan, simulate), so a
# result shows as soon as that one program is built; then the GUI, for its screenshots.
demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target fleetscope
	@scripts/demo $(BUILD)
	@cmake --build $(BUILD) -j $(JOBS) --target fleetscope-gui
	@scripts/demo-gui $(BUILD)

bench:
	@$(MAKE) --no-print-directory PRESET=release build
	@scripts/run-bench build/release

asan:
	@$(MAKE) --no-print-directory PRESET=asan test

# libFuzzer targets (clang, installed here only): docs/fuzzing.md.
fuzz:
	@scripts/install-deps fuzz
	@cmake --preset fuzz >/dev/null
	@cmake --build build/fuzz -j $(JOBS) --target fleetscope_fuzz_kineto_json \
	  fleetscope_fuzz_nsys_sqlite fleetscope_fuzz_job_csv fleetscope_fuzz_candidates_json \
	  fleetscope_fuzz_thrift_frames

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf build
