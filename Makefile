# DxPU: the two commands of the README, and a few for developers.
#   make demo   set up, build, and run the main job
#   make test   set up, build (release and ASan/UBSan), and run every test
#   make check  the inner loop: the release build and its unit, simulation and RTL tests (no
#               QEMU guests, source checks or RTL regression; under 5 minutes warm)
#   make lint   clang-format and clang-tidy over everything (before a commit)
JOBS ?= $(shell nproc)

.PHONY: all demo test check bench bootstrap release asan debug format tidy lint clean module

all: release

bootstrap:
	@tools/bootstrap

release debug asan: bootstrap
	cmake --preset $@ >/dev/null
	cmake --build --preset $@ -j $(JOBS)

demo: release
	build/release/tools/dxpu demo --out build/demo

test: release asan
	ctest --preset release -j $(JOBS)
	ctest --preset asan -j $(JOBS)

check: release
	ctest --preset release -j $(JOBS) -L '^(unit|sim|rtl|rtl-bridge)$$'

bench: release
	build/release/bench/dxpu_bench_tlp
	build/release/bench/dxpu_bench_link
	build/release/bench/dxpu_bench_fabric
	build/release/bench/dxpu_bench_bridge
	build/release/bench/dxpu_bench_box
	build/release/tools/dxpu bench gpu

# dxpu.ko (and dxpu_core_check.ko) against the installed Debian kernel headers, with the
# kernel's W=1 warnings and sparse: build/module/driver/dxpu.ko.
module: bootstrap
	bash tests/kbuild_check.sh $(CURDIR)/build/module
	@tools/module_kernel.sh build/module/driver/dxpu.ko || true

format:
	tools/lint format --fix

tidy: release
	tools/lint tidy build/release

# Before a commit: formatting and clang-tidy on every translation unit (make test runs
# clang-tidy on lib/core and bridge-fw only; docs/development.md).
lint: release
	tools/lint format
	tools/lint tidy build/release

clean:
	rm -rf build
