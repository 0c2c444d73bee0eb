# Torsor top-level commands. `make demo` and `make test` are the contract
# (docs: README.md); everything else here is a convenience.
BUILD ?= build
JOBS ?= $(shell nproc)
PYTHON ?= $(shell command -v python3)
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_DIR ?= $(HOME)/.cache/torsor-ccache
export CCACHE_NOHASHDIR := 1

.PHONY: all deps configure build test demo train-demo format check-format clean \
	test-sanitize build-sanitize fuzz fuzz-nightly

all: build

deps:
	@PYTHON=$(PYTHON) scripts/setup-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
	  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
	  -DLLVM_USE_LINKER=lld \
	  -DPython3_EXECUTABLE=$(PYTHON)

configure: deps $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@$(PYTHON) scripts/demo.py --build $(BUILD)

# Trains the causal Grassmann LM on a public-domain text (docs/training.md);
# the loss curve goes to bench/results/train_grassmann_lm.csv
# (bench/plot_train_loss.py draws it).
train-demo: build
	@TORSOR_BUILD_DIR=$(abspath $(BUILD)) $(PYTHON) examples/train_grassmann_lm.py \
	  --log bench/results/train_grassmann_lm.csv \
	  --checkpoint $(BUILD)/train_grassmann_lm.safetensors

# Trains the SE(3) pose-attention example on a synthetic task whose answer
# depends only on relative poses (docs/training.md; about a minute on 2
# cores); the loss curve goes to bench/results/train_se3_pose.csv.
.PHONY: train-pose-demo
train-pose-demo: build
	@TORSOR_BUILD_DIR=$(abspath $(BUILD)) $(PYTHON) examples/train_se3_pose.py \
	  --log bench/results/train_se3_pose.csv \
	  --checkpoint $(BUILD)/train_se3_pose.safetensors

format:
	@scripts/check-format.sh --fix

check-format:
	@scripts/check-format.sh

clean:
	rm -rf $(BUILD) $(SAN_BUILD)

# Reliability (docs/reliability.md): one ASan+UBSan build with libFuzzer
# instrumentation, shared by the sanitizer suites and the fuzz targets.
SAN_BUILD ?= build-san
FUZZ_SECONDS ?= 60

$(SAN_BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(SAN_BUILD) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
	  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
	  -DLLVM_USE_LINKER=lld \
	  -DTORSOR_SANITIZE=ON -DTORSOR_FUZZ=ON \
	  -DPython3_EXECUTABLE=$(PYTHON)

build-sanitize: deps $(SAN_BUILD)/build.ninja
	ninja -C $(SAN_BUILD) -j $(JOBS)

# The unit and lit suites with our code under ASan and UBSan.
test-sanitize: build-sanitize
	@scripts/test-sanitize.sh $(SAN_BUILD) $(JOBS)

# Every torsor-fuzz-* target for FUZZ_SECONDS on its seed corpus, then the
# Python layer's tensor-conversion property test (fuzz-python).
fuzz: build-sanitize
	@scripts/fuzz.sh $(SAN_BUILD) $(FUZZ_SECONDS)
	@$(MAKE) --no-print-directory fuzz-python FUZZ_SECONDS=$(FUZZ_SECONDS)

# The Python layer's tensor conversion (docs/reliability.md): the seeded
# property test of test/Python/test_tensor_property.py with about
# FUZZ_SECONDS x 1000 random arrays and views per kind (PYTHON with torch
# adds the torch cases).
.PHONY: fuzz-python fuzz-nightly
fuzz-python: build
	TENSOR_PROPERTY_CASES=$$(( $(FUZZ_SECONDS) * 1000 )) \
	  TENSOR_PROPERTY_SEED=$${FUZZ_SEED:-1} \
	  $(PYTHON) test/Python/run_tests.py --build $(BUILD) --in-place -k test_tensor_property

# The nightly run (not in CI): every target for FUZZ_NIGHTLY_SECONDS with a
# fresh seed, growing a corpus kept between nights in
# $(SAN_BUILD)/fuzz-corpus/. Expected execution counts: docs/reliability.md.
FUZZ_NIGHTLY_SECONDS ?= 1800
fuzz-nightly: build-sanitize
	@FUZZ_SEED=0 FUZZ_KEEP_CORPUS=$(abspath $(SAN_BUILD))/fuzz-corpus \
	  scripts/fuzz.sh $(SAN_BUILD) $(FUZZ_NIGHTLY_SECONDS)
