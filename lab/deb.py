"""make deb: Debian packages of the patched kernel (build/<base>/linux), by
the kernel's own `make bindeb-pkg`: linux-image, linux-headers (a config
with modules) and linux-libc-dev.

CONFIG=distro: Debian's config of the base and arch (bases/<base>.toml
[distro_config]), made current with olddefconfig, with configs/common and
<arch> on it; lab/kernel.py's configure names any option of theirs that
olddefconfig dropped or changed. CONFIG=test: make test's kernel's config
(allnoconfig + the fragments), whose objects ccache has from make test: it
proves the packaging cheaply, and boots nothing but QEMU.

The output directory is a direct subdirectory of the tree, as every kernel
build's is (ccache, lab/kernel.py): deb-<arch>-<config>. dpkg-buildpackage
writes the packages to its parent, the tree's top; the tree's git ignores
them there (.git/info/exclude: git status stays clean, and make tree and the
build cache with it), and they are moved to build/<base>/debs/<arch>-<config>/.
"""
import os
import time
from pathlib import Path

from lab import kernel, paths, profile, tree
from lab.kernel import Build
from lab.progress import LabError, compiler_errors, exclusive, run_logged, say

CONFIGS = ("distro", "test")
# What dpkg-buildpackage leaves in the parent of the output directory, one
# set per Debian arch (<name>_<version>_<debian arch>.<suffix>).
SUFFIXES = (".deb", ".buildinfo", ".changes")
# bindeb-pkg's debian/rules runs debhelper (dh_prep, dh_gencontrol, ...);
# kmod's depmod indexes a config's modules (apt-packages.txt).
TOOLS = ("dpkg-buildpackage", "dh_prep", "kmod")
# No linux-image-*-dbg: Debian's config has DEBUG_INFO, and its package
# would be ~1 GiB of xz to compress on top of the build.
ENV = {"DEB_BUILD_PROFILES": "pkg.linux-upstream.nokerneldbg",
       "DEB_BUILD_OPTIONS": "terse"}


def build_of(arch: str, config: str) -> Build:
    if config not in CONFIGS:
        raise LabError(f"make deb: CONFIG={config}: one of {', '.join(CONFIGS)}")
    return Build(profile.load(arch), "patched", debug=config == "test",
                 distro=config == "distro", deb=True)


def packages_dir(b: Build) -> Path:
    return paths.BASE_BUILD / "debs" / b.name.removeprefix("deb-")


def outputs(where: Path, debian_arch: str) -> list[Path]:
    """What a bindeb-pkg of debian_arch left in where."""
    return sorted(p for p in where.iterdir() if p.is_file()
                  and any(p.name.endswith(f"_{debian_arch}{s}") for s in SUFFIXES))


def build(arch: str, config: str) -> list[Path]:
    """make bindeb-pkg of the tree with config; the packages, in packages_dir."""
    b = build_of(arch, config)
    dest = packages_dir(b)
    with exclusive(b.lock, f"deb {b.name}"):
        log = b.log("bindeb-pkg")
        log.unlink(missing_ok=True)
        b.log("config").unlink(missing_ok=True)
        kernel.prepare(b, TOOLS)
        tree.exclude(paths.TREE, [f"/*{s}" for s in SUFFIXES])
        arch_deb = b.profile.debian_arch
        for stale in outputs(paths.TREE, arch_deb):       # of a run that was stopped
            stale.unlink()
        say(f"deb {b.name}: make bindeb-pkg (log: {log})")
        secs = run_logged(b.make_argv("bindeb-pkg"), log, f"deb {b.name}",
                          explain=compiler_errors, env=dict(os.environ, **ENV))
        kernel.link(b)
        made = outputs(paths.TREE, arch_deb)
        if not any(p.suffix == ".deb" for p in made):
            raise LabError(f"deb {b.name}: make bindeb-pkg ended without a .deb in "
                           f"{paths.TREE}; log: {log}")
        dest.mkdir(parents=True, exist_ok=True)
        for old in dest.iterdir():
            old.unlink()
        for p in made:
            p.rename(dest / p.name)
    debs = sorted(dest.glob("*.deb"))
    say(f"deb {b.name}: built in {secs:.0f} s -> {dest}: " + ", ".join(
        f"{p.name} ({p.stat().st_size / 2**20:.1f} MiB)" for p in debs))
    return debs


def resolve(arch: str) -> tuple[Build, float]:
    """Debian's config of arch with the fragments, made current
    (olddefconfig) and checked, in its own output directory: make
    check-distro-config and make check, seconds where a package build is
    hours. The Build and the seconds it took."""
    b = Build(profile.load(arch), "patched", debug=False, distro=True)
    start = time.monotonic()
    with exclusive(b.lock, f"config {b.name}"):
        b.log("config").unlink(missing_ok=True)
        kernel.prepare(b)
    return b, time.monotonic() - start
