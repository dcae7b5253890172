"""make deb: the builds' places and configs, the packages moved out of
the tree, and the make and command-line wiring."""
import os
import shutil
import subprocess

import pytest

from lab import cli, deb, paths, profile, tree
from lab.kernel import Build
from lab.progress import LabError


# ----------------------------------------------------------- the builds

def test_make_deb_s_builds_have_their_own_places_and_configs():
    x86 = profile.load("x86_64")
    test, distro = deb.build_of("x86_64", "test"), deb.build_of("x86_64", "distro")
    assert (test.name, distro.name) == ("deb-x86_64-test", "deb-x86_64-distro")
    assert test.out == paths.TREE / ".out-deb-x86_64-test"
    assert deb.packages_dir(distro) == paths.BASE_BUILD / "debs" / "x86_64-distro"
    # make test's kernel's fragments, so ccache has its objects
    assert test.fragments() == Build(x86, "patched", debug=True).fragments()
    assert [f.name for f in distro.fragments()] == ["common.config", "x86_64.config"]
    # both configs' packages have the same names in the tree's top: one lock
    assert test.lock == distro.lock != Build(x86, "patched", True).lock
    resolve = Build(x86, "patched", debug=False, distro=True)
    assert resolve.name == "distro-config-x86_64" and resolve.lock != distro.lock
    with pytest.raises(LabError, match=r"^make deb: CONFIG=debug: one of distro, test$"):
        deb.build_of("x86_64", "debug")


def git_tree(tmp_path):
    t = tmp_path / "linux"
    t.mkdir()
    (t / "Makefile").write_text("all:\n")
    for argv in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=A", "-c", "user.email=a@b", "commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(t), *argv], check=True, capture_output=True)
    return t


def test_packages_in_the_tree_s_top_are_no_work_of_the_tree(tmp_path):
    t = git_tree(tmp_path)
    tree.exclude(t, ["/*.deb", "/*.changes"])
    tree.exclude(t, ["/*.deb", "/*.changes"])
    assert (t / ".git/info/exclude").read_text().splitlines()[-2:] == ["/*.deb", "/*.changes"]
    assert (t / ".git/info/exclude").read_text().count("/*.deb") == 1
    (t / "linux-image-6.12.117_6.12.117-1_amd64.deb").write_text("")
    (t / "linux-upstream_6.12.117-1_amd64.changes").write_text("")
    assert tree.git(t, "status", "--porcelain") == ""


def fake_bindeb_pkg(monkeypatch, tmp_path, left: list[str]):
    """deb.build with a stand-in tree, kernel.prepare a no-op and make
    bindeb-pkg leaving these files in the tree's top."""
    t = git_tree(tmp_path)
    monkeypatch.setattr(paths, "TREE", t)
    monkeypatch.setattr(paths, "BASE_BUILD", tmp_path)
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    prepared, ran = [], []
    monkeypatch.setattr(deb.kernel, "prepare", lambda b, tools=(): prepared.append(tools))

    def run(argv, log, what, cwd=None, env=None, explain=None, timeout=None):
        ran.append((argv, env))
        for name in left:
            (t / name).write_text(name)
        return 1.0
    monkeypatch.setattr(deb, "run_logged", run)
    return t, prepared, ran


def test_the_packages_are_moved_out_of_the_tree(tmp_path, monkeypatch):
    made = ["linux-image-6.12.117_6.12.117-2_amd64.deb", "linux-libc-dev_6.12.117-2_amd64.deb",
            "linux-upstream_6.12.117-2_amd64.buildinfo", "linux-upstream_6.12.117-2_amd64.changes"]
    t, prepared, ran = fake_bindeb_pkg(monkeypatch, tmp_path, made)
    (t / "linux-image-6.12.117_6.12.117-1_amd64.deb").write_text("stopped run's")
    (t / "linux-image-6.12.117_6.12.117-1_arm64.deb").write_text("arm64's, not ours")
    dest = tmp_path / "debs/x86_64-test"
    dest.mkdir(parents=True)
    (dest / "linux-image-6.12.117_6.12.117-0_amd64.deb").write_text("the last run's")
    got = deb.build("x86_64", "test")
    assert [p.name for p in got] == sorted(made[:2])
    assert sorted(p.name for p in dest.iterdir()) == sorted(made)
    assert sorted(p.name for p in t.glob("*_*")) == ["linux-image-6.12.117_6.12.117-1_arm64.deb"]
    assert prepared == [deb.TOOLS]
    argv, env = ran[0]
    assert argv[0] == "make" and argv[-1] == "bindeb-pkg" and "O=" + str(t / ".out-deb-x86_64-test") in argv
    assert env["DEB_BUILD_PROFILES"] == "pkg.linux-upstream.nokerneldbg"
    assert (tmp_path / "deb-x86_64-test").resolve() == t / ".out-deb-x86_64-test"
    assert tree.git(t, "status", "--porcelain") == ""


def test_a_bindeb_pkg_without_a_package_is_an_error(tmp_path, monkeypatch):
    t, _, _ = fake_bindeb_pkg(monkeypatch, tmp_path, ["linux-upstream_1_arm64.changes"])
    with pytest.raises(LabError, match=r"^deb deb-arm64-distro: make bindeb-pkg ended without "
                       rf"a .deb in {t}; log: .*bindeb-pkg-deb-arm64-distro.log$"):
        deb.build("arm64", "distro")


# ------------------------------------------------------ make and the CLI

def make_n(*args) -> str:
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "LAB_BASE")}
    return subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=paths.ROOT,
                          env=env, capture_output=True, text=True, check=True).stdout


def test_make_deb_and_check_distro_config_call_lab():
    assert make_n("deb").splitlines()[-1] == "python3 -m lab deb --arch x86_64 --config distro"
    assert make_n("deb", "ARCH=arm64", "CONFIG=test").splitlines()[-1] == (
        "python3 -m lab deb --arch arm64 --config test")
    assert make_n("check-distro-config").splitlines()[-1] == "python3 -m lab distro-config"


def test_lab_deb_and_distro_config(monkeypatch, capsys):
    built, resolved = [], []
    monkeypatch.setattr(cli.deb, "build", lambda arch, config: built.append((arch, config)))

    def resolve(arch):
        resolved.append(arch)
        return Build(profile.load(arch), "patched", False, distro=True), 9.4
    monkeypatch.setattr(cli.deb, "resolve", resolve)
    assert cli.main(["deb", "--arch", "arm64", "--config", "test"]) == 0
    assert cli.main(["deb"]) == 0
    assert built == [("arm64", "test"), ("x86_64", "distro")]
    with pytest.raises(SystemExit):
        cli.main(["deb", "--config", "debug"])
    assert "invalid choice: 'debug'" in capsys.readouterr().err
    assert cli.main(["distro-config"]) == 0
    assert resolved == profile.arches()
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        "distro-config x86_64: every option of common.config, x86_64.config is set in "
        f"{paths.TREE}/.out-distro-config-x86_64/.config (9 s)")


def test_a_failed_resolve_is_one_line_and_exit_1(monkeypatch, capsys):
    def resolve(arch):
        raise LabError("config distro-config-arm64: config.arm64_none_arm64.xz + the fragments, "
                       "olddefconfig: CONFIG_DAMON dropped (configs/common.config wants y, got n)")
    monkeypatch.setattr(cli.deb, "resolve", resolve)
    assert cli.main(["distro-config", "--arch", "arm64"]) == 1
    assert capsys.readouterr().err == (
        "error: config distro-config-arm64: config.arm64_none_arm64.xz + the fragments, "
        "olddefconfig: CONFIG_DAMON dropped (configs/common.config wants y, got n)\n")
