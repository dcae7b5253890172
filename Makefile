# kvm-mmu-series: the front door. Every target is a thin call into lab/.
#
#   make test                      pytest + build, boot and selftest each arch
#   make tree / make export        build/linux from patches/, and back
#   make kernel ARCH=arm64 VARIANT=vanilla [DEBUG=1]
#
# Overrides: BASE_TARBALL=/path/linux.tar.xz or BASE_TREE=/path/to/linux use
# your own source as the base instead of base.conf's Debian package.

ARCH    ?= x86_64
VARIANT ?= patched
DEBUG   ?=
FORCE   ?=
PYTHON  ?= python3
VENV    := build/venv

export LAB_BASE_TARBALL := $(BASE_TARBALL)
export LAB_BASE_TREE := $(BASE_TREE)

LAB := $(PYTHON) -m lab

.PHONY: all deps venv base tree export kernel selftests test pytest clean help

help:
	@sed -n '2,9p' Makefile | sed 's/^# \{0,1\}//'

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

export:
	@$(LAB) export

kernel: tree
	@$(LAB) kernel --arch $(ARCH) --variant $(VARIANT) $(if $(DEBUG),--debug)

selftests: kernel
	@$(LAB) selftests --arch $(ARCH) --variant $(VARIANT) $(if $(DEBUG),--debug)

pytest: venv
	@$(VENV)/bin/python -m pytest -q tests

# The README's test command, which .ci/run calls.
test: deps pytest tree
	@$(LAB) test $(if $(TEST_ARCH),--arch $(TEST_ARCH))

clean:
	rm -rf build
