"""BASE=6.12|7.3: which base a run works on, and where that base's things are."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from lab import cli, paths, tree
from tests.test_tree import base_dir, commit  # noqa: F401 (a fixture)


def lab(*argv, env=None, cwd=paths.ROOT):
    return subprocess.run([sys.executable, "-m", "lab", *argv], cwd=cwd, capture_output=True,
                          text=True, env=dict(os.environ, **(env or {})))


@pytest.mark.parametrize("env, want", [
    ({}, "6.12"), ({"LAB_BASE": ""}, "6.12"), ({"LAB_BASE": " 7.3 "}, "7.3"),
    ({"LAB_BASE": "7.3"}, "7.3")])
def test_the_base_is_lab_base_else_the_default(env, want):
    assert paths.selected_base(env) == want


PLACES = ("BASE", "BASE_BUILD", "TREE", "VANILLA_SRC", "CHECK_SRC", "LOGS", "RESULTS",
          "PATCHES", "TESTLISTS", "BENCH", "BENCH_RESULTS", "CONFIGS", "VENV")


def places(base: str) -> dict:
    code = ("import json; from lab import paths; print(json.dumps({k: str(getattr(paths, k)) "
            f"for k in {PLACES!r}}}))")
    env = dict(os.environ, LAB_BASE=base, LAB_BUILD="/b")
    env.pop("PYTHONPATH", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=paths.ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    return {k: v.replace(str(paths.ROOT), "$ROOT") for k, v in json.loads(out).items()}


def test_each_base_has_its_own_places_and_shares_configs_and_venv():
    assert places("7.3") == {
        "BASE": "7.3", "BASE_BUILD": "/b/7.3", "TREE": "/b/7.3/linux",
        "VANILLA_SRC": "/b/7.3/vanilla-src", "CHECK_SRC": "/b/7.3/check-src",
        "LOGS": "/b/7.3/logs", "RESULTS": "/b/7.3/results", "PATCHES": "$ROOT/patches/7.3",
        "TESTLISTS": "$ROOT/testlists/7.3", "BENCH": "$ROOT/bench/7.3",
        "BENCH_RESULTS": "$ROOT/results/7.3", "CONFIGS": "$ROOT/configs", "VENV": "/b/venv"}
    six = places("")
    assert (six["BASE"], six["TREE"], six["PATCHES"], six["BENCH_RESULTS"]) == (
        "6.12", "/b/6.12/linux", "$ROOT/patches/6.12", "$ROOT/results")


@pytest.mark.parametrize("name", ["7.4", "../6.12"])
def test_an_unknown_base_stops_every_command_in_one_line(name):
    proc = lab("list", env={"LAB_BASE": name})
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (f"error: BASE={name}: no such base; the bases "
                           "(bases/<name>.toml): 6.12, 7.3\n")


def test_base_on_the_command_line_runs_lab_again_for_that_base():
    assert cli.rerun_for(None, ["list"]) is None
    assert cli.rerun_for(paths.BASE, ["--base", paths.BASE, "list"]) is None
    other = "7.3" if paths.BASE != "7.3" else "6.12"
    assert cli.rerun_for(other, ["--base", other, "list"]) == [
        sys.executable, "-m", "lab", "--base", other, "list"]
    proc = lab("--base", "7.3", "list", "--arch", "x86_64", env={"LAB_BASE": "6.12"})
    assert proc.returncode == 0 and "  long (full): " in proc.stdout      # 7.3's list


def test_lab_bases_lists_the_default_first():
    assert lab("bases").stdout == "6.12\n7.3\n"
    assert lab("bases", "--long").stdout.splitlines()[0] == (
        "6.12 (default): linux-source-6.12 6.12.117-1~deb12u1, bookworm-security at "
        "http://deb.debian.org/debian-security")


def make_n(*args) -> str:
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("BASE", "MAKEFLAGS", "LAB_BASE")}
    return subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=paths.ROOT,
                          env=env, capture_output=True, text=True, check=True).stdout


def test_make_test_runs_every_base_unless_one_is_named():
    every = make_n("test")
    assert "pytest tree-6.12 tree-7.3\n" in every
    assert "for b in 6.12 7.3; do" in every
    one = make_n("test", "BASE=7.3")
    assert "pytest tree-7.3\n" in one and "for b in 7.3; do" in one


def old_tree_setup(tmp_path, base_dir, monkeypatch, exported: bool):  # noqa: F811
    """build/linux as the tree from before the bases had folders, with one
    commit that patches/ holds or not."""
    old, new = tmp_path / "build/linux", tmp_path / "build/6.12/linux"
    patches = tmp_path / "patches"
    tree.import_base(old, base_dir, "test base")
    commit(old, "virt/kvm/new.c", "int x;\n", "KVM: add a file", "kvm-topic")
    if exported:
        tree.export(old, patches)
    else:
        patches.mkdir()
    monkeypatch.setattr(paths, "BASE", paths.DEFAULT_BASE)
    monkeypatch.setattr(paths, "PATCHES", patches)
    return old, new


def test_the_old_tree_with_work_not_exported_stops_make_tree(tmp_path, base_dir, monkeypatch):  # noqa: F811
    old, new = old_tree_setup(tmp_path, base_dir, monkeypatch, exported=False)
    with pytest.raises(tree.LabError, match=rf"^{old}, base 6.12's tree before each base had a "
                       rf"folder of its own, has work that .* does not hold; move it to its new "
                       rf"place \(mkdir -p {new.parent}; mv {old} {new}; git -C {new} worktree "
                       r"repair\) and make tree again, or make tree FORCE=1 to leave it behind:"
                       r"\n    not exported: KVM: add a file$"):
        tree.old_tree(False, old, new)
    assert "left as it is" in tree.old_tree(True, old, new)


def test_the_old_tree_all_exported_is_a_note(tmp_path, base_dir, monkeypatch):  # noqa: F811
    old, new = old_tree_setup(tmp_path, base_dir, monkeypatch, exported=True)
    assert tree.old_tree(False, old, new).startswith(
        f"tree: {old} is base 6.12's tree from before each base had a folder of its own, "
        f"left as it is: {new} is the tree now")
    new.mkdir(parents=True)
    (new / ".git").mkdir()
    assert tree.old_tree(False, old, new) == ""            # once the new one exists: nothing
