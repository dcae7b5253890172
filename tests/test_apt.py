"""lab/apt.py: the private configuration a base's package is fetched with,
apt's words read as one line, one apt command at a time."""
import random
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from lab import apt, base, deps
from lab.progress import LabError


def test_the_private_configuration_is_the_base_s_own(tmp_path):
    b = base.load("7.3")
    options = apt.prepare(tmp_path, b.sources_line)
    assert (tmp_path / "etc/sources.list").read_text() == (
        "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        "http://deb.debian.org/debian trixie-backports main\n")
    for d in ("etc/sources.list.d", "etc/preferences.d", "lists/partial",
              "cache/archives/partial"):
        assert (tmp_path / d).is_dir()
    # the machine's update hooks do not run on our private lists
    assert options[:2] == ["-c", f"{tmp_path}/etc/apt.conf"]
    assert (tmp_path / "etc/apt.conf").read_text().splitlines() == [
        "#clear APT::Update::Post-Invoke;", "#clear APT::Update::Post-Invoke-Success;",
        "#clear APT::Update::Pre-Invoke;"]
    options = options[2:]
    pairs = dict(o.split("=", 1) for o in options[1::2])
    assert options[::2] == ["-o"] * len(pairs)
    assert pairs == {
        "Dir::Etc::SourceList": f"{tmp_path}/etc/sources.list",
        "Dir::Etc::SourceParts": f"{tmp_path}/etc/sources.list.d",
        "Dir::Etc::Preferences": f"{tmp_path}/etc/preferences",
        "Dir::Etc::PreferencesParts": f"{tmp_path}/etc/preferences.d",
        "Dir::State::Lists": f"{tmp_path}/lists",
        "Dir::Cache": f"{tmp_path}/cache",
        "Acquire::Languages": "none"}
    # nothing of the machine's configuration is named
    assert not any(o.startswith("/etc/apt") or "=/etc/apt" in o for o in options)


def test_the_private_configuration_may_index_other_architectures(tmp_path):
    apt.prepare(tmp_path, "deb x\n", ["amd64", "arm64"])
    assert (tmp_path / "etc/apt.conf").read_text().splitlines()[3:] == [
        "#clear APT::Architectures;", 'APT::Architectures { "amd64"; "arm64"; };']
    apt.prepare(tmp_path, "deb x\n")
    assert "Architectures" not in (tmp_path / "etc/apt.conf").read_text()


def test_each_base_has_its_configuration_under_the_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(apt.paths, "CACHE", tmp_path)
    assert apt.root("7.3") == tmp_path / "apt" / "7.3"
    assert apt.lock() == tmp_path / "apt.lock"


UNREACHABLE_26 = """\
Ign:1 http://deb.invalid/debian trixie-backports InRelease
Err:1 http://deb.invalid/debian trixie-backports InRelease
  Could not resolve 'deb.invalid'
Reading package lists...
E: Failed to fetch http://deb.invalid/debian/dists/trixie-backports/InRelease  Could not resolve 'deb.invalid'
E: Some index files failed to download. They have been ignored, or old ones used instead.
"""


@pytest.mark.parametrize("output, rc, why", [
    # apt 2.6 with Error-Mode=any (bookworm): exit 100, E: lines
    (UNREACHABLE_26, 100, "E: Failed to fetch http://deb.invalid/debian/dists/"
     "trixie-backports/InRelease  Could not resolve 'deb.invalid'"),
    # an apt without Error-Mode: the same as warnings, exit 0
    (UNREACHABLE_26.replace("E: ", "W: "), 0, "W: Failed to fetch http://deb.invalid/debian/"
     "dists/trixie-backports/InRelease  Could not resolve 'deb.invalid'"),
    ("Err:1 http://x s InRelease\n  403  Forbidden\nReading package lists...\n", 0,
     "Err:1 http://x s InRelease 403  Forbidden"),
    ("E: The repository 'http://x s InRelease' is not signed.\n", 100,
     "E: The repository 'http://x s InRelease' is not signed."),
    ("Get:1 http://deb.debian.org/debian trixie-backports InRelease [54.0 kB]\n"
     "Reading package lists...\n", 0, ""),
    ("", 1, "exit 1, no output"),
])
def test_why_apt_get_update_failed_is_apt_s_line(output, rc, why):
    assert apt.update_error(output, rc) == why


def test_apt_commands_run_one_at_a_time(monkeypatch, tmp_path):
    monkeypatch.setattr(apt.paths, "CACHE", tmp_path)
    monkeypatch.setattr(apt.shutil, "which", lambda name: "/usr/bin/" + name)
    running, most = [], []

    def fake_run(argv, **kw):
        running.append(argv)
        most.append(len(running))
        time.sleep(0.1)
        running.remove(argv)

    monkeypatch.setattr(apt.subprocess, "run", fake_run)
    threads = [threading.Thread(target=apt.run, args=(["apt-get", str(i)],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == [1, 1]


def test_no_apt_get_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(apt.paths, "CACHE", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LabError, match=r"^apt-get not found: the harness fetches Debian "
                       r"packages with apt \(set BASE_TARBALL to use a local tarball\)$"):
        apt.run(["apt-get", "update"])


def test_make_deps_installs_the_keyring_each_base_s_suite_is_signed_by():
    """The private configuration trusts only the keyring bases/<name>.toml
    names (signed-by): make deps must install the package that ships it."""
    listed = {tool for tool, _ in deps.parse(deps.LIST.read_text())}
    for name in base.names():
        assert base.load(name).keyring in listed, name


# Not compressible: a cut in the middle of the .deb is a cut in its data.
CONTENT = random.Random(1).randbytes(20000)


def a_deb(tmp_path: Path) -> Path:
    """A real .deb holding usr/src/f.tar.xz, built by dpkg-deb."""
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN/control").write_text("Package: lab-fixture\nVersion: 1\nArchitecture: all\n"
                                        "Maintainer: A <a@example.org>\nDescription: x\n")
    (pkg / "usr/src").mkdir(parents=True)
    (pkg / "usr/src/f.tar.xz").write_bytes(CONTENT)
    deb = tmp_path / "lab-fixture_1_all.deb"
    subprocess.run(["dpkg-deb", "-b", str(pkg), str(deb)], check=True, capture_output=True)
    return deb


needs_dpkg_deb = pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="no dpkg-deb")


@needs_dpkg_deb
def test_a_member_of_a_deb_is_extracted(tmp_path):
    deb = a_deb(tmp_path)
    got = apt.deb_member(deb, "usr/src/f.tar.xz", tmp_path / "out")
    assert got.read_bytes() == CONTENT
    with pytest.raises(LabError, match=r"^lab-fixture_1_all.deb has no usr/src/g.tar.xz$") as e:
        apt.deb_member(deb, "usr/src/g.tar.xz", tmp_path / "out2")
    assert e.value.present == ["f.tar.xz"]              # what its folder holds
    with pytest.raises(apt.MissingMember) as e:
        apt.deb_member(deb, "usr/share/g", tmp_path / "out3")
    assert e.value.present == []


@needs_dpkg_deb
@pytest.mark.parametrize("cut", [10000, 20])
def test_a_truncated_deb_is_one_line_naming_it_and_dpkg_deb_s_words(tmp_path, cut):
    good = a_deb(tmp_path)
    bad = tmp_path / "linux-source-7.3_7.3.4-1~bpo13+1_all.deb"
    bad.write_bytes(good.read_bytes()[:cut])
    with pytest.raises(LabError) as e:
        apt.deb_member(bad, "usr/src/f.tar.xz", tmp_path / "out")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"dpkg-deb -x {bad} failed (exit 2; a truncated or damaged "
                          "download?): dpkg-deb")
    assert "unexpected end of file" in msg
    assert not (tmp_path / "out").exists()


def test_dpkg_deb_s_words_on_one_line():
    out = ("dpkg-deb (subprocess): cannot copy archive member from 'x.deb' to decompressor "
           "pipe: unexpected end of file or stream\n"
           "tar: This does not look like a tar archive\n"
           "dpkg-deb: error: tar subprocess returned error exit status 2\n")
    assert apt.dpkg_deb_error(out, 2) == (
        "dpkg-deb (subprocess): cannot copy archive member from 'x.deb' to decompressor "
        "pipe: unexpected end of file or stream | dpkg-deb: error: tar subprocess returned "
        "error exit status 2")
    assert apt.dpkg_deb_error("tar: short read\n", 2) == "tar: short read"
    assert apt.dpkg_deb_error("", 2) == "exit 2, no output"


def test_no_dpkg_deb_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LabError, match=r"^dpkg-deb not found: it unpacks x.deb \(apt: dpkg\)$"):
        apt.deb_member(tmp_path / "x.deb", "bin/busybox", tmp_path / "busybox")


def test_an_apt_command_that_does_not_end_is_killed_and_said(monkeypatch, tmp_path):
    monkeypatch.setattr(apt.paths, "CACHE", tmp_path)
    fake = tmp_path / "apt-get"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    start = time.monotonic()
    with pytest.raises(LabError, match=r"^apt-get .*no end after 1 s"):
        apt.run(["apt-get", "download", "lava-dispatcher"], timeout=1)
    assert time.monotonic() - start < 10
