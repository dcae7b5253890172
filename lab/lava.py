"""make lava: LAVA job definitions from the test lists, one per arch and boot.

For each boot of testlists/<base>/<arch>.toml (full ones too) it writes,
under build/<base>/lava/:
- qemu-<arch>-<boot>.yaml: make test's boot on a LAVA worker's QEMU: the
  same kernel and initramfs (deployed to tmpfs from their paths here), the
  command line, CPU, machine, memory and vCPUs of testrun.boot_argv, and a
  `monitors` test that reads the console as the harness does: from the
  init's LAB-BOOT line to its LAB-DONE line, one LAVA result per result
  line of kselftest's runner;
- <device>-<boot>.yaml per real device of that arch (lab/lava/lava.toml):
  the kernel from a URL (tftp), an NFS root, the boot's command line as
  `extra_kernel_args`, and a lava-test-shell definition that fetches the
  kselftest install and runs the boot's tests with run_kselftest.sh, their
  arguments and timeouts as the guest runs them.

and kselftest-<arch>.tar.gz, the bundle a device job fetches (make
kselftest-tar's, lab/ksftbundle.py), where make test's selftests of the arch
are built. The device types and device
dictionaries the jobs need are in lab/lava/. The
YAML is written by a small emitter (the harness has no YAML library): block
style, every string double-quoted as JSON writes it, which YAML reads the
same.
"""
import json
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from lab import datafile, ksftbundle, markers, paths, profile, selftests, testlist, testrun
from lab.datafile import Key, Table
from lab.progress import LabError, say

DATA = Path(__file__).parent / "lava"
OUT = paths.BASE_BUILD / "lava"

# One LAVA result per result line of kselftest's runner, which prints
# "ok 1 selftests: kvm: <test>" (or "not ok ..."; ktap.RESULT_RE reads the
# same lines). A SKIP is an "ok" line: LAVA records it as a pass.
# LAVA's pexpect searches the console buffer as it grows, so the name must
# be followed by what ends it (its " #" directive, or the line's end): an
# open-ended pattern matched a line still arriving and recorded
# "dirty_log_" for dirty_log_perf_test (2026-11-24).
RESULT_PATTERN = (r"(?P<result>not ok|ok) \d+ selftests: kvm: (?P<test_case_id>[^\s#]+)"
                  r"(?= +#|[ \t]*[\r\n])")
FIXUP = {"ok": "pass", "not ok": "fail"}

URL_KEYS = ("kernel", "rootfs", "kselftest")
FILE = Table({
    "timeouts": Key(Table({k: Key(int) for k in ("deploy", "boot", "slack", "connection")})),
    "qemu": Key(Table({"device_type": Key(str), "arch": Key(dict),
                       "context_cpu_machine": Key([str])})),
    "device": Key([Table({"name": Key(str), "why": Key(str, ""), "arch": Key(str),
                          "device_type": Key(str), "boot_method": Key(str),
                          "boot_commands": Key(str)})]),
    "urls": Key(Table({k: Key(str) for k in URL_KEYS})),
})


@dataclass(frozen=True)
class Device:
    name: str
    why: str
    arch: str
    device_type: str
    boot_method: str
    boot_commands: str


@dataclass(frozen=True)
class Config:
    timeouts: dict
    qemu_type: str
    qemu_arch: dict
    context_cpu_machine: tuple[str, ...]
    devices: tuple[Device, ...]
    urls: dict


def load(path: Path = DATA / "lava.toml") -> Config:
    d = datafile.read(path, FILE)
    where = datafile.origin(path)
    known = profile.arches()
    for dev in d["device"]:
        if dev["arch"] not in known:
            raise LabError(f"{where}: [[device]] {dev['name']!r}: arch {dev['arch']!r} is no "
                           f"arch profile ({', '.join(known)})")
    missing = [a for a in known if a not in d["qemu"]["arch"]]
    if missing:
        raise LabError(f"{where}: [qemu] arch names no LAVA arch for {', '.join(missing)}")
    q = d["qemu"]
    return Config(d["timeouts"], q["device_type"], q["arch"], tuple(q["context_cpu_machine"]),
                  tuple(Device(**dev) for dev in d["device"]), d["urls"])


# -- YAML ----------------------------------------------------------------

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if v == {}:
        return "{}"
    if v == []:
        return "[]"
    raise TypeError(f"no YAML scalar for {v!r}")


def _is_scalar(v) -> bool:
    return not isinstance(v, dict | list) or not v


def _lines(v, indent: int) -> list[str]:
    pad = "  " * indent
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            key = k if _PLAIN_KEY.fullmatch(k) else json.dumps(k)
            if _is_scalar(x):
                out.append(f"{pad}{key}: {_scalar(x)}")
            else:
                out.append(f"{pad}{key}:")
                out += _lines(x, indent + 1)
    else:
        for x in v:
            if _is_scalar(x):
                out.append(f"{pad}- {_scalar(x)}")
            else:
                sub = _lines(x, indent + 1)
                out.append(f"{pad}- {sub[0].lstrip()}")
                out += sub[1:]
    return out


def to_yaml(data: dict, comment: str = "") -> str:
    head = "".join(f"# {ln}\n".replace("# \n", "#\n") for ln in comment.splitlines())
    return head + "\n".join(_lines(data, 0)) + "\n"


# -- jobs ----------------------------------------------------------------

def minutes(seconds: float) -> int:
    return max(1, math.ceil(seconds / 60))


def _timeout(m: int) -> dict:
    return {"minutes": m}


def _megabytes(memory: str) -> int:
    m = re.fullmatch(r"(\d+)([MG])", memory)
    if not m:
        raise LabError(f"arch profile memory {memory!r}: not <n>M or <n>G")
    return int(m.group(1)) * (1024 if m.group(2) == "G" else 1)


def _option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _boot_files(prof: profile.Profile, boot: testlist.Boot):
    """(kernel build, initramfs) that make test boots this boot with: the
    patched debug kernel (the boot's config's when it names one) and the
    arch's initramfs (testrun.build_arch, build_kernel)."""
    b = testrun.test_build(prof, config=boot.config)
    return b, testrun.initramfs_path(testrun.test_build(prof))


def qemu_job(cfg: Config, prof: profile.Profile, tl: testlist.TestList,
             boot: testlist.Boot) -> dict:
    b, initrd = _boot_files(prof, boot)
    argv = testrun.boot_argv(b, initrd, boot)
    test_s = tl.budget(boot.name, testrun.BOOT_OVERHEAD)
    t = cfg.timeouts
    test_m = minutes(test_s)
    job_m = t["deploy"] + t["boot"] + test_m + t["slack"]
    return {
        "device_type": cfg.qemu_type,
        "job_name": f"kvm-mmu-series {paths.BASE} {prof.arch}/{boot.name} (QEMU TCG)",
        "timeouts": {"job": _timeout(job_m), "connection": _timeout(min(t["connection"], job_m))},
        "priority": "medium",
        "visibility": "public",
        "context": qemu_context(cfg, prof.arch, argv),
        "metadata": _metadata(tl, boot),
        "actions": [
            {"deploy": {
                "to": "tmpfs",
                "timeout": _timeout(t["deploy"]),
                "images": {
                    "kernel": {"url": Path(_option(argv, "-kernel")).as_uri(),
                               "image_arg": f'-kernel {{kernel}} -append "{_option(argv, "-append")}"'},
                    "initrd": {"url": Path(_option(argv, "-initrd")).as_uri(),
                               "image_arg": "-initrd {initrd}"},
                }}},
            {"boot": {"method": "qemu", "media": "tmpfs", "timeout": _timeout(t["boot"])}},
            {"test": {
                "timeout": _timeout(test_m),
                "monitors": [{
                    "name": f"kvm-selftests-{boot.name}",
                    "start": markers.BOOT,
                    "end": markers.DONE,
                    "pattern": RESULT_PATTERN,
                    "fixupdict": dict(FIXUP),
                }]}},
        ],
    }


def qemu_context(cfg: Config, arch: str, argv: list[str]) -> dict:
    """The job context that gives lava-server's qemu.jinja2 lab/qemu.py's
    command line: TCG (no_kvm; the guest runs KVM itself), the memory, the
    vCPUs, the guest's reboot or panic ending QEMU, and -cpu and -machine
    as context or, for an arch whose template takes neither, as options."""
    cpu, machine = _option(argv, "-cpu"), _option(argv, "-M")
    ctx = {"arch": cfg.qemu_arch[arch]}
    extra = ["-accel tcg", f"-smp {_option(argv, '-smp')}", "-no-reboot"]
    if arch in cfg.context_cpu_machine:
        ctx |= {"machine": machine, "cpu": cpu}
    else:
        extra = [f"-machine {machine}", f"-cpu {cpu}", *extra]
    return {**ctx, "memory": _megabytes(_option(argv, "-m")), "no_kvm": True,
            "extra_options": extra}


def _metadata(tl: testlist.TestList, boot: testlist.Boot) -> dict:
    return {"base": paths.BASE, "arch": tl.arch, "boot": boot.name,
            "boot_why": boot.why, "testlist": tl.file,
            "tests": " ".join(t.name for t in runnable(tl, boot))}


def runnable(tl: testlist.TestList, boot: testlist.Boot) -> list[testlist.Test]:
    return [t for t in tl.tests_for(boot.name) if not t.skip]


# run_kselftest.sh runs one test; its result line says pass, skip or fail
# (a timeout is a "not ok"), which lava-test-case records.
CASE_FUNCTION = (
    'lab_case() { t=$1; to=$2; shift 2; '
    'env "$@" ./run_kselftest.sh -o "$to" -t "kvm:$t" 2>&1 | tee /tmp/lab-case.tap; r=fail; '
    "if grep -Eq '^ok [0-9]+ .*# SKIP' /tmp/lab-case.tap; then r=skip; "
    "elif grep -Eq '^ok [0-9]+ ' /tmp/lab-case.tap; then r=pass; fi; "
    'lava-test-case "${t##*/}" --result "$r"; }')


def test_steps(tl: testlist.TestList, boot: testlist.Boot, kselftest_url: str) -> list[str]:
    """The lava-test-shell steps of a real device: fetch the kselftest
    install (a tar.gz of kselftest_install: run_kselftest.sh, kselftest/,
    kvm/), set up what lab/guest/init sets up for the aging tests, and run
    each test of the boot as the guest's boot script does (initramfs.boot_script:
    its KSELFTEST_<TEST>_ARGS, its timeout)."""
    steps = [
        f"KSFT_URL={shlex.quote(kselftest_url)}",
        "mkdir -p /tmp/ksft && cd /tmp/ksft && "
        '{ wget -q -O- "$KSFT_URL" || curl -fsSL "$KSFT_URL"; } | tar -xzf -',
        # A bundle that did not come is one failed case, and the end.
        "ksft=$(find /tmp/ksft -name run_kselftest.sh | head -n 1); "
        'if [ -z "$ksft" ]; then lava-test-case kselftest-bundle --result fail; exit 1; fi',
        'cd "$(dirname "$ksft")" || exit 1',
        "echo y > /sys/kernel/mm/lru_gen/enabled 2>/dev/null; "
        "echo 0 > /proc/sys/kernel/numa_balancing 2>/dev/null; true",
        CASE_FUNCTION,
    ]
    for t in runnable(tl, boot):
        steps.append(f"lab_case {shlex.quote(t.name)} {t.timeout} "
                     f"{t.args_var}={shlex.quote(t.args)}")
    return steps


def device_job(cfg: Config, dev: Device, tl: testlist.TestList, boot: testlist.Boot,
               urls: dict) -> dict:
    t = cfg.timeouts
    test_m = minutes(sum(x.timeout for x in runnable(tl, boot))) + t["slack"]
    job_m = t["deploy"] + t["boot"] + test_m + t["slack"]
    job = {
        "device_type": dev.device_type,
        "job_name": f"kvm-mmu-series {paths.BASE} {dev.name}/{boot.name}",
        "timeouts": {"job": _timeout(job_m), "connection": _timeout(min(t["connection"], job_m))},
        "priority": "medium",
        "visibility": "public",
    }
    if boot.cmdline:
        job["context"] = {"extra_kernel_args": boot.cmdline}
    job["metadata"] = {**_metadata(tl, boot), "device": dev.name, "device_why": dev.why}
    job["actions"] = [
        {"deploy": {
            "to": "tftp",
            "timeout": _timeout(t["deploy"]),
            "kernel": {"url": urls["kernel"], "type": "image"},
            "nfsrootfs": {"url": urls["rootfs"], "compression": "xz"},
            "os": "debian"}},
        {"boot": {
            "method": dev.boot_method,
            "commands": dev.boot_commands,
            "timeout": _timeout(t["boot"]),
            "auto_login": {"login_prompt": "login:", "username": "root"},
            "prompts": ["root@[^:]*:~#"]}},
        {"test": {
            "timeout": _timeout(test_m),
            "definitions": [{
                "from": "inline",
                "name": f"kvm-selftests-{boot.name}",
                "path": "inline/kvm-selftests.yaml",
                "repository": {
                    "metadata": {"format": "Lava-Test Test Definition 1.0",
                                 "name": f"kvm-selftests-{boot.name}",
                                 "description": f"the kvm selftests of {tl.file}, boot "
                                                f"{boot.name}: {boot.why}"},
                    "run": {"steps": test_steps(tl, boot, urls["kselftest"])}}}]}},
    ]
    return job


def urls_for(cfg: Config, prof: profile.Profile, boot: testlist.Boot,
             given: dict | None = None) -> dict:
    """A device job's URLs: those given (make lava KERNEL_URL=..), else
    lava.toml's placeholders; {base}, {arch} and {build} (the name of the
    boot's kernel build, e.g. arm64-patched-debug-pkvm for a boot with
    config = "pkvm") replaced."""
    build = testrun.test_build(prof, config=boot.config).name
    out = {}
    for k in URL_KEYS:
        u = (given or {}).get(k) or cfg.urls[k]
        out[k] = u.replace("{base}", paths.BASE).replace("{arch}", prof.arch).replace(
            "{build}", build)
    return out


def jobs(cfg: Config, lists: dict[str, testlist.TestList],
         given_urls: dict | None = None) -> dict[str, dict]:
    """File name -> job, for every boot of every list."""
    out = {}
    for arch, tl in lists.items():
        prof = profile.load(arch)
        for boot in tl.boots:
            out[f"qemu-{arch}-{boot.name}.yaml"] = qemu_job(cfg, prof, tl, boot)
            for dev in cfg.devices:
                if dev.arch == arch:
                    out[f"{dev.name}-{boot.name}.yaml"] = device_job(
                        cfg, dev, tl, boot, urls_for(cfg, prof, boot, given_urls))
    return out


HEADER = ("LAVA job written by make lava (lab/lava.py) from {file}, boot {boot}:\n"
          "regenerate it, do not edit it. Run it on a worker with\n"
          "lava-run --device device.yaml --job-id 1 --output-dir out {name}")


def write(given_urls: dict | None = None, out: Path = OUT) -> list[Path]:
    cfg = load()
    lists = {a: testlist.load(a) for a in profile.arches()}
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.yaml"), *out.glob("kselftest-*.tar.gz")]:
        old.unlink()
    written = []
    for name, job in jobs(cfg, lists, given_urls).items():
        md = job["metadata"]
        f = out / name
        f.write_text(to_yaml(job, HEADER.format(file=md["testlist"], boot=md["boot"], name=name)))
        written.append(f)
    for arch in lists:
        install = selftests.install_dir(testrun.test_build(profile.load(arch)))
        if (install / "run_kselftest.sh").exists():
            dest = ksftbundle.write(install, out / ksftbundle.path(arch).name)
            say(f"lava: {datafile.origin(dest)}: the kselftest bundle of {arch}'s jobs "
                f"(KSELFTEST_URL), make kselftest-tar ARCH={arch}'s")
        else:
            say(f"lava: no kselftest bundle for {arch}: {datafile.origin(install)} is not "
                f"built (make test, or make selftests ARCH={arch} DEBUG=1)")
    unset = [k for k in URL_KEYS if not (given_urls or {}).get(k)]
    say(f"lava: {len(written)} jobs in {datafile.origin(out)}/ (device types and "
        f"dictionaries: {datafile.origin(DATA)}/)"
        + (f"; the device jobs keep the placeholders "
           f"{', '.join(cfg.urls[k] for k in unset)}: set "
           f"{', '.join(k.upper() + '_URL=' for k in unset)}" if unset else ""))
    return written

