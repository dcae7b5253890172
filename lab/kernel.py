"""Configure and build one kernel: ARCH x VARIANT x debug.

VARIANT is vanilla (build/<base>/vanilla-src, the base), patched (build/<base>/linux, the
series), check (make check's worktree) or a bench variant of
bench/<base>/variants.toml (build/<base>/variants/<name>, lab/variants.py).

The object directory is a direct subdirectory of its source tree
(build/<base>/linux/.out-x86_64-patched), because only then does kbuild call the
source ".." instead of an absolute path: the vanilla, patched and variant
trees then compile with identical command lines and ccache shares every
unchanged object. build/<base>/<arch>-<variant>[-debug] is a symlink to it.

A distro build starts from Debian's config of the base instead of
allnoconfig (bases/<base>.toml [distro_config]): configs/common and <arch>
on it, made current with olddefconfig (make check-distro-config, make deb
CONFIG=distro). A make deb build has an output directory of its own
(deb-<arch>-<distro|test>), lab/deb.py.
"""
import lzma
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from lab import base, datafile, paths, tree, variants
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
    # Debian's config of the base with the fragments on it (debug: False,
    # Debian's kernel keeps its own debug options), not allnoconfig.
    distro: bool = False
    # make deb's build of that config, or of make test's (debug: True).
    deb: bool = False

    @property
    def name(self) -> str:
        if self.deb:
            return f"deb-{self.profile.arch}-{'distro' if self.distro else 'test'}"
        if self.distro:
            return f"distro-config-{self.profile.arch}"
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
        if self.debug and not self.distro:
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
        """Held while anything builds into out (progress.exclusive). make
        deb's builds of an arch, either config, share one: their packages
        land under the same names in the tree's top (lab/deb.py)."""
        return paths.BASE_BUILD / "locks" / (
            f"deb-{self.profile.arch}.lock" if self.deb else f"{self.name}.lock")


@dataclass(frozen=True)
class Wanted:
    value: str            # y, m, a string or a number; n for "# CONFIG_X is not set"
    fragment: Path        # the last fragment that sets it (merge_config's order)


def requested_options(fragments: list[Path]) -> dict[str, Wanted]:
    """CONFIG_X -> what the fragments ask of it."""
    want = {}
    for f in fragments:
        for line in f.read_text().splitlines():
            m = re.match(r"(CONFIG_[A-Za-z0-9_]+)=(.*)", line)
            if m:
                want[m.group(1)] = Wanted(m.group(2), f)
            m = re.match(r"# (CONFIG_[A-Za-z0-9_]+) is not set", line)
            if m:
                want[m.group(1)] = Wanted("n", f)
    return want


def config_values(config_text: str) -> dict[str, str]:
    """CONFIG_X -> its value in a .config (an option not set is absent)."""
    return dict(re.findall(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$", config_text, re.M))


BUILT = {"y", "m"}


def unmet_options(want: dict[str, Wanted], config_text: str,
                  modules: bool = False) -> list[str]:
    """Requested options that Kconfig dropped (unmet dependency or typo) or
    changed, each with the fragment that asks for it. modules: y and m meet
    each other (a distro's choice to build a tristate as a module, KVM=m on
    amd64, gives the series what a y would); without, a value is exact (make
    test's kernels have no modules to load)."""
    have = config_values(config_text)
    bad = []
    for opt, w in want.items():
        got = have.get(opt, "n")
        if got == w.value or modules and {got, w.value} <= BUILT:
            continue
        bad.append(f"{opt} {'dropped' if got == 'n' else 'changed'} "
                   f"({datafile.origin(w.fragment)} wants {w.value}, got {got})")
    return bad


def dropped(start: dict[str, str], config_text: str) -> list[str]:
    """The options start builds (y or m) that config_text does not set."""
    have = config_values(config_text)
    return [o for o, v in start.items() if v in BUILT and o not in have]


def option_line(opt: str, value: str) -> str:
    return f"# {opt} is not set\n" if value == "n" else f"{opt}={value}\n"


def configure(b: Build) -> None:
    b.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ARCH=b.profile.make_arch)
    want = requested_options(b.fragments())
    if b.distro:
        start = _distro_start(b, want)
        merged = [str(start), str(b.out / "fragments.config")]
    else:
        merged = ["/dev/null", *map(str, b.fragments())]
    run_logged([str(b.src / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(b.out),
                *merged], b.log("config"), f"config {b.name}", cwd=b.src, env=env)
    if b.distro:
        run_logged(b.make_argv("olddefconfig"), b.log("config"), f"config {b.name}")
    else:
        run_logged(b.make_argv(f"KCONFIG_ALLCONFIG={b.out / '.config'}", "allnoconfig"),
                   b.log("config"), f"config {b.name}")
    made = (b.out / ".config").read_text()
    if b.distro:
        lost = dropped(config_values((b.out / "debian.config").read_text()), made)
        if lost:
            say(f"config {b.name}: olddefconfig dropped {len(lost)} of Debian's options, "
                f"{', '.join(lost)}: what Kconfig probes on this host differs from Debian's "
                f"build (pahole, for DEBUG_INFO_BTF: apt dwarves; an older compiler)")
    bad = unmet_options(want, made, modules=b.distro)
    if bad:
        how = (f"{base.config_name(b.profile.debian_arch)} + the fragments, olddefconfig"
               if b.distro else "allnoconfig + the fragments")
        raise LabError(f"config {b.name}: {how}: {'; '.join(bad)} (see {b.out / '.config'})")


def _distro_start(b: Build, want: dict[str, Wanted]) -> Path:
    """Debian's config of b's arch as out/debian.config, and what of want
    to merge onto it as out/fragments.config: all of it but a y where
    Debian builds a module (see unmet_options)."""
    debian = b.out / "debian.config"
    debian.write_bytes(lzma.decompress(base.distro_config(b.profile.debian_arch).read_bytes()))
    have = config_values(debian.read_text())
    kept = {o: w for o, w in want.items() if not (w.value == "y" and have.get(o) == "m")}
    (b.out / "fragments.config").write_text(
        "".join(option_line(o, w.value) for o, w in kept.items()))
    differ = [f"{o}={w.value} (Debian: {have.get(o, 'n')})" for o, w in kept.items()
              if have.get(o, "n") != w.value]
    say(f"config {b.name}: Debian's {base.config_name(b.profile.debian_arch)}"
        + (f", with the fragments' {', '.join(differ)}" if differ
           else ": it has every option of the fragments"))
    return debian


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


def prepare(b: Build, tools: tuple[str, ...] = ()) -> None:
    """b's source tree there, the tools of its build (and tools) found, and
    b configured; the caller holds b.lock."""
    prepare_source(b)
    for tool in ("make", f"{b.profile.cross_compile}gcc", "flex", "bison", "bc", *tools):
        if not shutil.which(tool):
            raise LabError(f"kernel {b.name}: {tool} not found (make deps installs it)")
    say(f"kernel {b.name}: configuring")
    configure(b)


def link(b: Build) -> None:
    """build/<base>/<name> -> b's output directory."""
    if b.link.is_symlink() or b.link.exists():
        b.link.unlink()
    b.link.symlink_to(b.out.relative_to(paths.BASE_BUILD))


def _build(b: Build) -> Path:
    log = b.log("kernel")
    log.unlink(missing_ok=True)
    prepare(b)
    say(f"kernel {b.name}: building {b.profile.target} (log: {log})")
    secs = run_logged(b.make_argv(b.profile.target, "headers"), log, f"kernel {b.name}",
                      explain=compiler_errors)
    link(b)
    say(f"kernel {b.name}: built in {secs:.0f} s -> {b.link / b.profile.image}")
    return b.image
