"""make check: is the series fit to mail upstream and to carry in a distro?

- style: checkpatch.pl --strict on every patch (no error, warning or check
  unless patches/<base>/checkpatch-waivers says why), an upstream subject
  prefix and a Signed-off-by; no placeholder of a figure not measured yet
  (series.PLACEHOLDER_RE, "[7.3 figures to be measured]") in a patch or
  cover letter;
- apply: the series applies with `git am` onto the base, and with quilt onto
  the Debian source's files it touches, laid out as Debian's kernel package
  carries patches (debian/patches/features/..., series lines);
- bisect: each patch, applied one at a time, builds what it touches for each
  arch it touches, with the options of configs/check*.config, and W=1 shows
  no warning in the files it touches; a patch to the kvm selftests builds
  them for each arch.

It also checks itself on fixtures (tests/fixtures/check): a mis-styled
patch must be refused and a patch that breaks the build of a later one must
be named, or the check is worthless.
"""
import dataclasses
import fnmatch
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab import base, deb, kernel, ktap, mail, paths, profile, selftests, series, tree
from lab.kernel import Build
from lab.progress import LabError, compiler_errors, run_logged, say

FIXTURES = paths.ROOT / "tests" / "fixtures" / "check"
# The placeholders of FIXTURES/placeholder: one in the patch, one over two
# lines of the cover letter, beside brackets and words that are none.
PLACEHOLDER_FIXTURES = 2
CHECK_IDENT = ("Make Check", "make-check@example.invalid")
WAIVERS = "checkpatch-waivers"
# What upstream KVM and mm expect a subject to start with.
SUBJECT_PREFIXES = ("KVM: arm64: ", "KVM: x86/mmu: ", "KVM: x86: ", "KVM: selftests: ",
                    "KVM: ", "mm: multi-gen LRU: ", "mm: ")
SELFTESTS = "tools/testing/selftests/kvm/"
ARCH_DIRS = {"arm64": "arch/arm64/", "x86_64": "arch/x86/"}
# The kvm selftests' own folders of each arch, under both bases' names: 6.12
# has aarch64/ and x86_64/, 7.3 (upstream's $(ARCH) names) arm64/ and x86/
SELFTEST_ARCH_DIRS = {a: tuple(f"{where}{d}/" for d in dirs for where in ("", "lib/", "include/"))
                      for a, dirs in (("arm64", ("aarch64", "arm64")),
                                      ("x86_64", ("x86_64", "x86")))}
WARNING_RE = re.compile(r"^(?:\.\./)*(\S+?):(\d+):(?:\d+:)? warning: (.*)$")


# --------------------------------------------------------------- decisions

def touched_files(patch_text: str) -> list[str]:
    """Paths a patch changes (new names; a deleted file counts by its old name)."""
    out = []
    for m in re.finditer(r"^diff --git a/(\S+) b/(\S+)$", patch_text, re.M):
        out.append(m.group(2))
    return list(dict.fromkeys(out))


@dataclass
class BuildPlan:
    """What one patch must build for one arch."""
    arch: str
    targets: list[str] = field(default_factory=list)   # make targets, without W=1
    w1_objects: list[str] = field(default_factory=list)  # rebuilt with W=1
    selftests: bool = False
    files: list[str] = field(default_factory=list)      # touched files that concern it


def plan_builds(files: list[str]) -> dict[str, BuildPlan]:
    """arch -> what to build, from the files a patch touches.

    arch/<a>/ concerns that arch only, the kvm selftests every arch unless in
    an arch's own folder, Documentation/ none, anything else (virt/kvm,
    include/, mm/) every arch. The KVM directory of a concerned arch is always
    built (it pulls in virt/kvm and every KVM header user); a C file elsewhere
    is built as its object.
    """
    plans: dict[str, BuildPlan] = {}

    def plan(arch):
        return plans.setdefault(arch, BuildPlan(arch))

    for f in files:
        if f.startswith("Documentation/") or f.startswith("arch/") and not any(
                f.startswith(d) for d in ARCH_DIRS.values()):
            continue
        if f.startswith(SELFTESTS):
            rel = f[len(SELFTESTS):]
            mine = [a for a, dirs in SELFTEST_ARCH_DIRS.items() if rel.startswith(dirs)]
            for a in mine or list(ARCH_DIRS):
                p = plan(a)
                p.selftests = True
                p.files.append(f)
            continue
        if f.startswith("tools/"):
            continue
        arches = [a for a, d in ARCH_DIRS.items() if f.startswith(d)] or list(ARCH_DIRS)
        for a in arches:
            p = plan(a)
            p.files.append(f)
            kvm_dir = f"{ARCH_DIRS[a]}kvm/"
            if kvm_dir not in p.targets:
                p.targets.append(kvm_dir)
            if f.endswith(".c"):
                obj = f[:-2] + ".o"
                if not f.startswith((kvm_dir, "virt/kvm/")) and obj not in p.targets:
                    p.targets.append(obj)
                # virt/kvm has no Makefile of its own: W=1 goes through the arch's KVM dir
                p.w1_objects.append(kvm_dir if f.startswith("virt/kvm/") else obj)
    for p in plans.values():
        p.w1_objects = list(dict.fromkeys(p.w1_objects))
        if p.selftests:
            p.targets.append("headers")
    return plans


def warnings_in(text: str, files: list[str]) -> list[str]:
    """Compiler warnings in the given files (paths as kbuild or the selftests
    Makefile print them: relative with ../, or absolute)."""
    out = []
    for line in text.splitlines():
        m = WARNING_RE.match(line.strip())
        if m and any(m.group(1) == f or m.group(1).endswith("/" + f) for f in files):
            out.append(line.strip())
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Waiver:
    pattern: str    # fnmatch on the path under patches/
    type: str       # checkpatch's message type, e.g. LONG_LINE
    reason: str


def parse_waivers(text: str, origin: str) -> list[Waiver]:
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            raise LabError(f"{origin}:{n}: a waiver is '<patch glob> <TYPE> <reason>'")
        out.append(Waiver(*parts))
    return out


def checkpatch_findings(output: str) -> list[tuple[str, str, str]]:
    """(level, type, message) of each finding of checkpatch --show-types."""
    return [(m.group(1), m.group(2), m.group(3)) for m in
            re.finditer(r"^(ERROR|WARNING|CHECK):([A-Z0-9_]+): (.*)$", output, re.M)]


def style_problems(rel: str, text: str, checkpatch_output: str,
                   waivers: list[Waiver]) -> list[str]:
    out = []
    for level, typ, msg in checkpatch_findings(checkpatch_output):
        if not any(fnmatch.fnmatch(rel, w.pattern) and w.type == typ for w in waivers):
            out.append(f"{level}:{typ}: {msg}")
    subject = series.subject(text)
    if not subject or not subject.startswith(SUBJECT_PREFIXES):
        out.append(f"subject {subject or '(none)'!r} does not start "
                   f"with an upstream prefix ({', '.join(p.strip() for p in SUBJECT_PREFIXES)})")
    if not re.search(r"^Signed-off-by: .+ <.+@.+>$", text, re.M):
        out.append("no Signed-off-by")
    return out


def placeholder_problems(patches_dir: Path, entries: list) -> list[str]:
    return [f"{where}: a placeholder, not a figure: fill it in"
            for where in series.placeholders(patches_dir, entries)]


# ------------------------------------------------------------------ running

@dataclass
class Report:
    rows: list = field(default_factory=list)       # [(label, ktap.Result)]
    problems: list = field(default_factory=list)

    def add(self, label: str, problems: list[str], how: str = "") -> None:
        """how: a passed row's note (printed after `# ` on its KTAP line)."""
        status = ktap.FAIL if problems else ktap.PASS
        self.rows.append((f"check: {label}", ktap.Result(label, status,
                                                         problems[0] if problems else how)))
        self.problems += [f"check: {label}: {p}" for p in problems]
        said = "FAILED: " + problems[0] if problems else "ok" + (f" ({how})" if how else "")
        say(f"check: {label}: {said}")


def check_style(src: Path, patches_dir: Path, entries: list) -> dict[str, list[str]]:
    waivers_file = patches_dir / WAIVERS
    waivers = (parse_waivers(waivers_file.read_text(), str(waivers_file))
               if waivers_file.exists() else [])
    out = {}
    for e in entries:
        f = patches_dir / e.path
        # Debian's python3 first: checkpatch runs scripts/spdxcheck.py on new
        # files, which needs python3-ply (apt-packages.txt).
        env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))
        proc = subprocess.run(["perl", str(src / "scripts/checkpatch.pl"), "--strict",
                               "--show-types", "--no-summary", "--color=never", str(f)],
                              cwd=src, capture_output=True, text=True, env=env)
        out[e.path] = style_problems(e.path, f.read_text(), proc.stdout, waivers)
        # It exits 1 for any finding, waived or not; with none, it failed to run.
        if proc.returncode != 0 and not checkpatch_findings(proc.stdout):
            out[e.path].append(f"checkpatch exited {proc.returncode}: "
                               + (proc.stderr.strip().splitlines() or ["(no message)"])[-1])
        if "Traceback" in proc.stderr:
            out[e.path].append("a checkpatch helper failed: "
                               + proc.stderr.strip().splitlines()[-1])
    return out


def quilt_paths(patch_texts: list[str]) -> list[str]:
    """Every path the patches read or write: old and new names of each diff."""
    out = []
    for text in patch_texts:
        for m in re.finditer(r"^diff --git a/(\S+) b/(\S+)$", text, re.M):
            out += [m.group(1), m.group(2)]
    return list(dict.fromkeys(out))


def check_quilt(base_tree: Path, patches_dir: Path, entries: list, dest: Path) -> list[str]:
    """Lay the series out as Debian's kernel package carries patches and quilt
    push it onto the base's files it touches. The base commit of base_tree is
    the extract of the Debian source (make tree imports it from the verified
    tarball), and quilt reads no file a patch does not name: extracting the
    whole tarball instead took 34 s, most of make check's quilt step."""
    if not shutil.which("quilt"):
        raise LabError("quilt not found (make deps installs it)")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    wanted = quilt_paths([(patches_dir / e.path).read_text() for e in entries])
    present = tree.git(base_tree, "ls-tree", "-r", "--name-only", tree.BASE_TAG, "--",
                       *wanted).split() if wanted else []
    if present:
        archive = subprocess.run(["git", "-C", str(base_tree), "archive", "--format=tar",
                                  tree.BASE_TAG, "--", *present],
                                 stdout=subprocess.PIPE, check=True).stdout
        subprocess.run(["tar", "-xf", "-"], cwd=dest, input=archive, check=True)
    feature = dest / "debian/patches/features/all/kvm-mmu-series"
    lines = []
    for e in entries:
        (feature / e.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(patches_dir / e.path, feature / e.path)
        lines.append(f"features/all/kvm-mmu-series/{e.path}\n")
    (dest / "debian/patches/series").write_text("".join(lines))
    proc = subprocess.run(["quilt", "push", "-a", "--fuzz=0"], cwd=dest, capture_output=True,
                          text=True, env=dict(os.environ, QUILT_PATCHES="debian/patches",
                                              QUILTRC="/dev/null"))
    if proc.returncode not in (0, 2) or "FAILED" in proc.stdout:
        said = [ln for ln in proc.stdout.splitlines()
                if "FAILED" in ln or ln.startswith(("Applying", "Patch"))]
        return [" | ".join(said[-3:]) or proc.stderr.strip()]
    return []


def _commits(src: Path, n: int) -> list[str]:
    shas = tree.git(src, "rev-list", "--reverse", f"{tree.BASE_TAG}..HEAD").split()
    if len(shas) != n:
        raise LabError(f"{src}: {len(shas)} commits on the base, {n} patches in the series")
    return shas


# ------------------------------------------------- builds that passed before

# Every input of a per-patch build besides the tree, the plan and the
# fragments: the code that runs it.
BUILD_CODE = [paths.ROOT / "lab" / f for f in ("check.py", "kernel.py", "selftests.py")]


def _first_line(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True).stdout
    except OSError:
        return f"{argv[0]}: not found"
    return (out.splitlines() or [""])[0]


@functools.cache
def toolchain(cross_compile: str) -> str:
    """The compiler, the linker and the C library the selftests link
    statically: their versions and libc.a's sha256."""
    gcc = f"{cross_compile}gcc"
    libc = Path(_first_line([gcc, "-print-file-name=libc.a"]))
    libc_sum = (hashlib.sha256(libc.read_bytes()).hexdigest() if libc.is_file()
                else "no libc.a")
    return "\n".join([_first_line([gcc, "--version"]),
                      _first_line([f"{cross_compile}ld", "--version"]), libc_sum])


def build_key(src: Path, sha: str, plan: BuildPlan) -> str:
    """What decides whether commit sha builds as plan asks: its tree (the
    whole source, not the commit: the same patch on the same base has the
    same tree anywhere), the plan, the config fragments, the toolchain of
    the arch and of the host (scripts/, HOSTCC), and the harness code that
    runs the build."""
    b = Build(profile.load(plan.arch), kernel.CHECK, debug=True)
    h = hashlib.sha256()
    inputs = [("tree", tree.git(src, "rev-parse", f"{sha}^{{tree}}").strip()),
              ("plan", json.dumps(dataclasses.asdict(plan), sort_keys=True))]
    inputs += [(f.name, f.read_text()) for f in b.fragments()]
    inputs += [("toolchain", toolchain(b.profile.cross_compile)), ("host", toolchain(""))]
    inputs += [(f.name, f.read_text()) for f in BUILD_CODE]
    for name, text in inputs:
        h.update(f"{name}\0{text}\0".encode())
    return h.hexdigest()


def _passed_file(key: str) -> Path:
    return paths.CACHE / "check-builds" / f"{key}.json"


def passed_before(key: str) -> dict | None:
    """The record of a build with this key that passed, unless the user asks
    for every build again (CHECK_REBUILD=1). Failures are never kept: a
    broken build is built, and its errors shown, every time."""
    if os.environ.get("LAB_CHECK_REBUILD"):
        return None
    try:
        return json.loads(_passed_file(key).read_text())
    except (OSError, ValueError):
        return None


def remember_pass(key: str, record: dict) -> None:
    f = _passed_file(key)
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_name(f"{f.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record) + "\n")
    tmp.rename(f)


def build_one(src: Path, sha: str, plan: BuildPlan, log: Path) -> list[str]:
    """Build what plan asks at commit sha; return the problems (none: ok)."""
    tree.git(src, "checkout", "-q", "-f", sha)
    b = Build(profile.load(plan.arch), kernel.CHECK, debug=True)
    problems = []
    try:
        if plan.targets:
            run_logged(b.make_argv(*plan.targets), log, f"build {plan.arch}",
                       explain=compiler_errors)
        if plan.w1_objects:
            start = log.stat().st_size if log.exists() else 0
            # W=1 is asked of the patch's own files, which warnings_in()
            # picks out below; the build itself may cover more (virt/kvm goes
            # through the arch's whole KVM dir), whose W=1 warnings are not
            # the patch's: CONFIG_WERROR must not turn them into errors
            # (arm64's at.c in 6.12, for a patch to virt/kvm/kvm_main.c).
            run_logged(b.make_argv("W=1", "KCFLAGS=-Wno-error", *plan.w1_objects), log,
                       f"W=1 build {plan.arch}", explain=compiler_errors)
            warned = warnings_in(log.read_text(errors="replace")[start:], plan.files)
            problems += [f"W=1: {w}" for w in warned]
        if plan.selftests:
            start = log.stat().st_size if log.exists() else 0
            selftests.build(b, log=log)
            warned = warnings_in(log.read_text(errors="replace")[start:], plan.files)
            problems += [f"selftests: {w}" for w in warned]
    except LabError as e:
        problems.append(str(e).replace("\n    ", " | "))
    return problems


_configured: set[str] = set()


def configure_check_builds(arches: set[str]) -> None:
    """Once per arch and run (the fixtures reuse the configuration)."""
    for arch in sorted(arches - _configured):
        _configured.add(arch)
        b = Build(profile.load(arch), kernel.CHECK, debug=True)
        say(f"check: configuring {b.name} ({', '.join(f.name for f in b.fragments())})")
        b.log("config").unlink(missing_ok=True)
        kernel.configure(b)


def check_bisect(src: Path, patches_dir: Path, entries: list, rep: Report,
                 label_prefix: str = "") -> dict[str, list[str]]:
    """git am the series in src, then build each commit's plan; one row per
    patch and arch. Returns {patch: problems}."""
    tree.apply_series(src, patches_dir, branch="check")
    shas = _commits(src, len(entries))
    plans = {e.path: plan_builds(touched_files((patches_dir / e.path).read_text()))
             for e in entries}
    found = {}
    for e, sha in zip(entries, shas, strict=True):
        for arch, plan in sorted(plans[e.path].items()):
            label = f"{label_prefix}{e.path} builds alone on {arch}"
            key = build_key(src, sha, plan)
            before = passed_before(key)
            if before:
                found.setdefault(e.path, [])
                rep.add(label, [], f"built and passed {before['when']}, same tree, plan, "
                                   f"config, compilers and harness (CHECK_REBUILD=1 redoes it)")
                continue
            configure_check_builds({arch})
            log = paths.LOGS / f"check-{arch}-{Path(e.path).stem[:40]}.log"
            log.unlink(missing_ok=True)
            what = ", ".join(plan.targets + (["kvm selftests"] if plan.selftests else []))
            say(f"check: {e.path} on {arch}: {what} (log {log})")
            problems = build_one(src, sha, plan, log)
            found.setdefault(e.path, []).extend(problems)
            rep.add(label, problems)
            if not problems:
                remember_pass(key, {"patch": e.path, "arch": arch,
                                    "when": time.strftime("%Y-%m-%d %H:%M %Z")})
    return found


def run() -> Report:
    """The whole check of patches/, on the base of build/<base>/linux."""
    rep = Report()
    entries = series.load(paths.PATCHES)
    if not entries:
        rep.add("the series is empty", [])
        return rep
    if not (paths.TREE / ".git").exists():
        raise LabError(f"{paths.TREE} does not exist: run `make tree` first")
    for rel, problems in check_style(paths.TREE, paths.PATCHES, entries).items():
        rep.add(f"checkpatch --strict, subject, Signed-off-by: {rel}", problems)
    rep.add("no placeholder figure in the patches and cover letters", placeholder_problems(
        paths.PATCHES, entries))
    rep.add("quilt push -a onto the Debian source's files (debian/patches layout)",
            check_quilt(paths.TREE, paths.PATCHES, entries, paths.BASE_BUILD / "check-quilt"))
    for arch in profile.arches():
        check_distro_config(arch, rep)
    src = tree.ensure_worktree(paths.TREE, paths.CHECK_SRC, keep=True)
    try:
        check_bisect(src, paths.PATCHES, entries, rep)
        rep.add("git am of the series onto the base", [])
    except LabError as e:
        rep.add("git am of the series onto the base", [str(e)])
    b4 = paths.VENV / "bin" / "b4"
    for topic in mail.topics():
        label = f"make series {topic}: b4 reads it back, git send-email --dry-run takes it"
        try:
            # Placeholders have their own row above.
            out = mail.make_series(topic, 1, CHECK_IDENT, paths.BASE_BUILD / "check-series",
                                   refuse_placeholders=False)
            if not b4.exists():
                raise LabError(f"{b4} not found (make venv installs b4)")
            rep.add(label, mail.verify(out, str(b4), CHECK_IDENT))
        except LabError as e:
            rep.add(label, [str(e)])
    self_check(src, rep)
    return rep


def check_distro_config(arch: str, rep: Report) -> None:
    """Debian's config of arch takes the series and what its tests need:
    lab/deb.py's resolve, which a distro's package build starts from."""
    dc = base.load().distro_config
    label = (f"Debian's {arch} config" + (f" ({dc.package} {dc.version})" if dc else "")
             + f" with configs/common and {arch}: olddefconfig keeps every option")
    try:
        b, secs = deb.resolve(arch)
        rep.add(label, [], f"{secs:.0f} s, {b.out / '.config'}")
    except LabError as e:
        rep.add(label, [str(e)])


def self_check(src: Path, rep: Report) -> None:
    """The checks must catch what they are for: run them on the fixtures."""
    style_dir = FIXTURES / "style"
    entries = series.load(style_dir)
    found = check_style(paths.TREE, style_dir, entries)
    missed = [e.path for e in entries if not found[e.path]]
    rep.add("catches a mis-styled patch (fixture)",
            [f"{p}: checkpatch found nothing" for p in missed])
    placeholder_dir = FIXTURES / "placeholder"
    found = series.placeholders(placeholder_dir, series.load(placeholder_dir))
    rep.add("catches placeholder figures in a patch and a cover letter (fixture)",
            [] if len(found) == PLACEHOLDER_FIXTURES else
            [f"found {len(found)} of {PLACEHOLDER_FIXTURES}: {'; '.join(found) or 'none'}"])
    build_dir = FIXTURES / "bisect"
    entries = series.load(build_dir)
    inner = Report()
    found = check_bisect(src, build_dir, entries, inner, "self-test, ")
    culprit = entries[-1].path
    wrong = [p for p, probs in found.items() if probs and p != culprit]
    problems = []
    if not found.get(culprit):
        problems.append(f"{culprit} breaks the build, and the check passed it")
    if wrong:
        problems.append(f"blamed {', '.join(wrong)}, which build")
    rep.add("catches a patch that breaks the build of a later one (fixture)", problems)
