"""make lava: the jobs carry each boot's command line, CPU and tests, the
monitor reads what the guest prints, and the YAML reads back as the job."""
import importlib
import shlex
from pathlib import Path

import pytest

from lab import initramfs, ktap, lava, markers, paths, profile, testlist, testrun
from lab.progress import LabError

LISTS = {a: testlist.load(a) for a in profile.arches()}


@pytest.fixture(scope="module")
def cfg():
    return lava.load()


@pytest.fixture(scope="module")
def jobs(cfg):
    return lava.jobs(cfg, LISTS, {"kernel": "https://ci.example/{base}/{build}/Image"})


def _boots():
    return [(a, b) for a, tl in LISTS.items() for b in tl.boots]


def _action(job, kind):
    return next(a[kind] for a in job["actions"] if kind in a)


def test_a_job_per_arch_and_boot_for_qemu_and_each_device(cfg, jobs):
    want = {f"qemu-{a}-{b.name}.yaml" for a, b in _boots()}
    want |= {f"{d.name}-{b.name}.yaml" for a, b in _boots() for d in cfg.devices if d.arch == a}
    assert set(jobs) == want
    assert {d.arch for d in cfg.devices} == set(profile.arches())


@pytest.mark.parametrize("arch,boot", _boots(), ids=lambda x: getattr(x, "name", x))
def test_qemu_job_boots_as_make_test_does(jobs, arch, boot):
    job = jobs[f"qemu-{arch}-{boot.name}.yaml"]
    prof = profile.load(arch)
    b = testrun.test_build(prof, config=boot.config)
    initrd = testrun.initramfs_path(testrun.test_build(prof))
    argv = testrun.boot_argv(b, initrd, boot)
    images = _action(job, "deploy")["images"]
    assert images["kernel"]["url"] == b.image.as_uri()
    assert images["initrd"]["url"] == initrd.as_uri()
    append = argv[argv.index("-append") + 1]
    assert images["kernel"]["image_arg"] == f'-kernel {{kernel}} -append "{append}"'
    assert f"lab.boot={boot.name} {boot.cmdline}".strip() in append
    ctx = job["context"]
    cpu, machine = boot.cpu or prof.cpu, prof.machine
    if arch == "arm64":     # lava-server's qemu.jinja2 takes them from the context
        assert (ctx["cpu"], ctx["machine"]) == (cpu, machine)
    else:                   # its amd64 passes neither: options of the job's own
        assert "cpu" not in ctx and "machine" not in ctx
        assert ctx["extra_options"][:2] == [f"-machine {machine}", f"-cpu {cpu}"]
    assert f"-smp {prof.smp}" in ctx["extra_options"] and "-accel tcg" in ctx["extra_options"]
    assert ctx["no_kvm"] is True and ctx["memory"] == 4096
    assert _action(job, "boot")["method"] == "qemu"


def test_monitor_reads_the_lines_the_guest_prints(jobs):
    import re
    mon = _action(jobs["qemu-x86_64-tdp.yaml"], "test")["monitors"][0]
    init = (initramfs.GUEST_FILES / "init").read_text()
    assert (mon["start"], mon["end"]) == (markers.BOOT, markers.DONE)
    assert f'echo "{markers.BOOT} ' in init and f'echo "{markers.DONE} ' in init
    for line, result in (("ok 1 selftests: kvm: dirty_log_perf_test", "pass"),
                         ("not ok 1 selftests: kvm: nx_huge_pages_test.sh # exit=1", "fail"),
                         ("not ok 1 selftests: kvm: x86_64/foo # TIMEOUT 120 seconds", "fail")):
        m = re.search(mon["pattern"], line + "\r\n")
        assert m, line
        parsed = ktap.parse_result(line)
        assert m["test_case_id"] == parsed.name
        assert mon["fixupdict"][m["result"]] == result



@pytest.mark.parametrize("line", [
    "ok 1 selftests: kvm: dirty_log_perf_test",
    "ok 1 selftests: kvm: memslot_modification_stress_test # SKIP no hugepages",
    "not ok 2 selftests: kvm: nx_huge_pages_test.sh # exit=1",
])
def test_monitor_pattern_never_matches_a_line_not_yet_whole(line):
    """LAVA's pexpect searches the console buffer as it grows: a pattern
    that a prefix of the line matches records a cut name (it recorded
    "dirty_log_" for dirty_log_perf_test, 2026-11-24). Every prefix of the
    line, as the buffer may hold it, matches not at all or with the whole
    name; the whole line with its end gives the whole name."""
    import re
    whole = line + "\r\n"
    name = ktap.parse_result(line).name
    for i in range(1, len(whole) + 1):
        m = re.search(lava.RESULT_PATTERN, whole[:i], re.DOTALL)
        assert m is None or m["test_case_id"] == name, repr(whole[:i])
    assert re.search(lava.RESULT_PATTERN, whole)["test_case_id"] == name
    assert not re.search(lava.RESULT_PATTERN, line[:line.index(name) + 4])

@pytest.mark.parametrize("arch,boot", _boots(), ids=lambda x: getattr(x, "name", x))
def test_device_job_runs_the_boots_tests_with_its_command_line(cfg, jobs, arch, boot):
    tl = LISTS[arch]
    for dev in (d for d in cfg.devices if d.arch == arch):
        job = jobs[f"{dev.name}-{boot.name}.yaml"]
        assert job["device_type"] == dev.device_type
        assert job.get("context", {}).get("extra_kernel_args", "") == boot.cmdline
        assert "lab.boot" not in str(job.get("context"))
        steps = _action(job, "test")["definitions"][0]["repository"]["run"]["steps"]
        cases = [shlex.split(s)[1:] for s in steps if s.startswith("lab_case ")]
        want = [t for t in tl.tests_for(boot.name) if not t.skip]
        assert cases == [[t.name, str(t.timeout), f"{t.args_var}={t.args}"] for t in want]
        build = testrun.test_build(profile.load(arch), config=boot.config).name
        deploy = _action(job, "deploy")
        assert deploy["kernel"]["url"] == f"https://ci.example/{paths.BASE}/{build}/Image"
        assert deploy["nfsrootfs"]["url"] == cfg.urls["rootfs"]


def test_yaml_reads_back_as_the_job(jobs):
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: make venv installs "
                               "it (requirements.txt)")
    for name, job in jobs.items():
        assert yaml.safe_load(lava.to_yaml(job, "a\n\ncomment")) == job, name


def test_jobs_pass_lava_schema(jobs, monkeypatch):
    """LAVA's own job schema, strict: lava_common from Debian's lava-common,
    as make lava-run unpacks it into the cache (lab/lavarun.py), with
    voluptuous from the venv (requirements.txt)."""
    from lab import lavarun
    d = lavarun.load()
    where = lavarun.unpacked_dir(d)
    if not (where / lavarun.DONE_MARK).exists():
        pytest.skip(f"LAVA's job schema is not unpacked in {where}: make lava-run unpacks "
                    "Debian's lava-dispatcher and lava-common there")
    pytest.importorskip("voluptuous", reason="voluptuous is not installed: make venv "
                        "installs it (requirements.txt)")
    monkeypatch.syspath_prepend(str(where / d.python))
    schemas = importlib.import_module("lava_common.schemas")
    assert Path(schemas.__file__).is_relative_to(where), "Debian's, not another lava_common"
    for name, job in jobs.items():
        try:
            schemas.validate(job, strict=True)
        except Exception as e:   # voluptuous's Invalid: say which job
            pytest.fail(f"{name}: {e}")
    # and it refuses what it should: a misspelt key of one of ours
    job = dict(next(iter(jobs.values())))
    job["visibilty"] = job.pop("visibility")
    with pytest.raises(Exception, match="extra keys not allowed"):
        schemas.validate(job, strict=True)


def test_write_replaces_the_folder(tmp_path):
    (tmp_path / "stale.yaml").write_text("x")
    written = lava.write({}, out=tmp_path)
    assert not (tmp_path / "stale.yaml").exists()
    assert len(written) == len(list(tmp_path.glob("*.yaml"))) > 0
    assert written[0].read_text().startswith("# LAVA job written by make lava")


def test_a_device_of_an_unknown_arch_is_refused(tmp_path):
    text = (lava.DATA / "lava.toml").read_text().replace('arch = "arm64"', 'arch = "riscv64"')
    (tmp_path / "lava.toml").write_text(text)
    with pytest.raises(LabError, match="riscv64.*no arch profile"):
        lava.load(tmp_path / "lava.toml")


def test_device_dictionaries_extend_the_types_the_jobs_name(cfg):
    ours = {p.stem for p in (lava.DATA / "device-types").glob("*.jinja2")}
    extended = {Path(p).stem: p.read_text() for p in (lava.DATA / "devices").glob("*.jinja2")}
    for dev in cfg.devices:
        assert any(f"{{% extends '{dev.device_type}.jinja2' %}}" in t
                   for t in extended.values()), dev.name
    assert any(f"{{% extends '{cfg.qemu_type}.jinja2' %}}" in t for t in extended.values())
    assert ours <= {d.device_type for d in cfg.devices}


def test_device_job_steps_pass_shellcheck(tmp_path, jobs):
    """lava-test-shell runs a definition's steps as one sh script."""
    import shutil
    import subprocess
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck is not installed: make deps installs it (apt: shellcheck)")
    job = jobs["x86-server-tdp.yaml"]
    steps = _action(job, "test")["definitions"][0]["repository"]["run"]["steps"]
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n" + "\n".join(steps) + "\n")
    proc = subprocess.run(["shellcheck", "-s", "sh", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
