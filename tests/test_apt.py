"""lab/apt.py: the private configuration a base's package is fetched with,
apt's words read as one line, one apt command at a time."""
import threading
import time

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
