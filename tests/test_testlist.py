import os
import subprocess

import pytest

from lab import initramfs, ktap, paths, profile, testlist
from lab.progress import LabError

LIST = """
[defaults]
timeout = 60
[[boot]]
name = "tdp"
[[boot]]
name = "shadow"
cmdline = "kvm_amd.npt=0"
[[test]]
name = "dirty_log_test"
args = "-i 3"
[[test]]
name = "nx_huge_pages_test.sh"
timeout = 180
boots = ["tdp"]
[[test]]
name = "hardware_disable_test"
skip = "segfaults when linked static"
"""


def test_parse_defaults_and_boots():
    tl = testlist.parse(LIST, "x86_64", "t")
    assert [t.name for t in tl.tests_for("shadow")] == ["dirty_log_test", "hardware_disable_test"]
    nx = tl.tests[1]
    assert (nx.basename, nx.timeout, nx.boots) == ("nx_huge_pages_test.sh", 180, ("tdp",))
    assert tl.tests[0].timeout == 60
    # skipped tests take no time from the watchdog budget; the two longest
    # tests may run twice (the guest's retries per boot)
    assert tl.budget("tdp", 90) == 90 + 65 + 185 + 185 + 65


def test_a_full_boot_runs_only_the_tests_that_name_it():
    tl = testlist.parse(LIST + """
[[boot]]
name = "max-memslots"
full = true
[[test]]
name = "set_memory_region_test"
boots = ["max-memslots"]
""", "x86_64", "t")
    # dirty_log_test names no boot: every boot of the default run, not the full one
    assert tl.tests[0].boots == ("tdp", "shadow")
    assert [t.name for t in tl.tests_for("max-memslots")] == ["set_memory_region_test"]


def test_args_variable_matches_kselftest_runner():
    # runner.sh: tr -c "[:alnum:]_" "_" on the basename, then upper case
    tl = testlist.parse(LIST, "x86_64", "t")
    assert tl.tests[1].args_var == "KSELFTEST_NX_HUGE_PAGES_TEST_SH_ARGS"


def test_boot_script_runs_each_test_with_its_args_and_timeout():
    tl = testlist.parse(LIST, "x86_64", "t")
    script = initramfs.boot_script(tl, "tdp")
    assert ("run_test env KSELFTEST_DIRTY_LOG_TEST_ARGS='-i 3' ./run_kselftest.sh -o 60 "
            "-t kvm:dirty_log_test") in script
    assert "-o 180 -t kvm:nx_huge_pages_test.sh" in script
    assert "hardware_disable_test" not in script


@pytest.mark.parametrize("bad, msg", [
    ('[[boot]]\nname="a"\n[[test]]\nname="x"\nboots=["b"]\n', "unknown boot"),
    ('[[boot]]\nname="a"\n[[test]]\nname="x"\nargz="-i 1"\n',
     "t: \\[\\[test\\]\\] 'x': unknown key 'argz' \\(did you mean 'args'\\?\\)$"),
    ('[[boot]]\nname="a"\n[[test]]\nname="x"\ntimeout="60"\n',
     "t: \\[\\[test\\]\\] 'x': 'timeout' must be an integer, not a string \\('60'\\)$"),
    ('[[boot]]\nname="a"\n[[test]]\nname="x"\nboots="a"\n', "'boots' must be an array of strings"),
    ('[[boots]]\nname="a"\n', "t: unknown key 'boots' \\(did you mean 'boot'\\?\\)$"),
    ('[defaults]\ntimout=3\n[[boot]]\nname="a"\n',
     "t: \\[defaults\\]: unknown key 'timout' \\(did you mean 'timeout'\\?\\)$"),
    ('[[test]]\nname="x"\n', "no \\[\\[boot\\]\\]"),
    ('[[boot]]\nname="a"\n[[test]]\nname="x"\n[[test]]\nname="x"\n', "twice"),
    ('[[boot]]\nname="a"\n[[flaky]]\nmatch="SHUTDOWN"\n', "t: \\[\\[flaky\\]\\] #1: missing key 'why'$"),
    ('[[boot]]\nname="a"\n[[flaky]]\nmatch="x"\nwhy="y"\nknid="crash"\n',
     "t: \\[\\[flaky\\]\\] #1: unknown key 'knid' \\(did you mean 'kind'\\?\\)$"),
    ('[[boot]]\nname="a"\n[[flaky]]\nmatch="x"\nwhy="y"\nkind="crsh"\n',
     "'kind' is 'crsh', not one of 'failure', 'crash' \\(did you mean 'crash'\\?\\)$"),
    ('[[boot]]\nname="a"\n[[flaky]]\nmatch="(x"\nwhy="y"\n', "bad regex"),
])
def test_bad_lists_are_refused(bad, msg):
    with pytest.raises(LabError, match=msg):
        testlist.parse(bad, "x86_64", "t")


@pytest.mark.parametrize("arch", profile.arches())
def test_shipped_lists_and_profiles_load(arch):
    tl = testlist.load(arch)
    curated = {t.basename for t in tl.tests}
    for required in ("dirty_log_test", "dirty_log_perf_test", "demand_paging_test",
                     "access_tracking_perf_test", "kvm_page_table_test",
                     "memslot_modification_stress_test", "memslot_perf_test",
                     "set_memory_region_test", "max_guest_memory_test"):
        assert required in curated
    p = profile.load(arch)
    argv = p.qemu_argv("Image", "initrd", "lab.boot=x")
    assert "-no-reboot" in argv and argv[argv.index("-append") + 1].endswith("lab.boot=x")


def test_unknown_arch_is_named():
    with pytest.raises(LabError, match="unknown ARCH=riscv"):
        profile.load("riscv")


@pytest.mark.parametrize("cmdline, ran", [
    ("lab.boot=tdp", ["dirty_log_test", "nx_huge_pages_test.sh"]),
    ("lab.boot=tdp lab.from=2 x=1", ["nx_huge_pages_test.sh"]),
])
def test_boot_script_resumes_from_the_numbered_test(tmp_path, cmdline, ran):
    tl = testlist.parse(LIST, "x86_64", "t")
    (tmp_path / "cmdline").write_text(cmdline + "\n")
    runner = tmp_path / "run_kselftest.sh"
    runner.write_text('#!/bin/sh\necho "$4"\n')
    runner.chmod(0o755)
    assert guest_sh(tl, tmp_path).split() == [f"kvm:{t}" for t in ran]


def guest_sh(tl, tmp_path, boot="tdp"):
    """Run the boot script with sh, with /proc/cmdline and /tmp in tmp_path."""
    script = (initramfs.boot_script(tl, boot).replace("/tmp/", f"{tmp_path}/")
              .replace("/proc/cmdline", str(tmp_path / "cmdline")))
    return subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout


def test_failed_tests_run_once_more_up_to_the_boots_retries(tmp_path):
    assert testlist.RETRIES_PER_BOOT == 2
    tl = testlist.parse(LIST + """
[[test]]
name = "demand_paging_test"
boots = ["tdp"]
""", "x86_64", "t")
    (tmp_path / "cmdline").write_text("lab.boot=tdp\n")
    # every test fails the first time it runs and passes after; like the
    # guest's timeout wrapper, the runner leaves the exit code in lab-test-rc
    runner = tmp_path / "run_kselftest.sh"
    runner.write_text('#!/bin/sh\nt=${4#kvm:}\n'
                      'if [ -e "ran-$t" ]; then echo "ok 1 selftests: kvm: $t"; echo 0 > lab-test-rc; '
                      'else touch "ran-$t"; echo "not ok 1 selftests: kvm: $t # exit=1"; '
                      'echo 1 > lab-test-rc; fi\n')
    runner.chmod(0o755)
    assert guest_sh(tl, tmp_path).splitlines() == [
        "not ok 1 selftests: kvm: dirty_log_test # exit=1",
        "LAB-RETRY dirty_log_test",
        "ok 1 selftests: kvm: dirty_log_test",
        "not ok 1 selftests: kvm: nx_huge_pages_test.sh # exit=1",
        "LAB-RETRY nx_huge_pages_test.sh",
        "ok 1 selftests: kvm: nx_huge_pages_test.sh",
        # the boot's two retries are used up
        "not ok 1 selftests: kvm: demand_paging_test # exit=1"]


GUEST_TIMEOUT = initramfs.GUEST_FILES / "timeout"


def guest_timeout(*argv, tmp=None):
    env = {**os.environ, "TMPDIR": str(tmp)} if tmp else None
    return subprocess.run(["sh", str(GUEST_TIMEOUT), *argv], capture_output=True, text=True,
                          timeout=30, env=env)


def test_guest_timeout_passes_the_exit_code_through(tmp_path):
    assert guest_timeout("10", "sh", "-c", "exit 3", tmp=tmp_path).returncode == 3
    # and leaves it for the boot script's run_test
    assert (tmp_path / "lab-test-rc").read_text() == "3\n"
    # the runner's outer call leaves the limit to the inner one
    out = guest_timeout("--foreground", "10", "sh", str(GUEST_TIMEOUT), "10", "echo", "hi")
    assert (out.returncode, out.stdout) == (0, "hi\n")


def test_guest_timeout_reports_where_a_hung_test_is_then_kills_it(tmp_path):
    out = guest_timeout("1", "sh", "-c", "sleep 20; echo not killed", tmp=tmp_path)
    assert out.returncode == 124      # GNU timeout's code: the runner's "# TIMEOUT"
    assert (tmp_path / "lab-test-rc").read_text() == "124\n"
    lines = out.stdout.splitlines()
    assert lines[0] == "LAB-HANG: sh -c sleep 20; echo not killed still running after 1 s; " \
                       "kernel stacks of its threads:"
    # the test and its child, each with its state and where it waits
    threads = [ln for ln in lines if ln.startswith("LAB-HANG: thread ")]
    assert [t.split()[3] for t in threads] == ["(sh)", "(sleep)"]
    assert "KVM statistics that changed in 1 s" in out.stdout
    assert "\nnot killed" not in out.stdout


# Real lines of this session's loops (TDP MMU, 2026-11-23): a hang as
# lab/guest/timeout reports it, and a vCPU shutdown.
HANG_REPORT = (
    "# LAB-HANG: ./dirty_log_perf_test -b 64M -v 2 -i 2 still running after 40 s; "
    "kernel stacks of its threads:",
    "# LAB-HANG: thread 2174 (dirty_log_perf_) state R wchan 0",
    "# LAB-HANG:   [<0>] kvm_arch_vcpu_ioctl_run+0xf92/0x20b0",
    "# LAB-HANG: KVM statistics that changed in 1 s (VM/stat before after):",
    "# LAB-HANG:   2170-6/exits 667630 728963",
    "# LAB-HANG:   2170-6/insn_emulation 658142 719471",
    "# LAB-HANG:   2170-6/pf_guest 673983 739702")
SHUTDOWN = ("#   dirty_log_perf_test.c:110: get_ucall(vcpu, NULL) == UCALL_SYNC",
            "#   Invalid guest sync status: exit_reason=SHUTDOWN")


@pytest.mark.parametrize("detail, output, flaky", [
    ("TIMEOUT 120 seconds", HANG_REPORT, True),
    ("exit=254", SHUTDOWN, True),
    # a hang without emulation (e.g. a deadlock in KVM) is not the known flake
    ("TIMEOUT 120 seconds", HANG_REPORT[:3], False),
    ("exit=254", ("#   nx_split_on_fault_test.c:80: 4K mappings grew by 0",), False),
    # aging_stress_test's side vCPU reports a shutdown as the memstress
    # tests do (it printed "unexpected exit SHUTDOWN" before, which no
    # entry matches now)
    ("exit=254", ("#   aging_stress_test.c:386: false",
                  "#   Side vCPU: invalid guest sync status: exit_reason=SHUTDOWN"), True),
    # but not its checks of memory contents
    ("exit=254", ("#   aging_stress_test.c:512: false",
                  "#   page 0x1234 holds 0x5 where pass 7 wrote 0x7"), False),
])
def test_x86_flakes_are_recognised_in_real_output(detail, output, flaky):
    tl = testlist.load("x86_64")
    run = ktap.Run(ktap.Result("dirty_log_perf_test", ktap.FAIL, detail), output)
    assert (tl.known_flake(run) is not None) == flaky


@pytest.mark.parametrize("base", ["6.12", "7.3"])
@pytest.mark.parametrize("words", [
    "Invalid guest sync status: exit_reason=SHUTDOWN",                  # memstress tests
    "Side vCPU: invalid guest sync status: exit_reason=SHUTDOWN",       # aging_stress_test
    "Unexpected exit: SHUTDOWN",                                        # mmu_rmaps_stat_test
    "vCPU 1: unexpected exit: SHUTDOWN",                                # 7.3's memstress passes
])
def test_each_bases_x86_list_knows_each_wording_of_a_shutdown(base, words):
    tl = testlist.load("x86_64", paths.TESTLISTS.parent / base)
    run = ktap.Run(ktap.Result("t", ktap.FAIL, "exit=254"), ("#   t.c:1: false", f"#   {words}"))
    assert tl.known_flake(run) is not None


@pytest.mark.parametrize("boot, msg", [
    ('name="k"\nconfig="nope"', "config 'nope' names no fragment"),
    ('name="k"\nconfig="../x"', "names no fragment"),
    ('name="k"\nkernel="kasan"', r"unknown key 'kernel'"),
    ('name="legacy"\ncmd_line="kvm.tdp_mmu=N"',
     r"^t: \[\[boot\]\] 'legacy': unknown key 'cmd_line' \(did you mean 'cmdline'\?\)$"),
    ('name="k"\nfull="yes"', r"'full' must be true or false, not a string"),
    ('cmdline="x"', r"t: \[\[boot\]\] #1: missing key 'name'$"),
])
def test_bad_boots_are_refused(tmp_path, boot, msg):
    (tmp_path / "kasan.config").write_text("CONFIG_KASAN=y\n")
    with pytest.raises(LabError, match=msg):
        testlist.parse(f"[[boot]]\n{boot}\n", "x86_64", "t", configs=tmp_path)


def test_a_boot_of_another_kernel_runs_only_the_tests_that_name_it(tmp_path):
    (tmp_path / "kasan.config").write_text("CONFIG_KASAN=y\n")
    tl = testlist.parse(LIST + """
[[boot]]
name = "kasan-tdp"
config = "kasan"
[[test]]
name = "aging_stress_test"
boots = ["tdp", "kasan-tdp"]
""", "x86_64", "t", configs=tmp_path)
    assert tl.tests[0].boots == ("tdp", "shadow")
    assert [t.name for t in tl.tests_for("kasan-tdp")] == ["aging_stress_test"]
    assert [b.name for b in tl.selected()] == ["tdp", "shadow", "kasan-tdp"]


def test_a_boot_may_give_qemu_its_own_cpu():
    tl = testlist.parse(LIST + """
[[boot]]
name = "sw-af"
cpu = "max,midr=0xc00fac30"
""", "arm64", "t")
    boots = {b.name: b for b in tl.boots}
    assert (boots["sw-af"].cpu, boots["tdp"].cpu) == ("max,midr=0xc00fac30", "")
    prof = profile.load("arm64")
    argv = prof.qemu_argv("Image", "initrd", "", cpu=boots["sw-af"].cpu)
    assert argv[argv.index("-cpu") + 1] == "max,midr=0xc00fac30"
