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


def test_a_config_boot_waits_for_its_own_kernel(tmp_path):
    from types import SimpleNamespace
    from lab import profile, testlist
    (tmp_path / "kasan.config").write_text("CONFIG_KASAN=y\n")
    tl = testlist.parse("""
[[boot]]
name = "tdp"
[[boot]]
name = "kasan-tdp"
config = "kasan"
[[boot]]
name = "kasan-shadow"
config = "kasan"
[[test]]
name = "aging_stress_test"
""", "x86_64", "t", configs=tmp_path)
    args = SimpleNamespace(boot=None, full=False, variant="patched", no_debug=False)
    parts = cli._arch_parts(profile.load("x86_64"), tl, args)
    assert [(p.name, p.after) for p in parts] == [
        ("x86_64", ()), ("x86_64+kasan", ("x86_64",)), ("x86_64/tdp", ("x86_64",)),
        ("x86_64/kasan-tdp", ("x86_64+kasan",)), ("x86_64/kasan-shadow", ("x86_64+kasan",))]
    args.boot = ["tdp"]
    assert [p.name for p in cli._arch_parts(profile.load("x86_64"), tl, args)] == [
        "x86_64", "x86_64/tdp"]
