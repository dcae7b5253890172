import stat
import subprocess

import pytest

from lab import base, deps, initramfs, kernel
from lab.progress import LabError


SHA = "AB" * 32


def test_parse_base():
    b = base.parse(f'# c\npackage = "linux-source-6.12"\nversion = "6.12.1-1"\nsha256 = "{SHA}"\n')
    assert (b.package, b.version, b.sha256, b.tarball_name) == (
        "linux-source-6.12", "6.12.1-1", SHA.lower(), "linux-source-6.12.tar.xz")


@pytest.mark.parametrize("text, msg", [
    ('package = "p"\nversion = "v"\n', "^base.toml: missing key 'sha256'$"),
    (f'package = "p"\nversion = "v"\nsha265 = "{SHA}"\n',
     r"^base.toml: unknown key 'sha265' \(did you mean 'sha256'\?\)$"),
    (f'package = "p"\nversion = 6\nsha256 = "{SHA}"\n',
     r"^base.toml: 'version' must be a string, not an integer \(6\)$"),
    ('package = "p"\nversion = "v"\nsha256 = "abc"\n', "'sha256' must be 64 hex digits"),
])
def test_a_bad_base_is_one_line(text, msg):
    with pytest.raises(LabError, match=msg):
        base.parse(text)


def fake_apt(tmp_path, monkeypatch, script):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    f = bindir / "apt-get"
    f.write_text("#!/bin/sh\n" + script)
    f.chmod(f.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")


def test_missing_package_is_one_line(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch,
             "echo \"E: Version '9.9' for 'linux-source-6.12' was not found\" >&2; exit 100\n")
    with pytest.raises(LabError) as e:
        base.apt_download("linux-source-6.12=9.9", tmp_path / "dl")
    assert str(e.value) == ("apt-get download linux-source-6.12=9.9 failed: "
                            "E: Version '9.9' for 'linux-source-6.12' was not found")


def test_unreachable_apt_is_one_line(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch,
             "echo 'Err:1 http://deb.example linux-source-6.12'\n"
             "echo 'E: Failed to fetch http://deb.example/x.deb  Temporary failure resolving' >&2\n"
             "exit 100\n")
    with pytest.raises(LabError, match="failed: E: Failed to fetch .* Temporary failure resolving$"):
        base.apt_download("linux-source-6.12=1", tmp_path / "dl")


def test_checksum_mismatch_is_refused(tmp_path, monkeypatch):
    # apt "downloads" a .deb whose tarball is not the pinned one.
    pkg = tmp_path / "pkg"
    (pkg / "usr/src").mkdir(parents=True)
    (pkg / "usr/src/linux-source-6.12.tar.xz").write_bytes(b"not the pinned tarball")
    (pkg / "DEBIAN").mkdir()
    (pkg / "DEBIAN/control").write_text("Package: linux-source-6.12\nVersion: 1\n"
                                        "Architecture: all\nMaintainer: x <x@x>\nDescription: x\n")
    import subprocess
    subprocess.run(["dpkg-deb", "-b", str(pkg), str(tmp_path / "l.deb")], check=True,
                   capture_output=True)
    fake_apt(tmp_path, monkeypatch, f"cp {tmp_path / 'l.deb'} .\n")
    monkeypatch.setattr(base.paths, "CACHE", tmp_path / "cache")
    monkeypatch.delenv("LAB_BASE_TARBALL", raising=False)
    want = base.Base("linux-source-6.12", "1", "0" * 64)
    with pytest.raises(LabError, match="sha256 mismatch .* expected 0{64}, got [0-9a-f]{64}"):
        base.tarball(want)
    assert not list((tmp_path / "cache").glob("*.tar.xz"))   # nothing unverified is kept


def test_unmet_config_options_are_named(tmp_path):
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_KVM=y\nCONFIG_X86_X2APIC=y\n# CONFIG_DEBUG_VM is not set\n")
    want = kernel.requested_options([frag])
    assert kernel.unmet_options(want, "CONFIG_KVM=y\nCONFIG_DEBUG_VM=y\n") == [
        "CONFIG_X86_X2APIC=y (got n)", "CONFIG_DEBUG_VM=n (got y)"]


def test_deps_names_missing_tools():
    pairs = deps.parse("sh dash\n# c\nno-such-tool-here pkg-x\n/no/such/file pkg-y\n")
    assert deps.missing(pairs) == [("no-such-tool-here", "pkg-x"), ("/no/such/file", "pkg-y")]


def fake_dpkg(monkeypatch, native: str, foreign: str, calls: list):
    def run(argv, **kw):
        calls.append(argv)
        out = {"--print-architecture": native + "\n",
               "--print-foreign-architectures": foreign}.get(argv[1], "")
        return subprocess.CompletedProcess(argv, 0, out, "")
    monkeypatch.setattr(deps.subprocess, "run", run)


def test_a_guest_arch_dpkg_lacks_is_added_before_apt_update(monkeypatch):
    calls = []
    # a fresh amd64 machine: arm64's busybox-static cannot be downloaded yet
    fake_dpkg(monkeypatch, "amd64", "", calls)
    assert deps.missing_archs() == ["arm64"]
    fake_dpkg(monkeypatch, "amd64", "arm64\n", calls)
    assert deps.missing_archs() == []
    fake_dpkg(monkeypatch, "arm64", "", calls)      # an arm64 host lacks amd64
    assert deps.missing_archs() == ["amd64"]

    calls.clear()
    state = {"foreign": ""}

    def run(argv, **kw):
        calls.append(argv)
        if argv[:2] == ["dpkg", "--add-architecture"]:
            state["foreign"] = argv[2]
        out = {"--print-architecture": "amd64", "--print-foreign-architectures":
               state["foreign"]}.get(argv[1], "")
        return subprocess.CompletedProcess(argv, 0, out, "")
    monkeypatch.setattr(deps.subprocess, "run", run)
    monkeypatch.setattr(deps, "missing", lambda pairs=None: [])
    monkeypatch.setattr(deps.os, "geteuid", lambda: 0)
    deps.install()
    changes = [c for c in calls if "--print" not in c[1]]
    assert changes == [["dpkg", "--add-architecture", "arm64"], ["apt-get", "update", "-q"]]


def test_busybox_of_an_arch_dpkg_lacks_says_how_to_add_it(monkeypatch, tmp_path):
    monkeypatch.setattr(initramfs.paths, "CACHE", tmp_path)
    monkeypatch.setattr(deps, "missing_archs", lambda: ["arm64"])
    with pytest.raises(LabError, match="dpkg has no arm64 architecture; make deps adds it"):
        initramfs.busybox("arm64")
