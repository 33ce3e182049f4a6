# Convenience targets for newcomers and CI; meson and ninja do the building.
#
#   make deps    install missing Debian packages (no apt call if none missing)
#   make build   configure build/ if needed, compile
#   make check   meson test three ways (plain, ASan+UBSan, valgrind), guests
#   make demo    boot a Linux guest under QEMU TCG that runs perf through vpmu
#   make bench   build and run the benchmarks (MSR, perf, ring buffer, KVM)
#   make qemu    build QEMU 10.2 + qemu-patches/ with libvpmu (docs/qemu.md)
#   make install libvpmu, vpmu-helper and its units, the QEMU binary, docs
#                (PREFIX=/usr/local, DESTDIR=, INSTALL_BUILD=; docs/deploy.md)
#   make deb     Debian packages with dpkg-buildpackage, into build-deb/
#                (DEB_OUT=; docs/deploy.md)
#   make clean   remove build/, build-asan/, build-install/ and build-deb/
#                (the test logs are in build/)
#
# make check RUNS="plain asan" runs a subset (plain, asan, valgrind, guest);
# V=1 shows every test's output.  One suite: meson test -C build --suite unit.

MESON ?= meson
RUNS ?=

# Targets run in the order written (deps before build before run).
.NOTPARALLEL:
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_BUILD ?= build-install
DEB_OUT ?= build-deb

.PHONY: all help deps build check demo bench qemu install deb clean

all: build

help:
	@sed -n '3,17s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

deps:
	@scripts/install-deps.sh

# Configure once; meson compile reconfigures when a meson.build changes.
build:
	@[ -f build/meson-private/coredata.dat ] || $(MESON) setup build
	$(MESON) compile -C build

# The guest run needs QEMU's build deps and firmware too.
check:
	@scripts/install-deps.sh qemu
	@scripts/check.sh $(RUNS)

# The main job: a Linux guest under QEMU TCG running perf through vpmu.
demo:
	@scripts/install-deps.sh qemu
	@scripts/demo.sh

# Every benchmark in build/bench/ (each prints its ratios); the guest ones
# take many minutes and are run by hand: bench/guest-overhead.sh (a Linux
# guest under TCG) and bench/nested-kvm.sh (KVM's emulated and mediated
# vPMUs and vpmu side by side, one level down).
bench: build
	@for b in bench-msr bench-perf bench-ringbuf bench-kvm; do \
	    if [ -x build/bench/$$b ]; then \
	        echo "== $$b"; build/bench/$$b || exit 1; echo; \
	    fi; \
	done

# Debian's QEMU source, patched with qemu-patches/, built in ~/.cache/vpmu
# (VPMU_CACHE) against libvpmu; the binary lands in build/qemu/.
qemu:
	@scripts/build-qemu.sh

# libvpmu, its headers and pkg-config file, vpmu-helper, its systemd units
# and default policy, the docs, and the QEMU binary of make qemu (its
# firmware path is built in: no -L needed), from a build directory of its
# own (INSTALL_BUILD), configured with PREFIX: build/ is never touched.
install:
	@scripts/install.sh "$(PREFIX)" "$(DESTDIR)" "$(INSTALL_BUILD)"

# The packages of debian/ (libvpmu0, libvpmu-dev, vpmu-helper, vpmu-tools,
# vpmu-doc; from HEAD) in DEB_OUT/vpmu/, and qemu-system-x86-vpmu
# (packaging/qemu-vpmu: Debian's qemu source and qemu-patches/, built in a
# clean bookworm chroot; make qemu first) in DEB_OUT/qemu/, built with
# dpkg-buildpackage and checked by lintian (scripts/make-deb.sh).
deb:
	@scripts/make-deb.sh --out "$(DEB_OUT)"

clean:
	rm -rf build build-asan build-install build-deb
