"""make test's builds kept by what they are built from (lab/buildcache.py)."""
import subprocess

import pytest

from lab import buildcache, paths, profile
from lab.kernel import Build


def sh(cwd, *argv):
    return subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A git tree standing in for build/<base>/linux, a private cache, and
    a kernel "build" that counts its runs and writes what make would."""
    t = tmp_path / "build" / "linux"
    t.mkdir(parents=True)
    (t / ".gitignore").write_text(".out-*\n")
    (t / "Makefile").write_text("all:\n")
    sh(t, "git", "init", "-q")
    sh(t, "git", "add", ".")
    sh(t, "git", "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-q", "-m", "base")
    monkeypatch.setattr(paths, "TREE", t)
    monkeypatch.setattr(paths, "BASE_BUILD", tmp_path / "build")
    monkeypatch.setattr(paths, "CACHE", tmp_path / "cache")
    monkeypatch.delenv("LAB_REBUILD", raising=False)
    runs = []

    def fake_build(b):
        runs.append(b.name)
        b.image.parent.mkdir(parents=True, exist_ok=True)
        b.image.write_text(f"image of {sh(t, 'git', 'rev-parse', 'HEAD^{tree}')}")
        (b.out / ".config").write_text("CONFIG_KVM=y\n")
        b.headers.mkdir(parents=True, exist_ok=True)
        (b.headers / "kvm.h").write_text("#define KVM 1\n")
        return b.image
    monkeypatch.setattr(buildcache.kernel, "build", fake_build)
    return t, runs, Build(profile.load("x86_64"), "patched", True)


def fresh_clone(b):
    """What a fresh clone lacks: the output directory."""
    subprocess.run(["rm", "-rf", str(b.out)], check=True)


def test_a_fresh_clone_gets_the_same_build_back(lab):
    t, runs, b = lab
    buildcache.build_kernel(b)
    built = b.image.read_text()
    fresh_clone(b)
    buildcache.build_kernel(b)
    assert runs == [b.name]
    assert b.image.read_text() == built
    assert (b.out / ".config").read_text() == "CONFIG_KVM=y\n"
    assert (b.headers / "kvm.h").is_file()
    assert (paths.BASE_BUILD / b.name).resolve() == b.out.resolve()


def test_another_tree_is_built(lab):
    t, runs, b = lab
    buildcache.build_kernel(b)
    (t / "Makefile").write_text("all: changed\n")
    sh(t, "git", "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-q", "-am", "x")
    fresh_clone(b)
    buildcache.build_kernel(b)
    assert runs == [b.name, b.name]


def test_uncommitted_or_untracked_work_is_never_kept(lab):
    t, runs, b = lab
    for dirt in ("Makefile", "new.c"):
        (t / dirt).write_text("all: dirty\n")
        buildcache.build_kernel(b)
        buildcache.build_kernel(b)
        sh(t, "git", "checkout", "-q", "--", ".")
        sh(t, "git", "clean", "-qf", "-e", ".out-*")
    assert len(runs) == 4
    assert not list((paths.CACHE / "builds").glob("*/meta.json"))


def test_rebuild_builds_again(lab, monkeypatch):
    t, runs, b = lab
    buildcache.build_kernel(b)
    monkeypatch.setenv("LAB_REBUILD", "1")
    buildcache.build_kernel(b)
    assert len(runs) == 2


def test_a_tree_that_changed_during_the_build_is_not_kept(lab, monkeypatch):
    t, runs, b = lab
    inner = buildcache.kernel.build

    def build_then_commit(b):
        out = inner(b)
        (t / "Makefile").write_text("all: later\n")
        sh(t, "git", "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-q", "-am", "y")
        return out
    monkeypatch.setattr(buildcache.kernel, "build", build_then_commit)
    buildcache.build_kernel(b)
    assert not list((paths.CACHE / "builds").glob("*/meta.json"))


def test_a_variants_kernel_is_kept_from_its_prepared_tree(lab, monkeypatch):
    """make bench's kernels come back to a fresh clone; the tree is brought
    to what the kernel builds before it is keyed (a stale variant tree
    keyed as it was would give back the build of other patches)."""
    t, runs, b = lab
    variant = t.parent / "variant"
    sh(t.parent, "git", "clone", "-q", str(t), str(variant))
    monkeypatch.setattr(paths, "VANILLA_SRC", variant)
    vanilla = Build(b.profile, "vanilla", False)
    prepared = []

    def prepare(b):
        # what the variant's tree becomes: one commit on the base
        if not prepared:
            (variant / "Makefile").write_text("all: variant\n")
            sh(variant, "git", "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-q",
               "-am", "variant")
        prepared.append(b.name)
        return b.src
    monkeypatch.setattr(buildcache.kernel, "prepare_source", prepare)
    buildcache.build_kernel(vanilla)
    fresh_clone(vanilla)
    buildcache.build_kernel(vanilla)
    assert runs == [vanilla.name] and prepared == [vanilla.name] * 2
    key = buildcache.key_of("kernel", buildcache._inputs(vanilla, "kernel"))
    assert buildcache.lookup(key), "keyed by the tree as prepared, not as it was"
    # selftests are kept from the series' tree alone
    assert buildcache._inputs(vanilla, "selftests") is None
    assert buildcache._inputs(b, "selftests") is not None
    # make check's worktree keys its own builds
    assert buildcache._inputs(Build(b.profile, "check", False), "kernel") is None


def test_the_least_recently_used_go_first(lab, monkeypatch):
    t, runs, b = lab
    import os
    for i in range(4):
        f = paths.CACHE / f"img{i}"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(str(i))
        buildcache.store("kernel", f"k{i}", {"image": f}, "x")
        os.utime(paths.CACHE / "builds" / f"k{i}" / "meta.json", (i, i))
    assert buildcache.lookup("k0")               # used now: the newest
    buildcache.evict("kernel", keep=2)
    kept = sorted(p.parent.name for p in (paths.CACHE / "builds").glob("*/meta.json"))
    assert kept == ["k0", "k3"]


def test_selftests_of_the_same_tree_come_back(lab, monkeypatch):
    t, runs, b = lab
    built = []

    def fake_selftests(b, src=None):
        built.append(src)
        d = buildcache.selftests.install_dir(b)
        (d / "kvm").mkdir(parents=True, exist_ok=True)
        (d / "kvm" / "dirty_log_test").write_text("elf")
        return d
    monkeypatch.setattr(buildcache.selftests, "build", fake_selftests)
    buildcache.build_selftests(b)
    fresh_clone(b)
    d = buildcache.build_selftests(b)
    assert built == [None]
    assert (d / "kvm" / "dirty_log_test").read_text() == "elf"
    other = t.parent / "other"
    buildcache.build_selftests(b, src=other)     # another tree's: always built
    assert built == [None, other]
