"""make kselftest-tar: a host's list ([[host]] of a test list) is checked as
the rest of the list is, and the bundle holds the kselftest install, the
harness's tests and, for a host, one collection per test (its wrapper with
the host's arguments, its settings with the timeout) that run_kselftest.sh
runs and nothing else."""
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from lab import initramfs, ksftbundle, lava, profile, selftests, testlist
from lab.progress import LabError

LIST = """
[[boot]]
name = "tdp"
[[test]]
name = "dirty_log_perf_test"
args = "-b 64M"
[[test]]
name = "nx_huge_pages_test.sh"
files = ["nx_huge_pages_test"]
[[test]]
name = "hardware_disable_test"
skip = "segfaults when linked static"
[[host]]
name = "big"
cpus = 96
memory = "192G"
cmdline = "hugepagesz=1G hugepages=100"
[[host.test]]
name = "dirty_log_perf_test"
label = "dirty_log_perf_test-1g"
args = "-v 96 -b 1G  -s anonymous_hugetlb_1gb"
timeout = 1800
[[host.test]]
name = "nx_huge_pages_test.sh"
args = "-e split"
timeout = 600
[[host.test]]
name = "dirty_log_perf_test"
args = "-v 64"
timeout = 900
[[host.test]]
name = "hardware_disable_test"
timeout = 60
"""


@pytest.fixture
def tl():
    return testlist.parse(LIST, "x86_64", "t.toml")


def test_a_host_s_tests_carry_its_arguments_and_timeouts(tl):
    h = tl.host("big")
    assert (h.cpus, h.memory, h.cmdline) == (96, "192G", "hugepagesz=1G hugepages=100")
    assert [(t.name, t.label, t.timeout) for t in h.tests] == [
        ("dirty_log_perf_test", "dirty_log_perf_test-1g", 1800),
        ("nx_huge_pages_test.sh", "nx_huge_pages_test.sh", 600),
        ("dirty_log_perf_test", "dirty_log_perf_test", 900),
        ("hardware_disable_test", "hardware_disable_test", 60)]
    # a test TCG cannot run (skip) is the host's all the same
    assert "    hardware_disable_test  [60 s]" in testlist.describe(tl)
    assert "dirty_log_perf_test -v 96 -b 1G  -s anonymous_hugetlb_1gb (dirty_log_perf_test-1g)  " \
           "[1800 s]" in testlist.describe(tl)


def _with_host_test(entry: str) -> str:
    return LIST + "[[host.test]]\n" + entry


@pytest.mark.parametrize("bad, msg", [
    (_with_host_test('name = "dirty_log_perf_tset"\ntimeout = 9\n'),
     r"^t.toml: \[\[host\]\] 'big', test 'dirty_log_perf_tset': not a \[\[test\]\] of this "
     r"list \(did you mean 'dirty_log_perf_test'\?\)$"),
    (_with_host_test('name = "demand_paging_test"\nlabel = "d"\ntimeout = 9\n'),
     r"test 'demand_paging_test': not a \[\[test\]\] of this list$"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "x"\nargz = "-v 2"\ntimeout = 9\n'),
     r"^t.toml: \[\[host\]\] 'big', test 'dirty_log_perf_test': unknown key 'argz' "
     r"\(did you mean 'args'\?\)$"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "x"\n'),
     r"^t.toml: \[\[host\]\] 'big', test 'dirty_log_perf_test': missing key 'timeout'$"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "x"\ntimeout = "60"\n'),
     r"'timeout' must be an integer, not a string"),
    (_with_host_test('name = "dirty_log_perf_test"\ntimeout = 9\n'),
     r"test 'dirty_log_perf_test': the label 'dirty_log_perf_test' is taken"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "../x"\ntimeout = 9\n'),
     r"label '../x': letters"),
    (_with_host_test('name = "dirty_log_perf_test"\nlabel = "x"\ntimeout = 0\n'),
     r"timeout 0: not a number of seconds"),
    (LIST.replace('memory = "192G"', 'memory = "192 GiB"'), r"\[\[host\]\] 'big': memory"),
    (LIST.replace('cpus = 96', 'cpu = 96'),
     r"^t.toml: \[\[host\]\] 'big': unknown key 'cpu' \(did you mean 'cpus'\?\)$"),
    (LIST + '[[host]]\nname = "big"\ncpus = 1\nmemory = "1G"\n[[host.test]]\n'
     'name = "dirty_log_perf_test"\ntimeout = 1\n', "host names repeat"),
    (LIST + '[[host]]\nname = "small"\ncpus = 1\nmemory = "1G"\ntest = []\n',
     r"\[\[host\]\] 'small': no test"),
    (LIST.replace('[[host]]\nname = "big"', '[[hosts]]\nname = "big"'),
     r"unknown key 'hosts' \(did you mean 'host'\?\)"),
], ids=["typo", "no-such-test", "unknown-key", "no-timeout", "timeout-string", "label-twice",
        "label-path", "timeout-0", "memory", "host-unknown-key", "host-twice", "no-tests",
        "hosts-table"])
def test_bad_hosts_are_refused(bad, msg):
    with pytest.raises(LabError, match=msg):
        testlist.parse(bad, "x86_64", "t.toml")


def test_an_unknown_host_is_named_with_the_list_s_hosts(tl):
    with pytest.raises(LabError, match=r"^t.toml has no \[\[host\]\] 'bgi'; its hosts: big$"):
        tl.host("bgi")


def test_kselftest_tar_names_an_unknown_host_before_building(capsys, monkeypatch):
    from lab import buildcache, cli

    def no_build(*args, **kwargs):
        raise AssertionError("built before the host was checked")
    monkeypatch.setattr(buildcache, "build_kernel", no_build)
    monkeypatch.setattr(buildcache, "build_selftests", no_build)
    assert cli.main(["kselftest-tar", "--arch", "x86_64", "--host", "no-such-host"]) == 1
    assert "testlists/6.12/x86_64.toml has no [[host]] 'no-such-host'" in capsys.readouterr().err


def test_each_host_test_is_a_collection_in_the_list_s_order(tl):
    cases = ksftbundle.host_cases(tl, tl.host("big"))
    assert [(c.collection, c.test.label) for c in cases] == [
        ("kvm-host/01", "dirty_log_perf_test-1g"), ("kvm-host/02", "nx_huge_pages_test.sh"),
        ("kvm-host/03", "dirty_log_perf_test"), ("kvm-host/04", "hardware_disable_test")]
    # run_kselftest.sh runs the collections it is given in sort order
    assert sorted(c.collection for c in cases) == [c.collection for c in cases]
    assert [c.settings for c in cases] == ["timeout=1800\n", "timeout=600\n", "timeout=900\n",
                                           "timeout=60\n"]
    assert cases[0].wrapper.endswith(
        "\nexec ./dirty_log_perf_test -v 96 -b 1G -s anonymous_hugetlb_1gb\n")


def test_collection_numbers_sort_past_99():
    many = LIST + "".join(f'[[host.test]]\nname = "dirty_log_perf_test"\nlabel = "d{i}"\n'
                          f"timeout = 1\n" for i in range(100))
    tl = testlist.parse(many, "x86_64", "t.toml")
    names = [c.collection for c in ksftbundle.host_cases(tl, tl.host("big"))]
    assert names[0] == "kvm-host/001" and sorted(names) == names


def _install(root):
    """A kselftest install as the kernel's selftests Makefile leaves it."""
    install = root / "kselftest_install"
    (install / "kvm").mkdir(parents=True)
    (install / "kselftest").mkdir()
    (install / "run_kselftest.sh").write_text("#!/bin/sh\n")
    (install / "run_kselftest.sh").chmod(0o755)
    (install / "kselftest/runner.sh").write_text("")
    (install / "kvm/settings").write_text("timeout=120\n")
    for name in ("dirty_log_perf_test", "nx_huge_pages_test.sh", "nx_huge_pages_test",
                 "hardware_disable_test"):
        # each program prints where it ran and its arguments, one a line
        (install / "kvm" / name).write_text('#!/bin/sh\npwd\nfor a; do echo "[$a]"; done\n')
        (install / "kvm" / name).chmod(0o755)
    (install / "kselftest-list.txt").write_text(
        "kvm:dirty_log_perf_test\nkvm:nx_huge_pages_test.sh\nkvm:hardware_disable_test\n")
    return install


def _read(tar, name):
    return tar.extractfile(f"kselftest_install/{name}").read().decode()


def test_a_host_bundle_lists_its_tests_only(tmp_path, tl):
    install = _install(tmp_path)
    if os.geteuid() == 0:       # a file of the builder's, not root's
        os.chown(install / "kvm/dirty_log_perf_test", 12345, 12345)
    dest = ksftbundle.write(install, tmp_path / "b.tar.gz", tl, tl.host("big"))
    with tarfile.open(dest) as tar:
        names = tar.getnames()
        assert _read(tar, "kselftest-list.txt").split() == [
            "kvm-host/01:dirty_log_perf_test-1g", "kvm-host/02:nx_huge_pages_test.sh",
            "kvm-host/03:dirty_log_perf_test", "kvm-host/04:hardware_disable_test"]
        assert _read(tar, "kvm-host/02/settings") == "timeout=600\n"
        wrapper = tar.getmember("kselftest_install/kvm-host/01/dirty_log_perf_test-1g")
        assert wrapper.mode == 0o755
        assert "hugepagesz=1G hugepages=100" in _read(tar, "kvm-host/host.txt")
        assert all((m.uid, m.gid, m.uname, m.gname) == (0, 0, "root", "root")
                   for m in tar.getmembers())
    assert names.count("kselftest_install/kselftest-list.txt") == 1
    for kept in ("run_kselftest.sh", "kselftest/runner.sh", "kvm/settings", "kvm/nx_huge_pages_test"):
        assert f"kselftest_install/{kept}" in names
    for n in initramfs.harness_tests():
        assert f"kselftest_install/kvm/{n}" in names


def test_the_wrapper_runs_the_program_in_kvm_with_the_host_s_arguments(tmp_path, tl):
    dest = ksftbundle.write(_install(tmp_path / "src"), tmp_path / "b.tar.gz", tl, tl.host("big"))
    with tarfile.open(dest) as tar:
        tar.extractall(tmp_path / "out", filter="fully_trusted")
    top = tmp_path / "out/kselftest_install"
    # as the runner does: from the collection's folder, ./<test>
    out = subprocess.run(["./dirty_log_perf_test-1g"], cwd=top / "kvm-host/01",
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert Path(out[0]).resolve() == (top / "kvm").resolve()
    assert out[1:-1] == ["[-v]", "[96]", "[-b]", "[1G]", "[-s]", "[anonymous_hugetlb_1gb]"]


def test_a_wrapper_passes_shellcheck(tl):
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck is not installed: make deps installs it (apt: shellcheck)")
    for c in ksftbundle.host_cases(tl, tl.host("big")):
        proc = subprocess.run(["shellcheck", "-s", "sh", "-"], input=c.wrapper,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


def test_a_host_test_the_install_lacks_is_named(tmp_path, tl):
    install = _install(tmp_path)
    (install / "kvm/nx_huge_pages_test").unlink()
    with pytest.raises(LabError, match=r"^t.toml: \[\[host\]\] 'big', test 'nx_huge_pages_test.sh': "
                       r"the kvm selftests in .* lack nx_huge_pages_test$"):
        ksftbundle.write(install, tmp_path / "b.tar.gz", tl, tl.host("big"))
    assert not (tmp_path / "b.tar.gz").exists()


def test_without_a_host_the_bundle_lists_every_test_and_the_harness_s(tmp_path):
    dest = ksftbundle.write(_install(tmp_path), tmp_path / "b.tar.gz")
    ours = sorted(initramfs.harness_tests())
    with tarfile.open(dest) as tar:
        names = tar.getnames()
        assert _read(tar, "kselftest-list.txt").split() == [
            "kvm:dirty_log_perf_test", "kvm:nx_huge_pages_test.sh", "kvm:hardware_disable_test",
            *(f"kvm:{n}" for n in ours)]
        for n in ours:     # the runner runs what is executable only
            assert tar.getmember(f"kselftest_install/kvm/{n}").mode == 0o755
    assert not any(n.startswith("kselftest_install/kvm-host") for n in names)


def test_the_same_install_gives_the_same_bytes(tmp_path, tl):
    install = _install(tmp_path)
    a = ksftbundle.write(install, tmp_path / "a.tar.gz", tl, tl.host("big")).read_bytes()
    assert ksftbundle.write(install, tmp_path / "b.tar.gz", tl, tl.host("big")).read_bytes() == a


def test_make_lava_s_bundle_is_make_kselftest_tar_s(tmp_path, monkeypatch):
    install = _install(tmp_path / "build")
    monkeypatch.setattr(selftests, "install_dir", lambda b, src=None: install)
    lava.write({}, out=tmp_path / "lava")
    for arch in profile.arches():
        assert (tmp_path / "lava" / f"kselftest-{arch}.tar.gz").read_bytes() == \
            ksftbundle.write(install, tmp_path / f"{arch}.tar.gz").read_bytes()


@pytest.mark.parametrize("arch", profile.arches())
def test_shipped_hosts_load_and_name_files_of_their_bundle(arch):
    tl = testlist.load(arch)
    assert tl.hosts, f"{tl.file} has no [[host]]"
    for h in tl.hosts:
        assert ksftbundle.path(arch, h.name).name == f"kselftest-{arch}-{h.name}.tar.gz"
