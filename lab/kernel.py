"""Configure and build one kernel: ARCH x VARIANT x debug.

VARIANT is vanilla (build/<base>/vanilla-src, the base), patched (build/<base>/linux, the
series), check (make check's worktree) or a bench variant of
bench/<base>/variants.toml (build/<base>/variants/<name>, lab/variants.py).

The object directory is a direct subdirectory of its source tree
(build/<base>/linux/.out-x86_64-patched), because only then does kbuild call the
source ".." instead of an absolute path: the vanilla, patched and variant
trees then compile with identical command lines and ccache shares every
unchanged object. build/<base>/<arch>-<variant>[-debug] is a symlink to it.
"""
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from lab import paths, tree, variants
from lab.profile import Profile
from lab.progress import LabError, compiler_errors, exclusive, jobs, run_logged, say

VARIANTS = ("vanilla", "patched")
# make check's builds: the series one patch at a time, in their own worktree,
# with configs/check*.config on top (the options maintainers build with).
CHECK = "check"


@dataclass(frozen=True)
class Build:
    profile: Profile
    variant: str
    debug: bool
    # Fragments of configs/ merged last (a boot's `config`, e.g. kasan): a
    # kernel of its own, named after them.
    extra: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return (f"{self.profile.arch}-{self.variant}" + ("-debug" if self.debug else "")
                + "".join(f"-{x}" for x in self.extra))

    @property
    def src(self) -> Path:
        built_in = {"patched": paths.TREE, "vanilla": paths.VANILLA_SRC, CHECK: paths.CHECK_SRC}
        return built_in.get(self.variant) or variants.tree_of(self.variant)

    @property
    def out(self) -> Path:
        return self.src / f".out-{self.name}"

    @property
    def link(self) -> Path:
        return paths.BASE_BUILD / self.name

    @property
    def image(self) -> Path:
        return self.out / self.profile.image

    @property
    def headers(self) -> Path:
        return self.out / "usr" / "include"

    def fragments(self) -> list[Path]:
        names = ["common", self.profile.arch]
        if self.debug:
            # debug-<arch>: options that need DEBUG_KERNEL, which bench kernels lack.
            names += ["debug", f"debug-{self.profile.arch}"]
        if self.variant == CHECK:
            names += ["check", f"check-{self.profile.arch}"]
        found = [paths.CONFIGS / f"{n}.config" for n in names
                 if (paths.CONFIGS / f"{n}.config").exists()]
        for x in self.extra:
            f = paths.CONFIGS / f"{x}.config"
            if not f.exists():
                raise LabError(f"kernel {self.name}: no config fragment {f}")
            found.append(f)
        return found

    def make_argv(self, *targets: str) -> list[str]:
        cc = f"{self.profile.cross_compile}gcc"
        argv = ["make", "-C", str(self.src), f"O={self.out}", f"ARCH={self.profile.make_arch}",
                f"-j{jobs()}"]
        if self.profile.cross_compile:
            argv.append(f"CROSS_COMPILE={self.profile.cross_compile}")
        if shutil.which("ccache"):
            argv += [f"CC=ccache {cc}", "HOSTCC=ccache gcc"]
        return argv + list(targets)

    def log(self, step: str) -> Path:
        return paths.LOGS / f"{step}-{self.name}.log"

    @property
    def lock(self) -> Path:
        """Held while anything builds into out (progress.exclusive)."""
        return paths.BASE_BUILD / "locks" / f"{self.name}.lock"


def requested_options(fragments: list[Path]) -> dict[str, str]:
    """CONFIG_X -> value ('n' for '# CONFIG_X is not set') from the fragments."""
    want = {}
    for f in fragments:
        for line in f.read_text().splitlines():
            m = re.match(r"(CONFIG_[A-Za-z0-9_]+)=(.*)", line)
            if m:
                want[m.group(1)] = m.group(2)
            m = re.match(r"# (CONFIG_[A-Za-z0-9_]+) is not set", line)
            if m:
                want[m.group(1)] = "n"
    return want


def unmet_options(want: dict[str, str], config_text: str) -> list[str]:
    """Requested options that Kconfig dropped (unmet dependency or typo)."""
    have = {}
    for line in config_text.splitlines():
        m = re.match(r"(CONFIG_[A-Za-z0-9_]+)=(.*)", line)
        if m:
            have[m.group(1)] = m.group(2)
    bad = []
    for opt, val in want.items():
        got = have.get(opt, "n")
        if got != val:
            bad.append(f"{opt}={val} (got {got})")
    return bad


def configure(b: Build) -> None:
    b.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ARCH=b.profile.make_arch)
    run_logged([str(b.src / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(b.out),
                "/dev/null", *map(str, b.fragments())], b.log("config"),
               f"config {b.name}", cwd=b.src, env=env)
    run_logged(b.make_argv(f"KCONFIG_ALLCONFIG={b.out / '.config'}", "allnoconfig"),
               b.log("config"), f"config {b.name}")
    bad = unmet_options(requested_options(b.fragments()), (b.out / ".config").read_text())
    if bad:
        raise LabError(f"config {b.name}: the fragments ask for options Kconfig did not "
                       f"set: {', '.join(bad)} (see {b.out / '.config'})")


def build(b: Build) -> Path:
    """Build b's kernel image (and its UAPI headers); return the image path."""
    with exclusive(b.lock, f"kernel {b.name}"):
        return _build(b)


def headers(b: Build) -> Path:
    """b's UAPI headers alone (make headers needs no .config): the series'
    selftests build against the patched tree's when no side boots that
    kernel, which a fresh clone took 285 s to build for nothing."""
    with exclusive(b.lock, f"headers {b.name}"):
        if not (paths.TREE / ".git").exists():
            raise LabError(f"{paths.TREE} does not exist: run `make tree` first")
        log = b.log("headers")
        log.unlink(missing_ok=True)
        say(f"headers {b.name}: make headers (log: {log})")
        run_logged(b.make_argv("headers"), log, f"headers {b.name}")
    return b.headers


def prepare_source(b: Build) -> Path:
    """b's source tree brought to what b builds: the vanilla worktree at the
    base, a bench variant's tree made again if its base or patches changed
    (the series' tree is make tree's). What a cache of builds may key by."""
    if b.variant == "vanilla":
        tree.ensure_worktree(paths.TREE, paths.VANILLA_SRC)
    elif not (paths.TREE / ".git").exists():
        raise LabError(f"{paths.TREE} does not exist: run `make tree` first")
    if b.variant not in (*VARIANTS, CHECK):
        variants.ensure(variants.get(b.variant))
    return b.src


def _build(b: Build) -> Path:
    prepare_source(b)
    for tool in ("make", f"{b.profile.cross_compile}gcc", "flex", "bison", "bc"):
        if not shutil.which(tool):
            raise LabError(f"kernel {b.name}: {tool} not found (make deps installs it)")
    say(f"kernel {b.name}: configuring")
    log = b.log("kernel")
    log.unlink(missing_ok=True)
    configure(b)
    say(f"kernel {b.name}: building {b.profile.target} (log: {log})")
    secs = run_logged(b.make_argv(b.profile.target, "headers"), log, f"kernel {b.name}",
                      explain=compiler_errors)
    if b.link.is_symlink() or b.link.exists():
        b.link.unlink()
    b.link.symlink_to(b.out.relative_to(paths.BASE_BUILD))
    say(f"kernel {b.name}: built in {secs:.0f} s -> {b.link / b.profile.image}")
    return b.image
