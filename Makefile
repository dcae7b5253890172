# kvm-mmu-series: the front door. Every target is a thin call into lab/.
#
# BASE=6.12 (the default) or BASE=7.3 on any target: the base it works on
# (bases/<base>.toml), with its own series (patches/<base>/), lists
# (testlists/<base>/), bench data (bench/<base>/) and build/<base>/.
#
#   make test [BASE=..] [TEST_ARCH=..] [TEST_JOBS=n] [FULL=1] [TEST_BOOT=..] [VARIANT=vanilla]
#             [REBUILD=1]
#                                  pytest, then per base (each base without BASE, one
#                                  after the other): make check + build, boot and
#                                  selftest each arch (side by side, n at once; FULL=1
#                                  adds the long matrices; vanilla: the base, the
#                                  series' tests skipped; a kernel or selftests build
#                                  of the same sources as an earlier one is reused,
#                                  REBUILD=1 builds them again)
#   make pytest                    the harness's own tests, ruff and shellcheck (about 20 s)
#   make check [REBUILD=1]         checkpatch, git am + quilt, each patch built alone
#   make series TOPIC=... [VERSION=n]   send-ready mail folder in build/<base>/series/
#   make bench [BENCH=quick|default|full] [SCENARIO=topic/name]   each scenario's sides,
#                                  report in results/; default: each topic's counts and
#                                  emulated time (~16 min), full: + host-clock times (~1.4 h)
#   make bench-native LABEL=... KVM_SELFTESTS=dir ; make compare A=... B=...
#   make tree / make export        build/<base>/linux from patches/<base>/, and back
#   make topics                    per topic, the bases that carry it, and per patch whether
#                                  the other base's version is the same change, a port or none
#   make kernel ARCH=arm64 VARIANT=vanilla [DEBUG=1]   (or a variant of bench/<base>/variants.toml)
#   make deb ARCH=x86_64|arm64 [CONFIG=distro|test]   make bindeb-pkg of the patched tree:
#                                  linux-image, linux-headers, linux-libc-dev in
#                                  build/<base>/debs/<arch>-<config>/; distro (the default):
#                                  Debian's config of the base (bases/<base>.toml) with
#                                  configs/common + <arch>, olddefconfig (hours here); test:
#                                  make test's kernel's config, minutes with ccache
#   make check-distro-config       Debian's config of each arch with configs/common + <arch>,
#                                  olddefconfig: fails naming each option of theirs it
#                                  dropped or changed (seconds; make check does it too)
#   make run ARCH=.. BOOT=<boot> TEST=a[,b] [ARGS=".."] [KERNEL_ARGS=".."] [SELFTESTS=<tree>]
#            [VARIANT=vanilla]     those tests in one boot of make test's kernel, KTAP out
#                                  (no pytest, no check); SELFTESTS: another tree's kvm selftests;
#                                  VARIANT: another kernel (vanilla: is a failure the base's?)
#   make shell ARCH=.. [BOOT=..] [SELFTESTS=..] [VARIANT=..]   that guest's console, /kselftest/kvm
#   make list                      each arch's boots and tests
#   make kselftest-tar ARCH=.. [HOST=<host>]   make test's kvm selftests of ARCH as a kselftest
#                                  bundle, build/<base>/kselftest-<arch>[-<host>].tar.gz; HOST: a
#                                  [[host]] of the list (make list), ./run_kselftest.sh runs its tests
#   make lava [KERNEL_URL=..] [ROOTFS_URL=..] [KSELFTEST_URL=..]   LAVA jobs of every
#                                  boot in build/<base>/lava/: QEMU (make test's kernel
#                                  and initramfs) and each real device of lab/lava/
#   make lava-run ARCH=.. BOOT=.. [NO_BUILD=1] [AGAINST=<results dir>]   that boot's QEMU
#                                  job run by lava-dispatcher from Debian here, as root
#                                  (unpacked into the cache, nothing installed); KTAP out and
#                                  compared with make test's newest run of the boot or AGAINST
#                                  (builds make test's kernel and initramfs as make run does,
#                                  unless NO_BUILD=1)
#   python3 -m lab parse <console.log>   judge a saved console again (python3 -m lab --help)
#
# Overrides: BASE_TARBALL=/path/linux.tar.xz or BASE_TREE=/path/to/linux use
# your own source as the base instead of bases/<base>.toml's Debian package
# (with BASE=: one source is one base's, never every base's);
# JOBS=n: make -jn for the kernel and selftests builds (a shared machine).

ARCH    ?= x86_64
VARIANT ?= patched
DEBUG   ?=
FORCE   ?=
PYTHON  ?= python3
VENV    := build/venv

# Empty: lab's default base (lab/paths.py).
BASE    ?=
export LAB_BASE := $(BASE)
# make test's bases: BASE, else every base, the default first (python3 -m lab bases).
TEST_BASES = $(or $(BASE),$(shell $(LAB) bases))
ifneq ($(BASE_TARBALL)$(BASE_TREE),)
ifeq ($(BASE),)
$(error BASE_TARBALL and BASE_TREE replace one base's source: say which, e.g. BASE=7.3)
endif
endif
export LAB_BASE_TARBALL := $(BASE_TARBALL)
# make's -j of the kernel and selftests builds (default: the cores and one).
export LAB_JOBS := $(JOBS)
export LAB_BASE_TREE := $(BASE_TREE)
# REBUILD=1: build again what a cache of earlier builds holds (make test's
# kernels and selftests, lab/buildcache.py; make check's per-patch builds);
# CHECK_REBUILD=1: only make check's.
export LAB_REBUILD := $(REBUILD)
export LAB_CHECK_REBUILD := $(or $(CHECK_REBUILD),$(REBUILD))

# make deb's config: distro or test (lab/deb.py).
CONFIG  ?= distro
BENCH   ?= default
LAB := $(PYTHON) -m lab
# Commands that plot use the venv's Python, which has matplotlib.
VLAB := $(VENV)/bin/python -m lab

.PHONY: all deps venv base tree export kernel selftests test check pytest bench bench-native \
	compare series clean help run shell list topics lava lava-run deb check-distro-config

# The comment block at the top, up to the first blank line.
help:
	@sed -n '2,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@$(LAB) deps --install

# pytest in a venv, pinned by requirements.txt; rebuilt when that file changes.
$(VENV)/.stamp: requirements.txt
	@$(PYTHON) -m venv $(VENV) || { echo "error: $(PYTHON) -m venv failed (apt-get install python3-venv)"; exit 1; }
	@$(VENV)/bin/pip install -q -r requirements.txt || { echo "error: pip install -r requirements.txt failed"; exit 1; }
	@touch $@

venv: $(VENV)/.stamp

base:
	@$(LAB) base

tree:
	@$(LAB) tree $(if $(FORCE),--force)

# make test's trees, one per base: tree-6.12, tree-7.3.
tree-%:
	@LAB_BASE=$* $(LAB) tree $(if $(FORCE),--force)

topics:
	@$(LAB) topics

export:
	@$(LAB) export

kernel: tree
	@$(LAB) kernel --arch $(ARCH) --variant $(VARIANT) $(if $(DEBUG),--debug)

selftests: kernel
	@$(LAB) selftests --arch $(ARCH) --variant $(VARIANT) $(if $(DEBUG),--debug)

deb: tree
	@$(LAB) deb --arch $(ARCH) --config $(CONFIG)

check-distro-config: tree
	@$(LAB) distro-config

pytest: venv
	@$(VENV)/bin/python -m pytest -q -rs tests

check: deps venv tree
	@$(LAB) check

series: tree
	@test -n "$(TOPIC)" || { echo "error: set TOPIC=<folder of patches/>"; exit 1; }
	@$(LAB) series --topic $(TOPIC) --version $(or $(VERSION),1)

# The README's test command, which .ci/run calls (make check runs inside it).
# The venv and pytest use one core, the tree imports the other: side by side.
# Then each base's run, one after the other (each keeps both cores busy);
# every base runs, and the exit code is 0 only if every base passed.
# TEST_BOOT: an arch or a base none of whose lists has any of the boots is
# skipped, one line each; a boot no list of TEST_BASES has is an error.
# FULL=1 (of the patched series): each base's run is followed by one boot
# of it under Debian's lava-dispatcher (make lava-run; the boot is
# lab/lava/dispatcher.toml's full_boot, with that run's kernel and
# initramfs, its pass set beside the run's; as root only, and the first run
# fetches Debian's packages and PyPI's: another user gets one line, not a failure).
test: deps
	@test -n "$(TEST_BASES)" || { echo "error: no base to test ($(LAB) bases named none)"; exit 1; }
	@$(MAKE) --no-print-directory -j2 pytest $(addprefix tree-,$(TEST_BASES))
	@rc=0; failed=; for b in $(TEST_BASES); do \
		LAB_BASE=$$b $(LAB) test $(if $(TEST_ARCH),--arch $(TEST_ARCH)) \
			$(if $(TEST_JOBS),--jobs $(TEST_JOBS)) $(if $(FULL),--full) \
			$(foreach bt,$(TEST_BOOT),--boot $(bt)) --bases "$(TEST_BASES)" \
			--variant $(VARIANT) || { rc=1; failed="$$failed $$b"; }; \
		$(if $(and $(FULL),$(filter patched,$(VARIANT))),LAB_BASE=$$b $(LAB) lava-run --full \
			|| { rc=1; failed="$$failed $$b(lava-run)"; };) \
	done; \
	if [ -n "$$failed" ]; then echo "make test: failed on base(s):$$failed" >&2; fi; exit $$rc

# The fast loop: no make tree (the tree may hold commits not yet exported),
# no pytest, no make check; kbuild rebuilds what is stale. ARGS, when given
# (even empty), replaces the list's arguments of every named test.
run:
	@test -n "$(TEST)" || { echo "error: set TEST=<name>[,<name>...] (and BOOT=<boot>; make list shows them)"; exit 1; }
	@$(LAB) run --arch $(ARCH) $(if $(BOOT),--boot $(BOOT)) --test "$(TEST)" \
		$(if $(filter undefined,$(origin ARGS)),,--args="$(ARGS)") --kernel-args="$(KERNEL_ARGS)" \
		$(if $(SELFTESTS),--selftests "$(SELFTESTS)") --variant $(VARIANT)

shell:
	@$(LAB) shell --arch $(ARCH) $(if $(BOOT),--boot $(BOOT)) --kernel-args="$(KERNEL_ARGS)" \
		$(if $(SELFTESTS),--selftests "$(SELFTESTS)") --variant $(VARIANT)

list:
	@$(LAB) list

# Builds nothing: the QEMU jobs name make test's kernel and initramfs, and
# the kselftest bundles pack its selftests, which make test builds.
lava:
	@$(LAB) lava --kernel-url="$(KERNEL_URL)" --rootfs-url="$(ROOTFS_URL)" \
		--kselftest-url="$(KSELFTEST_URL)"

# Builds make test's kernel and selftests of ARCH as make test does (kept
# builds reused), from the series as make tree makes it.
.PHONY: kselftest-tar
kselftest-tar: tree
	@$(LAB) kselftest-tar --arch $(ARCH) $(if $(HOST),--host $(HOST))

# The job make lava writes for ARCH and BOOT, under Debian's lava-dispatcher
# (lab/lavarun.py): like make run, no make tree and no pytest.
lava-run:
	@test -n "$(BOOT)" || { echo "error: set BOOT=<boot> (make list shows them)"; exit 1; }
	@$(LAB) lava-run --arch $(ARCH) --boot $(BOOT) $(if $(NO_BUILD),--no-build) \
		$(if $(AGAINST),--against "$(AGAINST)")

# tree: build/<base>/linux is the series' selftests (their source and
# headers) and the base commit the vanilla kernel and every variant of
# bench/<base>/variants.toml are made from; venv: matplotlib for change.png.
bench: deps venv tree
	@$(VLAB) bench --level $(BENCH) $(foreach s,$(SCENARIO),--scenario $(s))

bench-native: venv
	@test -n "$(LABEL)" -a -n "$(KVM_SELFTESTS)" || { echo "error: set LABEL=<name> and KVM_SELFTESTS=<dir of kvm selftests>"; exit 1; }
	@$(VLAB) bench-native --label $(LABEL) --kvm-selftests $(KVM_SELFTESTS)

compare: venv
	@test -n "$(A)" -a -n "$(B)" || { echo "error: set A=<label> B=<label> of two saved native runs"; exit 1; }
	@$(VLAB) compare $(A) $(B)

clean:
	rm -rf build
