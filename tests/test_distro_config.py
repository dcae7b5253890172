"""Debian's configs of the bases (bases/<base>.toml [distro_config]): the
config name of each arch, the fetch, and the check of what Kconfig left of
the fragments' options (lab/kernel.py), distro or make test's."""
import lzma
import shutil
import subprocess

import pytest

from lab import base, kernel, paths, profile
from lab.kernel import Build
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


# ------------------------------------------------- what the fragments ask

def fragment(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    return f


def test_an_option_dropped_or_changed_is_named_with_its_fragment(tmp_path):
    common = fragment(tmp_path, "common.config", "CONFIG_KVM=y\nCONFIG_DAMON=y\n"
                      "# CONFIG_DEBUG_VM is not set\nCONFIG_NR_CPUS=64\n")
    arch = fragment(tmp_path, "x86_64.config", "CONFIG_DAMON_SYSFS=y\nCONFIG_KVM_AMD=y\n")
    want = kernel.requested_options([common, arch])
    made = ("CONFIG_KVM=y\nCONFIG_DEBUG_VM=y\nCONFIG_NR_CPUS=8192\nCONFIG_KVM_AMD=y\n"
            "CONFIG_DAMON_SYSFS=y\n")
    assert kernel.unmet_options(want, made) == [
        f"CONFIG_DAMON dropped ({common} wants y, got n)",
        f"CONFIG_DEBUG_VM changed ({common} wants n, got y)",
        f"CONFIG_NR_CPUS changed ({common} wants 64, got 8192)"]


def test_the_last_fragment_that_sets_an_option_is_named(tmp_path):
    a = fragment(tmp_path, "a.config", "CONFIG_KVM=m\n")
    b = fragment(tmp_path, "b.config", "CONFIG_KVM=y\n")
    assert kernel.unmet_options(kernel.requested_options([a, b]), "") == [
        f"CONFIG_KVM dropped ({b} wants y, got n)"]


@pytest.mark.parametrize("wants, got, modules, ok", [
    ("y", "m", True, True),      # Debian's KVM=m on amd64: the series is there, a module
    ("m", "y", True, True),
    ("y", "m", False, False),    # make test's kernels load no module
    ("y", "n", True, False),     # a module is something; nothing is not
    ("n", "m", True, False),
    ("64", "y", True, False)])
def test_a_module_meets_a_y_in_a_distro_config_only(tmp_path, wants, got, modules, ok):
    f = fragment(tmp_path, "common.config", f"CONFIG_X={wants}\n")
    made = f"CONFIG_X={got}\n" if got != "n" else "# CONFIG_X is not set\n"
    bad = kernel.unmet_options(kernel.requested_options([f]), made, modules=modules)
    assert (bad == []) == ok


def distro_build(tmp_path, monkeypatch, debian_text: str, arch: str = "x86_64") -> Build:
    """A distro build of arch in a stand-in tree, Debian's config debian_text."""
    monkeypatch.setattr(paths, "TREE", tmp_path / "linux")
    monkeypatch.setattr(paths, "BASE_BUILD", tmp_path)
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    xz = tmp_path / "debian.config.xz"
    xz.write_bytes(lzma.compress(debian_text.encode()))
    monkeypatch.setattr(kernel.base, "distro_config", lambda debian_arch: xz)
    return Build(profile.load(arch), "patched", debug=False, distro=True)


def test_a_distro_config_keeps_debian_s_modules_and_takes_the_rest(tmp_path, monkeypatch):
    b = distro_build(tmp_path, monkeypatch, "CONFIG_KVM=m\nCONFIG_KVM_AMD=m\n"
                     "# CONFIG_IDLE_PAGE_TRACKING is not set\nCONFIG_DAMON=y\n")
    assert [f.name for f in b.fragments()] == ["common.config", "x86_64.config"]
    b.out.mkdir(parents=True)
    want = kernel.requested_options(b.fragments())
    assert kernel._distro_start(b, want) == b.out / "debian.config"
    merged = kernel.config_values((b.out / "fragments.config").read_text())
    assert "CONFIG_KVM" not in merged and "CONFIG_KVM_AMD" not in merged   # Debian's m
    assert merged["CONFIG_IDLE_PAGE_TRACKING"] == "y"                     # Debian's n
    assert merged["CONFIG_DAMON"] == "y"
    assert merged["CONFIG_KVM_INTEL"] == "y"                              # Debian has none


def fake_kconfig(monkeypatch, result: str, argvs: list):
    """run_logged standing in for merge_config.sh and make: make (olddefconfig,
    allnoconfig) leaves result as O='s .config."""
    def run(argv, log, what, cwd=None, env=None, explain=None, timeout=None):
        argvs.append(argv)
        if argv[0] == "make":
            out = next(a.removeprefix("O=") for a in argv if a.startswith("O="))
            (kernel.Path(out) / ".config").write_text(result)
        return 0.0
    monkeypatch.setattr(kernel, "run_logged", run)


def test_a_distro_config_is_debian_s_made_current_and_checked(tmp_path, monkeypatch, capsys):
    debian = "CONFIG_KVM=m\nCONFIG_DEBUG_INFO_BTF=y\nCONFIG_DAMON=y\n"
    b = distro_build(tmp_path, monkeypatch, debian)
    argvs = []
    want = kernel.requested_options(b.fragments())
    made = "".join(f"{o}={'m' if o == 'CONFIG_KVM' else w.value}\n"
                   for o, w in want.items() if w.value != "n")
    fake_kconfig(monkeypatch, made, argvs)
    kernel.configure(b)
    merge, make = argvs
    assert merge[-2:] == [str(b.out / "debian.config"), str(b.out / "fragments.config")]
    assert make[-1] == "olddefconfig"
    # Debian's own option that olddefconfig dropped (no pahole here) is said
    assert ("olddefconfig dropped 1 of Debian's options, CONFIG_DEBUG_INFO_BTF: "
            in capsys.readouterr().err)
    # the same result without KVM_INTEL: one line naming option, fragment, wanted and got
    fake_kconfig(monkeypatch, made.replace("CONFIG_KVM_INTEL=y\n", "CONFIG_KVM_INTEL=m\n")
                 .replace("CONFIG_DAMON_SYSFS=y\n", ""), [])
    with pytest.raises(LabError) as e:
        kernel.configure(b)
    assert str(e.value) == (
        "config distro-config-x86_64: config.amd64_none_amd64.xz + the fragments, "
        "olddefconfig: CONFIG_DAMON_SYSFS dropped (configs/common.config wants y, got n) "
        f"(see {b.out / '.config'})")


def test_make_test_s_config_is_allnoconfig_and_exact(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "TREE", tmp_path / "linux")
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    b = Build(profile.load("x86_64"), "patched", debug=True, deb=True)
    want = kernel.requested_options(b.fragments())
    made = "".join(f"{o}={'m' if o == 'CONFIG_KVM_AMD' else w.value}\n"
                   for o, w in want.items() if w.value != "n")
    argvs = []
    fake_kconfig(monkeypatch, made, argvs)
    with pytest.raises(LabError, match=r"^config deb-x86_64-test: allnoconfig \+ the fragments: "
                       r"CONFIG_KVM_AMD changed \(configs/x86_64.config wants y, got m\) \(see "):
        kernel.configure(b)
    assert argvs[0][-len(b.fragments()):] == [str(f) for f in b.fragments()]
    assert argvs[1][-1] == "allnoconfig"


def test_options_debian_builds_that_olddefconfig_dropped():
    """Only what Debian builds: a string or number goes with the option it
    belongs to (7.3's DRM_PANIC_SCREEN_QR_CODE_URL with ..._QR_CODE)."""
    start = {"CONFIG_A": "y", "CONFIG_B": "m", "CONFIG_C": "y", "CONFIG_URL": '"https://x"'}
    assert kernel.dropped(start, "CONFIG_A=y\n") == ["CONFIG_B", "CONFIG_C"]
