"""python3 -m lab parse: a saved console judged again with today's rules."""
from pathlib import Path

import pytest

from lab import cli, qemu

FIXTURES = Path(__file__).parent / "fixtures/console"
RETRIED = (FIXTURES / "x86-tdp-vcpu-shutdown-retried.log").read_text()


# The first line of a log qemu.run writes: QEMU's command line.
ARGV = "$ qemu-system-x86_64 -M q35 -append console=ttyS0 lab.boot=tdp\n"


def saved(tmp_path, body: str, head=ARGV) -> str:
    f = tmp_path / "boot.log"
    f.write_text(head + body)
    return str(f)


def test_a_known_flake_then_a_pass_is_a_flaky_pass(tmp_path, capsys):
    log = saved(tmp_path, RETRIED + "LAB-DONE tdp\n")
    assert cli.main(["parse", log, "--test", "dirty_log_perf_test"]) == 0
    out, err = capsys.readouterr()
    assert "ok 1 x86_64/tdp: dirty_log_perf_test # flaky: exit=254 (dirty_log_perf_test.c:90" in out
    assert out.endswith("1 passed, 0 failed, 0 skipped\n")
    assert "NOTE: x86_64/tdp: dirty_log_perf_test: failed" in err


def test_a_console_that_ends_early_fails_and_names_what_did_not_run(tmp_path, capsys):
    log = saved(tmp_path, RETRIED)
    assert cli.main(["parse", log, "--test", "dirty_log_perf_test,demand_paging_test"]) == 1
    out, err = capsys.readouterr()
    assert "not ok 2 x86_64/tdp: demand_paging_test # not run: guest ended early" in out
    assert "FAILED: x86_64/tdp: guest ended before its tests did" in err


def test_arch_and_boot_come_from_the_console(capsys):
    # a bare console: x86's console device, and init's LAB-BOOT line
    assert cli.main(["parse", str(FIXTURES / "x86-l1-stack-oops.log")]) == 1
    out, err = capsys.readouterr()
    assert "ok 1 x86_64/tdp: dirty_log_test\n" in out
    assert "FAILED: x86_64/tdp: kernel splat while dirty_log_perf_test ran" in err
    assert "a known emulation flake" in err


def test_a_console_without_its_boot_asks_for_it(tmp_path, capsys):
    assert cli.main(["parse", saved(tmp_path, RETRIED, head="")]) == 1
    assert "say --arch" in capsys.readouterr().err
    assert cli.main(["parse", saved(tmp_path, RETRIED, head=""), "--arch", "x86_64"]) == 1
    assert "say --boot" in capsys.readouterr().err


def test_the_watchdogs_line_reads_back_as_killed(tmp_path):
    f = tmp_path / "log"
    f.write_text(f"$ qemu-system-aarch64 -M virt\nLAB-BOOT vhe\n\n{qemu.KILLED_LINE} 90 s budget\n")
    argv, con = qemu.read_log(f, "LAB-DONE")
    assert (argv, con.outcome, con.lines) == ("qemu-system-aarch64 -M virt", qemu.KILLED,
                                              ["LAB-BOOT vhe\n", "\n"])


def test_every_subcommand_has_help():
    sub = next(a for a in cli.parser()._actions if a.dest == "cmd")
    helped = {a.dest: a.help for a in sub._choices_actions}
    assert set(helped) == set(sub.choices) and all(helped.values()), helped


@pytest.mark.parametrize("cmd", ["parse", "list", "run", "test", "results-index"])
def test_help_runs(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([cmd, "--help"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("usage: lab " + cmd)
