# The two set-up commands of README.md. Each installs what is missing (Debian), configures,
# builds, then runs: `make demo` the main job, `make test` the whole test suite (normal build,
# then AddressSanitizer + UndefinedBehaviorSanitizer build, then each libFuzzer target of
# tests/fuzz for FUZZ_SECONDS: `make fuzz`).
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS ?= $(shell nproc)
PACKAGES = cmake make gcc flex bison libcmocka-dev libxxhash-dev libpng-dev zlib1g-dev \
           llvm-14-dev libomp-dev libz3-dev libxml2-dev libtinfo-dev libffi-dev python3 pkg-config \
           clang-14 libclang-rt-14-dev

.PHONY: all deps build demo test test-fast fuzz clean

all: build

deps:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get install -y -q $$missing >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q $$missing >/dev/null; } || \
	  { echo "apt-get could not install:$$missing"; exit 1; }; \
	fi

$(BUILD)/Makefile: CMakeLists.txt | deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: deps $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

demo: build
	@./samples/demo.sh $(BUILD)/pdejit

test-fast: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test: test-fast
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPJ_SANITIZE=ON -DPJ_STATIC_LLVM=OFF >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS) -- --no-print-directory
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory fuzz

# The libFuzzer targets (tests/fuzz, docs/fuzzing.md), built with clang in their own folder and
# run FUZZ_SECONDS each; fails when one finds a crash, a leak or undefined behaviour.
fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPJ_FUZZ=ON \
	  -DPJ_STATIC_LLVM=OFF >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets -- --no-print-directory
	@./tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
