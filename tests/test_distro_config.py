"""Debian's configs of the bases (bases/<base>.toml [distro_config]): the
config name of each arch, the fetch, and the check of what Kconfig left of
the fragments' options (lab/kernel.py), distro or make test's."""
import lzma
import shutil
import subprocess

import pytest

from lab import base, profile
from lab.progress import LabError
from tests.test_base import fake_apt

needs_dpkg_deb = pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="no dpkg-deb")


# ------------------------------------------------------ Debian's config names

@pytest.mark.parametrize("arch, name", [("x86_64", "config.amd64_none_amd64.xz"),
                                        ("arm64", "config.arm64_none_arm64.xz")])
def test_each_arch_takes_debian_s_generic_config(arch, name):
    debian_arch = profile.load(arch).debian_arch
    assert base.config_name(debian_arch) == name
    assert base.parse_config_name(name) == (debian_arch, "none", debian_arch)
    dc = base.load("7.3").distro_config
    assert dc.member(debian_arch) == f"usr/src/linux-config-7.3/{name}"
    assert dc.spec(debian_arch) == f"linux-config-7.3:{debian_arch}=7.3.4-1~bpo13+1"


@pytest.mark.parametrize("name, parsed", [
    ("config.arm64_rt_arm64.xz", ("arm64", "rt", "arm64")),          # 6.12's rt
    ("config.arm64_none_rt-arm64.xz", ("arm64", "none", "rt-arm64")),  # 7.3's rt
    ("config.arm64_none_arm64-16k.xz", ("arm64", "none", "arm64-16k")),
    ("config.amd64_none_cloud-amd64.xz", ("amd64", "none", "cloud-amd64")),
    ("config.amd64_none_amd64", None),                               # not as shipped
    ("changelog.Debian.gz", None)])
def test_debian_s_config_names_parse(name, parsed):
    assert base.parse_config_name(name) == parsed


def test_the_bases_pin_both_arches_configs():
    for name in base.names():
        dc = base.load(name).distro_config
        assert dc.package == f"linux-config-{name}"
        assert dc.version == base.load(name).version
        assert sorted(dict(dc.sha256)) == ["amd64", "arm64"]


SHA = "ab" * 32
BASE_TEXT = (f'package = "linux-source-7.3"\nversion = "1"\nsha256 = "{SHA}"\n'
             'uri = "http://deb.debian.org/debian"\nsuite = "trixie-backports"\n'
             'keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"\n')


@pytest.mark.parametrize("table, msg", [
    ('[distro_config]\npackage = "p"\nversion = "1"\nsha256.amd46 = "' + SHA + '"\n',
     r"^bases/7.3.toml: \[distro_config\] sha256: 'amd46' is no Debian arch of "
     r"lab/arch_profiles/ \(amd64, arm64\)$"),
    ('[distro_config]\npackage = "p"\nversion = "1"\nsha256.arm64 = "abc"\n',
     r"^bases/7.3.toml: \[distro_config\] sha256 of arm64 must be 64 hex digits, not 'abc'$"),
    ('[distro_config]\npackage = "p"\nsha256.arm64 = "' + SHA + '"\n',
     r"^bases/7.3.toml: \[distro_config\]: missing key 'version'$")])
def test_a_bad_distro_config_table_is_one_line(table, msg):
    with pytest.raises(LabError, match=msg):
        base.parse(BASE_TEXT + table, "7.3")


def test_a_base_without_distro_config_says_so():
    b = base.parse(BASE_TEXT, "7.3")
    assert b.distro_config is None
    with pytest.raises(LabError, match=r"^bases/7.3.toml has no \[distro_config\] "):
        base.distro_config("amd64", b)
    b = base.parse(BASE_TEXT + f'[distro_config]\npackage = "p"\nversion = "1"\n'
                   f'sha256.amd64 = "{SHA}"\n', "7.3")
    with pytest.raises(LabError, match=r"^bases/7.3.toml: \[distro_config\] has no sha256 "
                       r"for arm64 \(config.arm64_none_arm64.xz of p 1\)$"):
        base.distro_config("arm64", b)


# ------------------------------------------------------------ the fetch

def config_deb(tmp_path, names: dict[str, bytes]):
    """linux-config-7.3's arm64 package with these files in usr/src/linux-config-7.3/."""
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN/control").write_text(
        "Package: linux-config-7.3\nVersion: 1\nArchitecture: arm64\n"
        "Maintainer: A <a@example.org>\nDescription: x\n")
    d = pkg / "usr/src/linux-config-7.3"
    d.mkdir(parents=True)
    for name, data in names.items():
        (d / name).write_bytes(data)
    out = tmp_path / "linux-config-7.3_1_arm64.deb"
    subprocess.run(["dpkg-deb", "-b", str(pkg), str(out)], check=True, capture_output=True)
    return out


def fake_base(sha: str) -> base.Base:
    return base.Base("7.3", "linux-source-7.3", "1", "0" * 64, "http://deb.example/debian",
                     "trixie-backports", ("main",), "/dev/null",
                     base.DistroConfig("linux-config-7.3", "1", (("arm64", sha),)))


@needs_dpkg_deb
def test_the_config_is_fetched_for_its_arch_checked_and_kept(tmp_path, monkeypatch):
    xz = lzma.compress(b"CONFIG_KVM=y\n")
    made = config_deb(tmp_path, {"config.arm64_none_arm64.xz": xz})
    calls = fake_apt(tmp_path, monkeypatch, f'case "$*" in *download*) cp {made} . ;; esac\n')
    sha = base.sha256_of(made.parent / "pkg/usr/src/linux-config-7.3/config.arm64_none_arm64.xz")
    got = base.distro_config("arm64", fake_base(sha))
    assert got == tmp_path / "cache/linux-config-7.3_1_config.arm64_none_arm64.xz"
    assert got.read_bytes() == xz
    update, download = calls.read_text().splitlines()
    assert download.endswith(" download linux-config-7.3:arm64=1")
    # arm64's index, whatever dpkg on this host knows
    assert 'APT::Architectures { "amd64"; "arm64"; };' in (
        tmp_path / "cache/apt/7.3/etc/apt.conf").read_text()
    base.distro_config("arm64", fake_base(sha))               # kept: apt not asked again
    assert len(calls.read_text().splitlines()) == 2


@needs_dpkg_deb
def test_a_config_of_another_sha256_is_refused(tmp_path, monkeypatch):
    made = config_deb(tmp_path, {"config.arm64_none_arm64.xz": b"another"})
    fake_apt(tmp_path, monkeypatch, f'case "$*" in *download*) cp {made} . ;; esac\n')
    with pytest.raises(LabError, match=r"^base: sha256 mismatch for config.arm64_none_arm64.xz "
                       r"from linux-config-7.3_1_arm64.deb: expected a{64}, got [0-9a-f]{64}$"):
        base.distro_config("arm64", fake_base("a" * 64))
    assert not list((tmp_path / "cache").glob("linux-config*"))


@needs_dpkg_deb
def test_a_package_without_the_generic_config_names_the_arch_s_configs(tmp_path, monkeypatch):
    made = config_deb(tmp_path, {"config.arm64_none_cloud-arm64.xz": b"c",
                                 "config.arm64_rt_arm64.xz": b"r",
                                 "config.amd64_none_amd64.xz": b"a"})
    fake_apt(tmp_path, monkeypatch, f'case "$*" in *download*) cp {made} . ;; esac\n')
    with pytest.raises(LabError) as e:
        base.distro_config("arm64", fake_base("a" * 64))
    assert str(e.value) == (
        "linux-config-7.3_1_arm64.deb has no usr/src/linux-config-7.3/config.arm64_none_arm64.xz: "
        "Debian's generic arm64 config is missing; the package's arm64 configs: "
        "config.arm64_none_cloud-arm64.xz, config.arm64_rt_arm64.xz")


def test_a_config_package_the_suite_lacks_is_one_line(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch, """case "$*" in *download*)
echo "E: Version '1' for 'linux-config-7.3:arm64' was not found" >&2; exit 100 ;; esac
""")
    with pytest.raises(LabError) as e:
        base.distro_config("arm64", fake_base("a" * 64))
    assert str(e.value) == (
        "apt-get download linux-config-7.3:arm64=1 from trixie-backports at "
        "http://deb.example/debian failed: E: Version '1' for 'linux-config-7.3:arm64' was not "
        "found (the suite no longer has it? bump bases/7.3.toml, or point its uri at "
        "snapshot.debian.org, or set BASE_TARBALL)")


def test_a_suite_that_cannot_be_reached_names_it(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch, """case "$*" in *update*)
echo "E: Failed to fetch http://deb.example/debian/dists/trixie-backports/InRelease  \
Could not resolve 'deb.example'" >&2; exit 100 ;; esac
""")
    with pytest.raises(LabError, match=r"^base 7.3: cannot reach trixie-backports at "
                       r"http://deb.example/debian: apt-get update: E: Failed to fetch "):
        base.distro_config("arm64", fake_base("a" * 64))

