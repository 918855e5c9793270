# DxPU: the two commands of the README, and a few for developers.
#   make demo   set up, build, and run the main job
#   make test   set up, build (release and ASan/UBSan), and run every test
#   make check  the inner loop: the release build and its unit, simulation and RTL tests (no
#               QEMU guests, source checks or RTL regression; under 5 minutes warm)
#   make test-kernel-debug  the kernel tests on a lockdep+KASAN kernel built from Debian's
#               source (the first run builds it: about 29 core-minutes; not in make test)
#   make lint   clang-format and clang-tidy over everything (before a commit)
#   make fuzz   libFuzzer campaigns: each target for FUZZ_SECONDS (300), FUZZ_TARGETS to pick
#               some (docs/fuzzing.md); make fuzz-corpus writes the seed corpora again
JOBS ?= $(shell nproc)

.PHONY: all demo test test-kernel-debug check bench bootstrap release asan debug format tidy lint \
  clean module fuzz fuzz-corpus

all: release

bootstrap:
	@tools/bootstrap

release debug asan: bootstrap
	cmake --preset $@ >/dev/null
	cmake --build --preset $@ -j $(JOBS)

demo: release
	build/release/tools/dxpu demo --out build/demo

test: release asan
	ctest --preset release -j $(JOBS) -LE '^kernel-debug$$'
	ctest --preset asan -j $(JOBS)

# The debug-kernel lane (docs/development.md, "The debug-kernel lane"): its own target, as its
# kernel build does not fit make test's time budget on a fresh machine.
test-kernel-debug: release
	ctest --preset release -j $(JOBS) -L '^kernel-debug$$'

# Long fuzzing campaigns (docs/fuzzing.md): the corpus grows in build/asan/tests/fuzz/campaign;
# make test runs each target briefly (label fuzz).
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?=
fuzz: asan
	tests/fuzz/campaign.sh build/asan $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The seed corpora from the project's own encoders (tests/fuzz/corpus_gen.cc), after a format
# changed; fuzz.corpus-current fails until they are written again and committed.
fuzz-corpus: asan
	rm -f tests/fuzz/corpus/*/gen-*
	build/asan/tests/fuzz/dxpu_fuzz_corpus tests/fuzz/corpus

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
# INSTALL_BUILD is the build installed. INSTALLED lists what the last make install without
# DESTDIR put in place: make uninstall removes that. A DESTDIR (staged) install lists its files in
# INSTALLED_DESTDIR instead and leaves INSTALLED as it was, so a package staged after a real
# install does not hide the real one from make uninstall. tests/tools/install_test.sh sets the
# three to its own, and SYSTEMCTL=true to leave systemd alone.
INSTALL_BUILD ?= build/release
INSTALLED ?= $(INSTALL_BUILD)/installed_files.txt
INSTALLED_DESTDIR ?= $(INSTALL_BUILD)/installed_files.destdir.txt
SYSTEMCTL ?= systemctl

install: release
	DESTDIR="$(DESTDIR)" cmake --install $(INSTALL_BUILD) --prefix "$(abspath $(PREFIX))"
	awk '{print "$(DESTDIR)" $$0}' $(INSTALL_BUILD)/install_manifest.txt \
	  >$(if $(DESTDIR),$(INSTALLED_DESTDIR),$(INSTALLED))
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then $(SYSTEMCTL) daemon-reload; fi
	@echo "Installed under $(DESTDIR)$(abspath $(PREFIX)); the daemons: docs/install.md"
	@if [ -n "$(DESTDIR)" ]; then \
	  echo "Staged: the files are listed in $(INSTALLED_DESTDIR); make uninstall does not touch them (it removes what $(INSTALLED) lists, the last install without DESTDIR)"; fi

uninstall:
	@test -f $(INSTALLED) || { echo "make uninstall: $(INSTALLED) is missing: nothing was installed with make install (without DESTDIR) from this tree; a DESTDIR install is not uninstalled (its files: $(INSTALLED_DESTDIR)), delete its directory" >&2; exit 1; }
	@if [ -d /run/systemd/system ]; then \
	  for u in $$(grep -E '^(/usr/local/lib|/usr/lib|/lib|/etc)/systemd/system/dxpu-[a-z]+\.service$$' $(INSTALLED)); do \
	    $(SYSTEMCTL) disable --now "$$(basename "$$u")" || true; done; fi
	@while IFS= read -r f; do rm -fv "$$f"; done <$(INSTALLED)
	@for d in $$(sed -n 's|/share/dxpu/.*||p; s|/share/doc/dxpu/.*||p' $(INSTALLED) | sort -u); do \
	  find "$$d/share/dxpu" "$$d/share/doc/dxpu" -depth -type d -empty -delete 2>/dev/null || true; done
	@if [ -d /run/systemd/system ]; then $(SYSTEMCTL) daemon-reload; fi
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
