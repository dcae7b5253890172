import errno

import pytest

from lab import cli


def failing_with(err):
    def cmd(args):
        raise err
    return cmd


def test_a_full_disk_is_one_line_not_a_traceback(monkeypatch, capsys, tmp_path):
    # what make test met when /tmp filled up: a write of the initramfs
    target = tmp_path / "build/initramfs-x86_64-patched-debug.cpio.gz"
    monkeypatch.setattr(cli, "cmd_base", failing_with(
        OSError(errno.ENOSPC, "No space left on device", str(target))))
    assert cli.main(["base"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"error: no space left on the device of {target} (")
    assert "GiB free there now" in err and "LAB_BUILD" in err


def test_a_full_disk_without_a_file_name_names_build(monkeypatch, capsys):
    monkeypatch.setattr(cli, "cmd_base", failing_with(OSError(errno.ENOSPC, "No space")))
    assert cli.main(["base"]) == 1
    assert f"device of {cli.paths.BUILD} (" in capsys.readouterr().err


def test_other_os_errors_keep_their_traceback(monkeypatch):
    monkeypatch.setattr(cli, "cmd_base", failing_with(PermissionError(errno.EACCES, "denied")))
    with pytest.raises(PermissionError):
        cli.main(["base"])


def test_make_test_hands_its_choices_to_the_suite(monkeypatch, capsys):
    got = {}

    def run(*a):
        got["args"] = a
        return []
    monkeypatch.setattr(cli.suite, "run", run)
    monkeypatch.setattr(cli.report, "save", lambda *a: None)
    assert cli.main(["test", "--arch", "arm64", "--boot", "vhe", "--no-debug", "--no-check",
                     "--jobs", "3", "--variant", "vanilla"]) == 0
    assert got["args"] == ({"arm64": ["vhe"]}, False, "vanilla", False, False, 3)
    assert cli.main(["test", "--no-check"]) == 0
    assert got["args"] == ({a: None for a in cli.profile.arches()}, False, "patched", True,
                           False, got["args"][-1])
    assert capsys.readouterr().out.endswith("0 passed, 0 failed, 0 skipped\n")


def test_make_kernel_of_an_unknown_variant_names_the_known_ones(monkeypatch, capsys):
    monkeypatch.setattr(cli.variants, "load", lambda: {})
    monkeypatch.setattr(cli.kernel, "build", lambda b: pytest.fail("built"))
    assert cli.main(["kernel", "--arch", "arm64", "--variant", "split-fill"]) == 1
    assert capsys.readouterr().err == (
        "error: unknown kernel variant 'split-fill': vanilla, patched, or one of "
        f"bench/{cli.paths.BASE}/variants.toml: (none declared)\n")


def test_make_test_skips_a_base_whose_lists_lack_the_boot(monkeypatch, capsys):
    """make test TEST_BOOT=long without BASE: 7.3's x86_64 list has it,
    6.12's none; 6.12 is skipped in one line, and a boot no base has fails."""
    monkeypatch.setattr(cli.paths, "BASE", "6.12")
    monkeypatch.setattr(cli.suite, "run", lambda *a: pytest.fail("ran"))
    assert cli.main(["test", "--boot", "long", "--bases", "6.12 7.3"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.endswith("test: base 6.12 skipped: no list of testlists/6.12/ has boot long "
                        "(base 7.3 has it)\n")
    assert cli.main(["test", "--boot", "no-such-boot", "--bases", "6.12 7.3"]) == 1
    assert capsys.readouterr().err.startswith(
        "error: testlists/{6.12,7.3}/{arm64,x86_64}.toml: no boot no-such-boot")
    # BASE=6.12: 7.3's boot is no boot of this run
    assert cli.main(["test", "--boot", "long"]) == 1
    assert "no boot long; base 7.3 has it (BASE=7.3)" in capsys.readouterr().err
    assert cli.main(["test", "--boot", "long", "--bases", "7.3"]) == 1
    assert "--bases '7.3' leaves out this base, 6.12" in capsys.readouterr().err
