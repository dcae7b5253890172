import stat
import subprocess

import pytest

from lab import apt, base, deps, initramfs
from lab.progress import LabError


SHA = "AB" * 32
WHERE = ('uri = "http://deb.debian.org/debian"\nsuite = "trixie-backports"\n'
         'keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"\n')


def test_parse_base():
    b = base.parse(f'# c\npackage = "linux-source-7.3"\nversion = "7.3.4-1~bpo13+1"\n'
                   f'sha256 = "{SHA}"\n{WHERE}', "7.3")
    assert (b.name, b.package, b.version, b.sha256, b.tarball_name, b.components) == (
        "7.3", "linux-source-7.3", "7.3.4-1~bpo13+1", SHA.lower(), "linux-source-7.3.tar.xz",
        ("main",))
    assert b.where == "trixie-backports at http://deb.debian.org/debian"
    assert b.sources_line == ("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                              "http://deb.debian.org/debian trixie-backports main\n")


def test_the_bases_of_the_checkout_parse():
    """Each file of bases/ as the harness reads it: 6.12, the default, first."""
    assert base.names()[:2] == ["6.12", "7.3"]
    got = {n: base.load(n) for n in base.names()}
    assert got["6.12"].label == "linux-source-6.12 6.12.117-1~deb12u1"
    assert got["6.12"].where == "bookworm-security at http://deb.debian.org/debian-security"
    assert got["7.3"].label == "linux-source-7.3 7.3.4-1~bpo13+1"
    assert got["7.3"].sha256 == "76df1affb19f24926949369be1d74b60071c963c598ce8780bddd4bbf0fc3bc4"
    assert got["7.3"].where == "trixie-backports at http://deb.debian.org/debian"


def test_bases_run_default_first_then_by_version(tmp_path):
    for n in ("7.3", "10.1", "6.12", "6.6"):
        (tmp_path / f"{n}.toml").write_text("")
    assert base.names(tmp_path) == ["6.12", "6.6", "7.3", "10.1"]


def test_an_unknown_base_lists_the_bases():
    with pytest.raises(LabError, match=r"^BASE=7\.4: no such base; the bases "
                       r"\(bases/<name>\.toml\): 6\.12, 7\.3$"):
        base.load("7.4")


@pytest.mark.parametrize("text, msg", [
    (f'package = "p"\nversion = "v"\n{WHERE}', "^bases/6.12.toml: missing key 'sha256'$"),
    (f'package = "p"\nversion = "v"\nsha265 = "{SHA}"\n{WHERE}',
     r"^bases/6.12.toml: unknown key 'sha265' \(did you mean 'sha256'\?\)$"),
    (f'package = "p"\nversion = 6\nsha256 = "{SHA}"\n{WHERE}',
     r"^bases/6.12.toml: 'version' must be a string, not an integer \(6\)$"),
    (f'package = "p"\nversion = "v"\nsha256 = "abc"\n{WHERE}', "'sha256' must be 64 hex digits"),
    (f'package = "p"\nversion = "v"\nsha256 = "{SHA}"\n', "^bases/6.12.toml: missing key 'uri'$"),
    (f'package = "p"\nversion = "v"\nsha256 = "{SHA}"\n' + WHERE.replace("http:", "ftp:"),
     "'uri' must be an http"),
    (f'package = "p"\nversion = "v"\nsha256 = "{SHA}"\n'
     + WHERE.replace("trixie-backports", "trixie backports"), "'suite' must be apt's word"),
    (f'package = "p"\nversion = "v"\nsha256 = "{SHA}"\ncomponents = []\n{WHERE}',
     "'components' must be apt's word"),
    (f'package = "p"\nversion = "v"\nsha256 = "{SHA}"\n'
     + WHERE.replace('"/usr/share/keyrings/', '"'), "'keyring' must be an absolute path"),
])
def test_a_bad_base_is_one_line(text, msg):
    with pytest.raises(LabError, match=msg):
        base.parse(text)


def fake_apt(tmp_path, monkeypatch, script):
    """apt-get replaced by script; every call's argv lands in calls.txt."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    f = bindir / "apt-get"
    f.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'calls.txt'}\n" + script)
    f.chmod(f.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setattr(base.paths, "CACHE", tmp_path / "cache")
    return tmp_path / "calls.txt"


def test_missing_package_is_one_line(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch,
             "echo \"E: Version '9.9' for 'linux-source-6.12' was not found\" >&2; exit 100\n")
    with pytest.raises(LabError) as e:
        apt.download("linux-source-6.12=9.9", tmp_path / "dl")
    assert str(e.value) == ("apt-get download linux-source-6.12=9.9 failed: "
                            "E: Version '9.9' for 'linux-source-6.12' was not found")


def test_unreachable_apt_is_one_line(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch,
             "echo 'Err:1 http://deb.example linux-source-6.12'\n"
             "echo 'E: Failed to fetch http://deb.example/x.deb  Temporary failure resolving' >&2\n"
             "exit 100\n")
    with pytest.raises(LabError, match="failed: E: Failed to fetch .* Temporary failure resolving$"):
        apt.download("linux-source-6.12=1", tmp_path / "dl")


def test_checksum_mismatch_is_refused(tmp_path, monkeypatch):
    # apt "downloads" a .deb whose tarball is not the pinned one.
    pkg = tmp_path / "pkg"
    (pkg / "usr/src").mkdir(parents=True)
    (pkg / "usr/src/linux-source-6.12.tar.xz").write_bytes(b"not the pinned tarball")
    (pkg / "DEBIAN").mkdir()
    (pkg / "DEBIAN/control").write_text("Package: linux-source-6.12\nVersion: 1\n"
                                        "Architecture: all\nMaintainer: x <x@x>\nDescription: x\n")
    subprocess.run(["dpkg-deb", "-b", str(pkg), str(tmp_path / "l.deb")], check=True,
                   capture_output=True)
    calls = fake_apt(tmp_path, monkeypatch,
                     f'case "$*" in *download*) cp {tmp_path / "l.deb"} . ;; esac\n')
    monkeypatch.delenv("LAB_BASE_TARBALL", raising=False)
    want = base.Base("6.12", "linux-source-6.12", "1", "0" * 64, "http://deb.example/debian",
                     "bookworm-security", ("main",), "/dev/null")
    with pytest.raises(LabError, match="sha256 mismatch .* expected 0{64}, got [0-9a-f]{64}"):
        base.tarball(want)
    assert not list((tmp_path / "cache").glob("*.tar.xz"))   # nothing unverified is kept
    # update, then download, both with the base's private configuration
    update, download = calls.read_text().splitlines()
    private = f"Dir::Etc::SourceList={tmp_path}/cache/apt/6.12/etc/sources.list"
    assert private in update and update.endswith(" update")
    assert private in download and download.endswith(" download linux-source-6.12=1")


def test_a_suite_that_cannot_be_reached_is_one_line_naming_it(tmp_path, monkeypatch):
    # apt-get update's words when the host does not resolve (apt 2.6, Error-Mode=any)
    fake_apt(tmp_path, monkeypatch, """case "$*" in *update*)
echo 'Err:1 http://deb.invalid/debian trixie-backports InRelease'
echo "  Could not resolve 'deb.invalid'"
echo "E: Failed to fetch http://deb.invalid/debian/dists/trixie-backports/InRelease  \
Could not resolve 'deb.invalid'" >&2
echo 'E: Some index files failed to download. They have been ignored, or old ones used instead.' >&2
exit 100 ;; esac
exit 0
""")
    b = base.Base("7.3", "linux-source-7.3", "1", "0" * 64, "http://deb.invalid/debian",
                  "trixie-backports", ("main",), "/dev/null")
    with pytest.raises(LabError) as e:
        base.fetch_deb(b, tmp_path / "dl")
    assert str(e.value) == (
        "base 7.3: cannot reach trixie-backports at http://deb.invalid/debian: apt-get update: "
        "E: Failed to fetch http://deb.invalid/debian/dists/trixie-backports/InRelease  "
        "Could not resolve 'deb.invalid'")


def test_a_version_the_suite_dropped_says_what_to_do(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch, """case "$*" in *download*)
echo "E: Version '7.3.4-1~bpo13+1' for 'linux-source-7.3' was not found" >&2; exit 100 ;; esac
""")
    b = base.Base("7.3", "linux-source-7.3", "7.3.4-1~bpo13+1", "0" * 64,
                  "http://deb.debian.org/debian", "trixie-backports", ("main",), "/dev/null")
    with pytest.raises(LabError, match=r"^apt-get download linux-source-7.3=7.3.4-1~bpo13\+1 from "
                       r"trixie-backports at http://deb.debian.org/debian failed: E: Version .* "
                       r"was not found \(the suite no longer has it\? bump bases/7.3.toml, "
                       r"or point its uri at snapshot.debian.org, or set BASE_TARBALL\)$"):
        base.fetch_deb(b, tmp_path / "dl")


def test_a_missing_keyring_is_named(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch, "exit 0\n")
    b = base.Base("7.3", "linux-source-7.3", "1", "0" * 64, "http://deb.debian.org/debian",
                  "trixie-backports", ("main",), str(tmp_path / "no-keyring.gpg"))
    with pytest.raises(LabError, match=r"keyring .*no-keyring.gpg that signs trixie-backports "
                       r"at http://deb.debian.org/debian is missing \(apt: debian-archive-keyring\)"):
        base.fetch_deb(b, tmp_path / "dl")
    assert not (tmp_path / "calls.txt").exists()        # apt never ran


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
