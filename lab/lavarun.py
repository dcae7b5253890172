"""make lava-run: one of make lava's QEMU jobs run by lava-dispatcher from
Debian on this machine, its results read back as make test's.

- lava-dispatcher comes from Debian (lab/lava/dispatcher.toml: the suite
  and each package's version), fetched with apt-get download under
  lab/apt.py's lock into a private apt configuration and unpacked with
  dpkg-deb -x into paths.CACHE/lava-dispatcher/<versions>/: nothing is
  installed. Its Python dependencies are a venv's, build/lava-venv
  (lab/lava/requirements.txt, pinned), with lab/lava/shim/ on its path for
  what Debian's packages import but a QEMU tmpfs job never calls (guestfs).
- The job is make lava's for the boot (lava.qemu_job: make test's kernel
  and initramfs, built here as make run builds them), written to
  build/<base>/lava/qemu-<arch>-<boot>.yaml. The device dictionary is
  lab/lava/devices/<device>.jinja2 over lava-server's device types,
  rendered with the job's context as lava-server renders it
  (lab/lavadevice.py, in the venv).
- lava-run (which must run as root) runs with a timeout of the job's own
  timeout and a margin; its output, JSON lines, is the log
  build/<base>/logs/lava-run-<arch>-<boot>-<time>.log.
- The results: each "results" line of the job's monitor names a test
  (extra.test_case_id: LAVA's "case" turns nx_huge_pages_test.sh into
  nx_huge_pages_test_sh) and its verdict. LAVA's verdict stands; the
  console lines of the same log ("target") give what LAVA does not keep (a
  SKIP's reason: LAVA records a SKIP as a pass, its pattern matching "ok";
  a TIMEOUT; a failed assertion) and the kernel's splats (lab/splat.py),
  which LAVA does not judge. Every test of the boot is accounted as
  make test accounts it (testrun.account: a test the list skips is SKIP,
  one LAVA did not report is "not run"), and the KTAP and summary.json go
  to build/<base>/results/lava-<time>/, which python3 -m lab passes
  compares with a make test run boot by boot.
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from lab import apt, datafile, ktap, lava, paths, profile, splat, testlist, testrun
from lab.datafile import Key, Table
from lab.progress import LabError, run_logged, say

DATA = lava.DATA / "dispatcher.toml"
REQUIREMENTS = lava.DATA / "requirements.txt"
SHIM = lava.DATA / "shim"
VENV = paths.BUILD / "lava-venv"
# Seconds pip may take for the venv (about 20 s here with the fetch).
PIP_TIMEOUT = 10 * 60

FILE = Table({
    "apt": Key(Table({"uri": Key(str), "suite": Key(str), "components": Key([str]),
                      "keyring": Key(str)})),
    "packages": Key(dict),
    "paths": Key(Table({"lava_run": Key(str), "python": Key(str), "device_types": Key(str),
                        "job_tmp": Key(str)})),
    "run": Key(Table({"device": Key(str), "margin": Key(int), "full_boot": Key(str)})),
})


@dataclass(frozen=True)
class Dispatcher:
    uri: str
    suite: str
    components: tuple[str, ...]
    keyring: str
    packages: dict          # Debian package -> version
    lava_run: str           # these three: inside the unpacked packages
    python: str
    device_types: str
    job_tmp: str            # lava-run's own folder of a job's files, per job id
    device: str             # lab/lava/devices/<device>.jinja2
    margin: int             # seconds beyond the job's timeout
    full_boot: str          # <arch>/<boot> that make test FULL=1 runs under lava-run

    @property
    def where(self) -> str:
        return f"{self.suite} ({self.uri})"


def load(path: Path = DATA) -> Dispatcher:
    d = datafile.read(path, FILE)
    where = datafile.origin(path)
    if not d["packages"]:
        raise LabError(f"{where}: [packages] names no package")
    for name, version in d["packages"].items():
        if not isinstance(version, str) or not version:
            raise LabError(f"{where}: [packages] {name} must be a version string, "
                           f"not {version!r}")
    a, p, r = d["apt"], d["paths"], d["run"]
    arch, _, boot = r["full_boot"].partition("/")
    if arch not in profile.arches() or not boot:
        raise LabError(f"{where}: [run] full_boot {r['full_boot']!r} is not <arch>/<boot> "
                       f"of an arch profile ({', '.join(profile.arches())})")
    return Dispatcher(a["uri"], a["suite"], tuple(a["components"]), a["keyring"],
                      dict(d["packages"]), p["lava_run"], p["python"], p["device_types"],
                      p["job_tmp"], r["device"], r["margin"], r["full_boot"])


# -- lava-dispatcher from Debian, unpacked -------------------------------

def unpacked_dir(d: Dispatcher, cache: Path | None = None) -> Path:
    """Where the packages of d are unpacked: one folder per set of versions."""
    key = hashlib.sha256(json.dumps(sorted(d.packages.items())).encode()).hexdigest()[:12]
    return (cache or paths.CACHE) / "lava-dispatcher" / f"{d.packages.get('lava-dispatcher', 'x')}-{key}"


DONE_MARK = ".unpacked"


def dpkg_x(deb: Path, dest: Path) -> None:
    if not shutil.which("dpkg-deb"):
        raise LabError(f"dpkg-deb not found: it unpacks {deb.name} (apt: dpkg)")
    proc = subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise LabError(f"dpkg-deb -x {deb} failed (exit {proc.returncode}; a truncated or "
                       f"damaged download?): "
                       f"{apt.dpkg_deb_error(proc.stderr + proc.stdout, proc.returncode)}")


def unpack(d: Dispatcher, cache: Path | None = None, fetch=None) -> Path:
    """The packages of d unpacked in the cache (fetched once); fetch(spec,
    dest) -> .deb is apt's download from d's suite unless given (tests)."""
    dest = unpacked_dir(d, cache)
    if (dest / DONE_MARK).exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    if fetch is None:
        options = apt.prepare(apt.root(f"lava-{d.suite}"), apt.sources_line(
            d.uri, d.suite, list(d.components), d.keyring))
        say(f"lava-run: fetching {', '.join(f'{n} {v}' for n, v in d.packages.items())} "
            f"from {d.where} with apt-get download (nothing is installed)")
        apt.update(options, d.where)

        def fetch(spec, into):
            return apt.download(spec, into, options, d.where)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        for name, version in d.packages.items():
            try:
                deb = fetch(f"{name}={version}", Path(tmp) / name)
            except LabError as e:
                raise LabError(f"{e} ({datafile.origin(DATA)} names {name} {version} of "
                               f"{d.suite})") from None
            dpkg_x(deb, root)
        for rel in (d.lava_run, d.python, d.device_types):
            if not (root / rel).exists():
                raise LabError(f"the packages of {datafile.origin(DATA)} have no {rel}: "
                               f"not the lava-dispatcher it was written for?")
        (root / DONE_MARK).write_text("".join(f"{n}={v}\n" for n, v in d.packages.items()))
        if dest.exists():
            shutil.rmtree(dest)
        root.rename(dest)
    say(f"lava-run: lava-dispatcher {d.packages.get('lava-dispatcher', '')} unpacked in {dest}")
    return dest


def venv(where: Path = VENV, requirements: Path = REQUIREMENTS) -> Path:
    """The venv's python, made (again) when requirements changed."""
    want = hashlib.sha256(requirements.read_bytes()).hexdigest()
    stamp = where / ".stamp"
    py = where / "bin" / "python"
    if py.exists() and stamp.exists() and stamp.read_text().strip() == want:
        return py
    log = paths.LOGS / "lava-venv.log"
    say(f"lava-run: making {where} ({datafile.origin(requirements)}; log {log})")
    run_logged([sys.executable, "-m", "venv", "--clear", str(where)], log,
               f"{sys.executable} -m venv (apt: python3-venv)")
    # PyPI unreachable or stalled: an error in minutes, not a wait forever.
    run_logged([str(py), "-m", "pip", "install", "-q", "-r", str(requirements)], log,
               f"pip install -r {datafile.origin(requirements)}", timeout=PIP_TIMEOUT)
    stamp.write_text(want + "\n")
    return py


# -- the job and its device ----------------------------------------------

def template_dirs(d: Dispatcher, root: Path) -> list[Path]:
    """Ours first (lab/lava/devices, lab/lava/device-types), then lava-server's."""
    return [lava.DATA / "devices", lava.DATA / "device-types", root / d.device_types]


def render_device(python: Path, template: str, dirs: list[Path], context: dict) -> str:
    """The device dictionary (lab/lavadevice.py in python's venv, which has jinja2)."""
    req = json.dumps({"template": template, "dirs": [str(x) for x in dirs],
                      "context": context})
    proc = subprocess.run([str(python), "-m", "lab.lavadevice"], input=req, text=True,
                          capture_output=True, cwd=paths.ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(paths.ROOT)})
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise LabError(f"cannot render the device dictionary {template} from "
                       f"{', '.join(map(str, dirs))}: {why}")
    return proc.stdout


def job_timeout(job: dict, margin: int) -> int:
    """Seconds lava-run may take: the job's own timeout and the margin."""
    t = job["timeouts"]["job"]
    return (t.get("hours", 0) * 3600 + t.get("minutes", 0) * 60 + t.get("seconds", 0)
            + margin)


def job_files(job: dict) -> list[Path]:
    """The local files a QEMU job deploys (its file:// URLs)."""
    deploy = next(a["deploy"] for a in job["actions"] if "deploy" in a)
    return [Path(img["url"].removeprefix("file://")) for img in deploy["images"].values()
            if img["url"].startswith("file://")]


def build_files(prof: profile.Profile, tl: testlist.TestList, boot: testlist.Boot) -> None:
    """make test's kernel and initramfs of the boot, as make run builds them
    (reused from the build cache when the tree is the same)."""
    testrun.build_arch(prof, tl)
    if boot.config:
        testrun.build_kernel(prof, "patched", True, boot.config)


# -- lava-run's output ---------------------------------------------------

@dataclass
class Outcome:
    """What lava-run's log says."""
    results: list = field(default_factory=list)    # [(test_case_id, LAVA result)] in order
    console: list = field(default_factory=list)    # the guest's console lines
    validated: bool = False
    job: dict | None = None                        # the "job" result: result, error_msg ...
    monitor: str = ""                              # the monitor's status (passed, failed)


def definition_of(job: dict) -> str:
    """The results' "definition": the monitor's name, as LAVA writes it."""
    test = next(a["test"] for a in job["actions"] if "test" in a)
    return test["monitors"][0]["name"].replace(" ", "-").lower()


def read_log(lines, definition: str) -> Outcome:
    """lava-run's JSON lines. A line that is not JSON (LAVA writes a few
    with YAML's tags in them, its downloads' sizes) says nothing we read."""
    out = Outcome()
    for ln in lines:
        try:
            rec = json.loads(ln)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        lvl, msg = rec.get("lvl"), rec.get("msg")
        if lvl == "target" and isinstance(msg, str):
            out.console.append(msg)
        elif lvl == "results" and isinstance(msg, dict):
            case = msg.get("case")
            if msg.get("definition") == "lava":
                if case == "validate":
                    out.validated = msg.get("result") == "pass"
                elif case == "job":
                    out.job = msg
                elif case == "lava-test-monitor":
                    out.monitor = (msg.get("extra") or {}).get("status", "")
            elif msg.get("definition") == definition:
                name = (msg.get("extra") or {}).get("test_case_id") or case
                out.results.append((name, msg.get("result")))
    return out


LAVA_STATUS = {"pass": ktap.PASS, "fail": ktap.FAIL, "skip": ktap.SKIP}


def runs_of(out: Outcome) -> dict[str, list[ktap.Run]]:
    """Test name -> its runs as LAVA reported them, in order. The n-th run
    of a test is the console's n-th when the two agree on failing or not
    (its status then: a SKIP, a TIMEOUT; its output: the assertion);
    otherwise LAVA's verdict alone."""
    console = ktap.runs(out.console)
    found = defaultdict(list)
    for name, result in out.results:
        status = LAVA_STATUS.get(result, ktap.FAIL)
        seen = console.get(name, [])
        n = len(found[name])
        c = seen[n] if n < len(seen) else None
        if c and c.result.failed == (status == ktap.FAIL):
            found[name].append(c)
        else:
            detail = "" if result in LAVA_STATUS else f"LAVA result {result!r}"
            found[name].append(ktap.Run(ktap.Result(name, status, detail), ()))
    return dict(found)


NOT_REPORTED = "LAVA reported no result for it"


def lava_error(job: dict) -> str:
    """LAVA's error on one line: its type and the first line of its message
    (a boot method no strategy accepts gives a line per strategy: those stay
    in the log)."""
    lines = [ln.strip() for ln in str(job.get("error_msg") or "").splitlines() if ln.strip()]
    more = f" ({len(lines) - 1} more lines in the log)" if len(lines) > 1 else ""
    return f"{job.get('error_type') or '?'}: {(lines or ['no message'])[0]}{more}"


def judge(out: Outcome, tl: testlist.TestList, boot: str, log: Path, rc: int | None,
          seconds: float = 0.0) -> testrun.BootReport:
    """The boot's report from lava-run's outcome. A job lava-run could not
    validate is a LabError (there is nothing to report); a job that failed
    later is one problem of the report, and the tests it did not get to
    are "not run"."""
    label = f"{tl.arch}/{boot}"
    if out.job is None:
        raise LabError(f"lava-run ended (exit {rc}) without its job's result; log: {log}")
    if not out.validated:
        raise LabError(f"lava-run could not validate the job: {lava_error(out.job)}; "
                       f"log: {log}")
    rep = testrun.BootReport(label, log=str(log), seconds=seconds)
    if out.job.get("result") != "pass":
        rep.problems.append(f"{label}: the LAVA job failed: {lava_error(out.job)} "
                            f"(log: {log})")
    elif out.monitor and out.monitor != "passed":
        rep.problems.append(f"{label}: LAVA's monitor ended {out.monitor} (no end line "
                            f"before its timeout?); log: {log}")
    # LAVA judges no splat; the console lines hold them as make test's do.
    for sp in splat.scan(out.console):
        ctx = "\n".join("    | " + c for c in sp.context)
        rep.problems.append(f"{label}: kernel splat while {sp.test} ran: {sp.line}\n{ctx}")
    rows, notes, problems = testrun.account(tl, boot, runs_of(out), NOT_REPORTED)
    rep.rows, rep.notes = rows, notes
    rep.problems += problems
    return rep


# -- the run -------------------------------------------------------------

def lava_run(argv: list[str], log: Path, timeout: int, env: dict) -> int | None:
    """Run argv, output to log; kill its process group (QEMU too) after
    timeout seconds: None then."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc)
            return None
        except BaseException:
            stop(proc)
            raise


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group (lava-run cancels its job and ends
    QEMU), SIGKILL if it is still there 30 s later."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def newest_run(results: Path | None = None) -> Path | None:
    """The newest make test run (test-<time>) with a summary."""
    from lab import passsets
    for d in sorted((results or paths.RESULTS).glob("test-*"), reverse=True):
        try:
            passsets.load(d)
            return d
        except LabError:
            continue
    return None


def newest_with(label: str, results: Path | None = None) -> Path | None:
    """The newest make test run (test-<time>) with a boot of this label."""
    from lab import passsets
    for d in sorted((results or paths.RESULTS).glob("test-*"), reverse=True):
        try:
            if label in passsets.load(d).boots:
                return d
        except LabError:
            continue
    return None


def run(arch: str, boot_name: str, build: bool = True) -> testrun.BootReport:
    if os.geteuid() != 0:
        raise LabError("lava-run runs as root only (Debian's lava-run refuses otherwise; "
                       "it works in /var/lib/lava/dispatcher/tmp): run make lava-run as root")
    d = load()
    prof, tl = profile.load(arch), testlist.load(arch)
    names = [b.name for b in tl.boots]
    if boot_name not in names:
        raise LabError(f"{tl.file} has no boot {boot_name!r} ({', '.join(names)})")
    boot = tl.boot(boot_name)
    if build:
        build_files(prof, tl, boot)
    job = lava.qemu_job(lava.load(), prof, tl, boot)
    missing = [p for p in job_files(job) if not p.exists()]
    if missing:
        raise LabError(f"the job deploys {', '.join(map(str, missing))}, not built: "
                       f"make lava-run builds them unless NO_BUILD=1 (or: make run ARCH={arch} "
                       f"BOOT={boot_name} TEST=<a test>)")
    root = unpack(d)
    python = venv()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"qemu-{arch}-{boot_name}.yaml"
    job_file = lava.OUT / name
    job_file.parent.mkdir(parents=True, exist_ok=True)
    job_file.write_text(lava.to_yaml(job, lava.HEADER.format(
        file=tl.file, boot=boot_name, name=name)))
    work = paths.BASE_BUILD / "lava-run" / f"{arch}-{boot_name}-{stamp}"
    work.mkdir(parents=True, exist_ok=True)
    device = work / "device.yaml"
    device.write_text(render_device(python, f"{d.device}.jinja2", template_dirs(d, root),
                                    job.get("context", {})))
    log = paths.LOGS / f"lava-run-{arch}-{boot_name}-{stamp}.log"
    timeout = job_timeout(job, d.margin)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / d.python), str(SHIM)])}
    argv = [str(python), str(root / d.lava_run), "--device", str(device),
            "--job-id", str(os.getpid()), "--output-dir", str(work / "out"), str(job_file)]
    say(f"lava-run: {datafile.origin(job_file)} on {d.device} (timeout {timeout} s); "
        f"log {log}")
    start = time.monotonic()
    try:
        rc = lava_run(argv, log, timeout, env)
    finally:
        # A job that failed validation (or was killed) leaves its downloads.
        shutil.rmtree(Path(d.job_tmp) / str(os.getpid()), ignore_errors=True)
    seconds = time.monotonic() - start
    if rc is None:
        raise LabError(f"lava-run did not end within {timeout} s (the job's timeout and "
                       f"{d.margin} s) and was killed; log: {log}")
    out = read_log(log.read_text(errors="replace").splitlines(), definition_of(job))
    rep = judge(out, tl, boot_name, log, rc, seconds)
    say(f"lava-run: {len(out.results)} results from LAVA in {seconds:.0f} s, exit {rc}")
    return rep
