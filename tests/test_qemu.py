"""The host watchdog and the guest outcomes, with a stand-in for QEMU."""
import stat

import pytest

from lab import console, qemu, testrun, testlist
from lab.progress import LabError


def fake_qemu(tmp_path, body):
    f = tmp_path / "fake-qemu"
    f.write_text("#!/bin/sh\n" + body)
    f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return str(f)


def test_guest_that_finishes(tmp_path):
    q = fake_qemu(tmp_path, "echo 'LAB-BOOT tdp'\necho 'LAB-DONE tdp'\n")
    con = qemu.run([q], 10, tmp_path / "log", "LAB-DONE")
    assert con.outcome == qemu.ENDED
    assert (tmp_path / "log").read_text().endswith("LAB-DONE tdp\n")


def test_hung_guest_is_killed_within_its_budget(tmp_path):
    # Like a wedged TCG guest: prints, then spins and never exits by itself.
    q = fake_qemu(tmp_path, "echo '# selftests: kvm: hyperv_tlb_flush'\nexec sleep 600\n")
    con = qemu.run([q], 2, tmp_path / "log", "LAB-DONE")
    assert con.outcome == qemu.KILLED
    assert con.seconds < 10
    assert "hyperv_tlb_flush" in con.tail()


def test_panicking_guest_is_reported_with_its_last_lines(tmp_path):
    q = fake_qemu(tmp_path, "echo '[    1.0] Kernel panic - not syncing: Attempted to kill init!'\n")
    con = qemu.run([q], 10, tmp_path / "log", "LAB-DONE")
    assert con.outcome == qemu.EXITED_EARLY
    tl = testlist.parse('[[boot]]\nname="b"\n[[test]]\nname="dirty_log_test"\n', "x86_64", "t")
    rep = testrun.judge_boot(tl, "b", console.read(con), tmp_path / "log")
    assert any("guest ended before its tests did" in p and "Kernel panic" in p
               for p in rep.problems)
    assert any("kernel splat while boot ran: Kernel panic" in p for p in rep.problems)
    [(label, result)] = rep.rows
    assert label == "x86_64/b: dirty_log_test"
    assert result.failed and "guest ended early" in result.detail


def test_missing_qemu_is_named(tmp_path):
    with pytest.raises(LabError, match="qemu-system-nothing not found"):
        qemu.run(["qemu-system-nothing"], 1, tmp_path / "log", "LAB-DONE")


def test_missing_kvm_fails_the_boot(tmp_path):
    q = fake_qemu(tmp_path, "echo 'LAB-KVM missing'\necho 'LAB-DONE b'\n")
    con = qemu.run([q], 10, tmp_path / "log", "LAB-DONE")
    tl = testlist.parse('[[boot]]\nname="b"\n', "arm64", "t")
    rep = testrun.judge_boot(tl, "b", console.read(con), tmp_path / "log")
    assert any("/dev/kvm is missing" in p for p in rep.problems)


def test_a_skip_fails_a_test_that_must_run(tmp_path):
    q = fake_qemu(tmp_path, "echo 'ok 1 selftests: kvm: dirty_log_perf_test # SKIP'\n"
                            "echo 'LAB-DONE b'\n")
    con = qemu.run([q], 10, tmp_path / "log", "LAB-DONE")
    tl = testlist.parse('[[boot]]\nname="b"\n[[test]]\nname="dirty_log_perf_test"\n'
                        'must_run=true\n', "arm64", "t")
    [(_, r)] = testrun.judge_boot(tl, "b", console.read(con), tmp_path / "log").rows
    assert r.failed and "must run" in r.detail


def test_cpu_time_of_a_busy_guest_is_measured(tmp_path):
    # a guest that keeps a core busy (sh counting, no child processes) for a
    # second or two, then one that sleeps; the watchdog samples every 0.5 s
    q = fake_qemu(tmp_path, "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done\n"
                  "sleep 1\necho 'LAB-DONE b'\n")
    busy = qemu.run([q], 10, tmp_path / "log", "LAB-DONE")
    q = fake_qemu(tmp_path, "sleep 2\necho 'LAB-DONE b'\n")
    idle = qemu.run([q], 10, tmp_path / "log", "LAB-DONE")
    assert busy.cpu_seconds > 0.5 > idle.cpu_seconds
