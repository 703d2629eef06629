# The two set-up commands of README.md. Each installs what is missing (Debian), configures,
# builds, then runs: `make demo` the main job, `make test` the whole test suite (normal build,
# then AddressSanitizer + UndefinedBehaviorSanitizer build, then each libFuzzer target of
# tests/fuzz for FUZZ_SECONDS: `make fuzz`).
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
# `make test` fuzzes a fixed number of inputs from a fixed seed (the same inputs everywhere:
# reproducible); `make fuzz` alone explores for FUZZ_SECONDS from a random seed
FUZZ_TEST_RUNS ?= 60000
JOBS ?= $(shell nproc)
PACKAGES = cmake make gcc flex bison libcmocka-dev libxxhash-dev libpng-dev zlib1g-dev \
           llvm-14-dev libomp-dev libz3-dev libxml2-dev libtinfo-dev libffi-dev python3 pkg-config \
           libpetsc-real3.18-dev
# only for `make fuzz` (and so the end of `make test`): clang and its libFuzzer; the build itself is gcc's
FUZZ_PACKAGES = clang-14 libclang-rt-14-dev
FUZZ_CC ?= clang-14

.PHONY: all deps build demo test test-fast fipy-env python-test fuzz fuzz-run clean

all: build

deps:
	@missing=""; for p in $(PACKAGES) $(EXTRA_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get install -y -q $$missing >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q $$missing >/dev/null; } || \
	  { echo "apt-get could not install:$$missing"; exit 1; }; \
	fi

$(BUILD)/Makefile: CMakeLists.txt | deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPJ_WERROR=ON >/dev/null

build: deps $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

demo: build
	@./samples/demo.sh $(BUILD)/pdejit

# FiPy and SciPy from PyPI in their own environment, once, for the side-by-side FiPy tests
# (tests/fipy_meshes_test.sh); where pip cannot install them, those tests report Skipped.
FIPYENV ?= $(BUILD)/fipyenv
FIPY_PYTHON = $(abspath $(FIPYENV))/bin/python

fipy-env: build
	@[ -f $(FIPYENV)/.ready ] || { python3 -m venv $(FIPYENV) && $(FIPYENV)/bin/pip install -q fipy scipy && \
	  touch $(FIPYENV)/.ready; } || echo "fipy: FiPy could not be installed here: the side-by-side FiPy tests skip"

test-fast: build fipy-env
	@cd $(BUILD) && PDEJIT_FIPY_PYTHON=$(FIPY_PYTHON) ctest --output-on-failure -j $(JOBS)

# The Python package (python/): a virtual environment in the build folder (numpy, cffi, pytest from
# PyPI, once), the package built with cffi against this build's libpdejit.so, its pytest suite.
PYENV ?= $(BUILD)/pyenv
PACKAGES += python3-venv python3-dev
PYENV_ABS = $(abspath $(PYENV))
BUILD_ABS = $(abspath $(BUILD))

$(PYENV)/.ready:
	@python3 -m venv $(PYENV) && $(PYENV)/bin/pip install -q numpy cffi pytest setuptools wheel && touch $@

python-test: build $(PYENV)/.ready
	@PDEJIT_BUILD_DIR=$(BUILD_ABS) $(PYENV)/bin/pip install -q --no-build-isolation --no-deps --force-reinstall ./python
	@cd python/tests && PDEJIT_BINARY=$(BUILD_ABS)/pdejit PDEJIT_CACHE_DIR=$(BUILD_ABS)/tests/cache-python \
	  $(PYENV_ABS)/bin/pytest -q

test: test-fast python-test
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPJ_SANITIZE=ON -DPJ_STATIC_LLVM=OFF -DPJ_WERROR=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS) -- --no-print-directory
	@cd $(ASAN_BUILD) && export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  PDEJIT_FIPY_PYTHON=$(FIPY_PYTHON) && { ctest --output-on-failure -j $(JOBS) || python3 $(CURDIR)/tests/lsan_rerun.py; }
	@$(MAKE) --no-print-directory fuzz FUZZ_RUNS=$(FUZZ_TEST_RUNS)

# The libFuzzer targets (tests/fuzz, docs/fuzzing.md), built with clang in their own folder and
# run FUZZ_SECONDS each; fails when one finds a crash, a leak or undefined behaviour. Where clang
# with libFuzzer cannot be had (FUZZ_PACKAGES not installable), says so and skips.
fuzz:
	@$(MAKE) --no-print-directory deps EXTRA_PACKAGES="$(FUZZ_PACKAGES)" >/dev/null 2>&1 || \
	  $(MAKE) --no-print-directory deps
	@if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' | \
	     $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1; then \
	  echo "fuzz: skipped: $(FUZZ_CC) with libFuzzer is not available (packages: $(FUZZ_PACKAGES))"; \
	else $(MAKE) --no-print-directory fuzz-run; fi

fuzz-run:
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=$(FUZZ_CC) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPJ_FUZZ=ON -DPJ_WITH_PETSC=OFF \
	  -DPJ_STATIC_LLVM=OFF >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets -- --no-print-directory
	@FUZZ_RUNS=$(FUZZ_RUNS) ./tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
