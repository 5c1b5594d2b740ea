# Thin wrapper over CMake. `make run` and `make test` do all set-up on a
# fresh Debian 12 machine (they install missing packages first).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
# make test runs every fuzz target this long (seconds), make fuzz as long as
# FUZZ_SECONDS says, over the targets named in FUZZ_TARGETS (default: all).
FUZZ_TEST_SECONDS ?= 10
FUZZ_TARGETS ?=
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
RUN_MODEL  ?= $(BUILD)/models/resnet_blocks.onnx

.PHONY: all deps build run test test-unit test-asan test-fuzz fuzz-build bench bench-tune bench-load-harness fuzz format clean install

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Installs the tool, the library, its header and pkg-config file, and the
# Python front where Debian's python3 finds it (PREFIX=/usr/local).
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Benchmarks a bundled model under tier 2: the fp32 option of every runtime
# this machine has and the reduced precisions (int8, bf16, fp16) its CPU
# runs natively, timed briefly (about half a minute on 2 cores), and ends
# with the recommendation. RUN_ARGS replaces the selection and timing.
RUN_ARGS   ?= --tier 2 --min-time 0.5 --warmup-time 0.2
run: build
	$(BUILD)/bin/modelbench bench $(RUN_MODEL) $(RUN_ARGS) --json $(BUILD)/run.json

test: export MB_WITH_TORCH = 1
test: export MB_WITH_TORCH2 = 1
test: export MB_WITH_BROWSER = 1
test: export MB_WITH_SLURM = 1
test: export MB_REQUIRE_ORT = 1
test: export MB_REQUIRE_OPENVINO = 1
test: export MB_WITH_FUZZ = 1
test: export MB_WITH_QEMU = 1
test: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory test-asan
	@$(MAKE) --no-print-directory test-fuzz

test-unit:
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) || { $(CURDIR)/tools/ctest_failures.sh .; exit 1; }

# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer
# (tests/lsan.supp: leaks inside third-party libraries, never ours); the
# zoo's PyTorch exports are the normal build's, made by test-unit.
test-asan:
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMB_SANITIZE=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && MB_ZOO_CACHE=$(CURDIR)/$(BUILD)/torch_zoo ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j$(JOBS) || { $(CURDIR)/tools/ctest_failures.sh .; exit 1; }

bench: build
	bench/run.sh $(BUILD)

# modelbench tune on ResNet-18 (empty and warm cache), ResNet-50, ViT and
# Swin-T with natural images (issue 29); also the last part of `make bench`.
bench-tune: build
	bench/tune.sh $(BUILD)

# The server scenario's harness against an ideal queue (issue 30 item 8):
# resnet_blocks under ORT_CPU at 30% load, p99 vs the ideal p99, the
# generator's lateness and the hand-off delay.
bench-load-harness: build
	bench/load_harness.sh $(BUILD)

# Every fuzz target (clang, libFuzzer, ASan+UBSan), built as `make test`
# builds them, so a target that stops building fails the suite.
fuzz-build:
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMB_FUZZ=ON -DMB_BUILD_TESTS=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_targets

# A short run of every target over its seeds and saved crashes; the fixed
# seed makes a failure here repeat on the next run. Seeds of some targets
# are written by the normal build's tool and models (fuzz/make_corpus.sh).
test-fuzz: fuzz-build
	MB_FUZZ_MODELS=$(BUILD)/models FUZZ_FLAGS="-seed=1 $${FUZZ_FLAGS:-}" fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_TEST_SECONDS) $(FUZZ_TARGETS)

fuzz: export MB_WITH_FUZZ = 1
fuzz: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory fuzz-build
	MB_FUZZ_MODELS=$(BUILD)/models fuzz/run.sh $(FUZZ_BUILD) $${FUZZ_SECONDS:-60} $(FUZZ_TARGETS)

format:
	clang-format -i include/*.h src/*/*.[ch] src/*/*/*.[ch] tests/*.[ch] tools/*.c bench/*.c fuzz/*.[ch] fuzz/targets/*.c examples/*.c 2>/dev/null || true

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
