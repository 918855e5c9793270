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

# make install [PREFIX=/usr/local] [DESTDIR=DIR]: the five programs, the Wireshark dissector, the
# examples, the docs and the daemons' systemd units and options files (cmake/install.cmake,
# docs/install.md); make uninstall removes what it installed (the options files in /etc/default
# stay, as a Debian package's conffiles do). make module-install: dxpu.ko into
# /lib/modules/KVER/extra for the kernel it was built for, then depmod.
.PHONY: install uninstall module-install module-uninstall
PREFIX ?= /usr/local
INSTALLED = build/release/installed_files.txt

install: release
	DESTDIR="$(DESTDIR)" cmake --install build/release --prefix "$(abspath $(PREFIX))"
	awk '{print "$(DESTDIR)" $$0}' build/release/install_manifest.txt >$(INSTALLED)
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
	@echo "Installed under $(DESTDIR)$(abspath $(PREFIX)); the daemons: docs/install.md"

uninstall:
	@test -f $(INSTALLED) || { echo "make uninstall: $(INSTALLED) is missing: nothing was installed with make install from this tree" >&2; exit 1; }
	@if [ -d /run/systemd/system ]; then \
	  for u in $$(grep -E '^(/usr/local/lib|/usr/lib|/lib|/etc)/systemd/system/dxpu-[a-z]+\.service$$' $(INSTALLED)); do \
	    systemctl disable --now "$$(basename "$$u")" || true; done; fi
	@while IFS= read -r f; do rm -fv "$$f"; done <$(INSTALLED)
	@for d in $$(sed -n 's|/share/dxpu/.*||p; s|/share/doc/dxpu/.*||p' $(INSTALLED) | sort -u); do \
	  find "$$d/share/dxpu" "$$d/share/doc/dxpu" -depth -type d -empty -delete 2>/dev/null || true; done
	@if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
	rm -f $(INSTALLED)

module-install: module
	@kver=$$(modinfo -F vermagic build/module/driver/dxpu.ko | awk '{print $$1}'); \
	  test -n "$$kver" || { echo "no kernel version in build/module/driver/dxpu.ko" >&2; exit 1; }; \
	  install -v -D -m 644 build/module/driver/dxpu.ko "$(DESTDIR)/lib/modules/$$kver/extra/dxpu.ko"; \
	  if [ -z "$(DESTDIR)" ]; then depmod -a "$$kver" && echo "modprobe dxpu ifname=... loads it (docs/install.md)"; fi

module-uninstall:
	@kver=$$(modinfo -F vermagic build/module/driver/dxpu.ko | awk '{print $$1}'); \
	  test -n "$$kver" || { echo "no kernel version in build/module/driver/dxpu.ko" >&2; exit 1; }; \
	  rm -fv "$(DESTDIR)/lib/modules/$$kver/extra/dxpu.ko"; \
	  if [ -z "$(DESTDIR)" ]; then depmod -a "$$kver"; fi
