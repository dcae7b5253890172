"""build/<base>/linux: the base as one commit, then one commit per patch of the series.

Like `gbp pq`: import builds the tree from base + patches/, export writes the
tree's commits back into patches/. The topic folder of each commit travels as a
`Topic:` trailer that import adds and export strips, so it survives rebase -i
and never reaches the patch files or the mailing list.
"""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from lab import base, datafile, paths, series
from lab.progress import LabError, say

# The project identity: author of the base commit and committer of the series.
IDENT_NAME = "kvm-mmu-series"
IDENT_EMAIL = "kvm-mmu-series@users.noreply.invalid"
BASE_TAG = "base"
TOPIC_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
COVER = series.COVER
# Debian's linux-source tarball appends these to the top-level .gitignore so
# that its packaging repo tracks only debian/; in our tree they would hide
# every new file, so the working copy drops them (see _unhide_toplevel).
DEBIAN_IGNORE = ("/*", "!/debian/")


def git(tree: Path, *args, check=True, env=None, input=None) -> str:
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True,
                          env=full_env, input=input)
    if check and proc.returncode != 0:
        raise LabError(f"git {' '.join(args)} in {tree} failed: "
                       f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    return proc.stdout


def _ident_env(date: str | None = None) -> dict:
    env = {"GIT_AUTHOR_NAME": IDENT_NAME, "GIT_AUTHOR_EMAIL": IDENT_EMAIL,
           "GIT_COMMITTER_NAME": IDENT_NAME, "GIT_COMMITTER_EMAIL": IDENT_EMAIL}
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return env


# ---------------------------------------------------------------- base import

def base_subject(label: str) -> str:
    return f"base: {label}"


def base_cache(source: Path) -> Path | None:
    """Where the imported base of a tarball is kept, by the tarball's sha256;
    none for a tree of the user's own, whose files may change."""
    if source.is_dir():
        return None
    return paths.CACHE / f"base-{base.sha256_of(source)[:16]}.git"


def clone_base(source: Path, tree: Path, label: str) -> None:
    """tree as a clone of the base commit of source (the cached import, or
    build/<base>/linux for a bench variant), its objects hard-linked, not copied,
    on a branch "series" at the base."""
    try:
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(source), str(tree)],
                       check=True, capture_output=True)
    except subprocess.CalledProcessError as e:
        raise LabError(f"git clone {source} failed: "
                       f"{e.stderr.decode(errors='replace').strip()}") from e
    git(tree, "remote", "remove", "origin")
    if tree_base_label(tree) != label:
        raise LabError(f"its base commit is not {base_subject(label)!r}")
    git(tree, "checkout", "-q", "-B", "series", BASE_TAG)
    git(tree, "config", "core.autocrlf", "false")
    _unhide_toplevel(tree)


def _clone_base(cache: Path, tree: Path, label: str) -> bool:
    """tree as a clone of the cached import: 11 s where a fresh import takes
    67 s (34 s of tar, 33 s of git add and commit). False, with tree
    removed, if the cache cannot serve."""
    try:
        clone_base(cache, tree, label)
    except LabError as e:
        say(f"tree: the cached base {cache} is unusable ({e}); importing afresh")
        shutil.rmtree(tree, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)      # the import keeps a new one
        return False
    return True


def _save_base(tree: Path, cache: Path) -> None:
    """Keep the base commit for the next import (a fresh clone's make tree)."""
    tmp = cache.with_name(f"{cache.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    cache.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(tree), str(tmp)], check=True,
                   capture_output=True)
    try:
        tmp.rename(cache)           # whole or not at all, even beside another make tree
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def import_base(tree: Path, source: Path, label: str) -> None:
    """Create tree as a git repo whose one commit is source (tarball or dir)."""
    if tree.exists():
        shutil.rmtree(tree)
    cache = base_cache(source)
    if cache and (cache / "HEAD").exists():
        say(f"tree: cloning {label} into {tree} from {cache}")
        if _clone_base(cache, tree, label):
            return
    tree.mkdir(parents=True)
    say(f"tree: importing {label} into {tree}")
    if source.is_dir():
        subprocess.run(["cp", "-a", f"{source}/.", str(tree)], check=True)
    else:
        subprocess.run(["tar", "-xf", str(source), "-C", str(tree), "--strip-components=1"],
                       check=True)
    git(tree, "init", "-q", "-b", "series")
    git(tree, "config", "core.autocrlf", "false")
    # -f: Debian's .gitignore would otherwise keep every top-level path out.
    git(tree, "add", "-A", "-f")
    # A fixed date makes the base commit id the same on every machine, so
    # `git format-patch --base` and b4 name the same base everywhere.
    git(tree, "commit", "-q", "--no-verify", "-m", base_subject(label),
        env=_ident_env("2000-01-01T00:00:00Z"))
    git(tree, "tag", BASE_TAG)
    if cache:
        _save_base(tree, cache)
    _unhide_toplevel(tree)


def _unhide_toplevel(tree: Path) -> None:
    gi = tree / ".gitignore"
    if not gi.exists():
        return
    lines = gi.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if ln.strip() not in DEBIAN_IGNORE]
    if len(kept) != len(lines):
        gi.write_text("".join(kept))
        # git reads .gitignore from the working copy; assume-unchanged keeps
        # the edit out of `git status` and out of every commit.
        git(tree, "update-index", "--assume-unchanged", ".gitignore")


def exclude(tree: Path, patterns: list[str]) -> None:
    """patterns in tree's .git/info/exclude, each once: what a build leaves
    in the tree's working copy (make deb's packages) is no work of the
    tree's, for git status, make tree and the build cache."""
    f = tree / git(tree, "rev-parse", "--git-path", "info/exclude").strip()
    have = f.read_text().splitlines() if f.exists() else []
    missing = [p for p in patterns if p not in have]
    if missing:
        f.parent.mkdir(parents=True, exist_ok=True)
        with open(f, "a") as out:
            out.write("".join(f"{p}\n" for p in missing))


def tree_base_label(tree: Path) -> str | None:
    if not (tree / ".git").exists():
        return None
    out = git(tree, "log", "-1", "--format=%s", BASE_TAG, check=False).strip()
    return out.removeprefix("base: ") if out.startswith("base: ") else None


# ------------------------------------------------------------- series apply

def _with_topic(patch_text: str, topic: str, tree: Path) -> str:
    return git(tree, "interpret-trailers", "--trailer", f"Topic: {topic}", input=patch_text)


# What git am needs to read a patch that has no mbox "From " line as one
# message of the mbox apply_patches feeds it.
MBOX_FROM = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"


def as_mbox_message(text: str) -> str:
    """text as one message of an mbox: its "From " line, a final newline."""
    if not text.startswith("From "):
        text = MBOX_FROM + text
    return text if text.endswith("\n") else text + "\n"


def apply_patches(tree: Path, patches: list[tuple[Path, str]], branch: str) -> None:
    """Reset tree (or a worktree of it) to the base on branch and git am each
    (patch file, topic) in order; a topic travels as the commit's Topic:
    trailer ("": none, a bench-only patch). A patch that does not apply is
    named with git am's message and the hunks patch(1) finds failing, and
    the tree is left at the last patch that applied, no am in progress."""
    git(tree, "checkout", "-q", "-f", "-B", branch, BASE_TAG)
    git(tree, "reset", "-q", "--hard", BASE_TAG)
    mbox = []
    for src, topic in patches:
        text = src.read_text()
        if topic:
            text = _with_topic(text, topic, tree)
        mbox.append(as_mbox_message(text))
    # One git am for the whole series: each run reads and writes the index
    # of the whole kernel, which one at a time made 46 patches take 11.7 s
    # instead of 3.8 (6.12, 2026-11-24), and make check applies the series
    # once per topic it mails.
    proc = subprocess.run(
        ["git", "-C", str(tree), "am", "-q", "--committer-date-is-author-date",
         "--keep-cr"], input="".join(mbox), capture_output=True, text=True,
        env=dict(os.environ, **_ident_env()))
    if proc.returncode != 0:
        said = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines()
                if ln.startswith(("error:", "fatal:"))]
        # --quit, not --abort: keep what applied, the base plus the patches
        # before the one that failed.
        git(tree, "am", "--quit", check=False)
        git(tree, "reset", "-q", "--hard")
        applied = int(git(tree, "rev-list", "--count", f"{BASE_TAG}..HEAD").strip())
        if applied >= len(patches):
            raise LabError(f"git am of {len(patches)} patch(es) failed after the last one "
                           f"applied: {'; '.join(said) or proc.stderr.strip()[-300:]}")
        src = patches[applied][0]
        raise LabError(f"{datafile.origin(src)} does not apply: {why_not_applies(tree, src)}"
                       f" (git am: {'; '.join(said) or 'failed'})")
    # reset --hard restored Debian's .gitignore along with everything else.
    _unhide_toplevel(tree)


def apply_series(tree: Path, patches_dir: Path, branch: str = "series") -> int:
    """Reset tree to the base on branch and git am every patch of the series."""
    entries = series.load(patches_dir)
    apply_patches(tree, [(patches_dir / e.path, e.topic) for e in entries], branch)
    return len(entries)


def why_not_applies(tree: Path, patch: Path) -> str:
    """Which file and hunk fail, in patch(1)'s words (as quilt would say it)."""
    proc = subprocess.run(["patch", "-p1", "--dry-run", "--batch", "-f", "-i", str(patch)],
                          cwd=tree, capture_output=True, text=True)
    current, failed = None, []
    for line in proc.stdout.splitlines():
        m = re.match(r"checking file (.*)", line) or re.match(r"patching file (.*)", line)
        if m:
            current = m.group(1)
        elif "FAILED" in line or "can't find file" in line or "No such file" in line:
            failed.append(f"{current}: {line.strip()}" if current else line.strip())
    if failed:
        return "; ".join(failed)
    said = (proc.stdout + proc.stderr).strip().splitlines()
    return said[-1] if said else "git am failed and patch --dry-run found nothing to say"


# ------------------------------------------------------------------- export

def _commits(tree: Path) -> list[str]:
    merges = git(tree, "rev-list", "--merges", f"{BASE_TAG}..HEAD").split()
    if merges:
        raise LabError(f"{tree}: the series has merge commits ({merges[0][:12]}); rebase them away")
    return git(tree, "rev-list", "--reverse", f"{BASE_TAG}..HEAD").split()


def _topic_of(tree: Path, sha: str) -> str:
    vals = git(tree, "log", "-1", "--format=%(trailers:key=Topic,valueonly)", sha).split()
    subject = git(tree, "log", "-1", "--format=%s", sha).strip()
    if len(vals) != 1 or not TOPIC_RE.match(vals[0]):
        raise LabError(f"commit {sha[:12]} \"{subject}\" needs exactly one 'Topic: <folder>' "
                       f"trailer (git commit --amend --trailer 'Topic: <folder>')")
    return vals[0]


def strip_topic(text: str) -> str:
    """Remove the Topic: trailer from a format-patch file's message."""
    lines = text.splitlines(keepends=True)
    try:
        end = next(i for i, ln in enumerate(lines) if ln.rstrip("\n") == "---")
    except StopIteration:
        end = len(lines)
    out = [ln for ln in lines[:end] if not ln.startswith("Topic: ")]
    # interpret-trailers adds a blank line when the message had no trailers.
    while len(out) >= 2 and out[-1].strip() == "" and out[-2].strip() == "":
        out.pop()
    if out and out[-1].strip() == "" and end < len(lines):
        out.pop()
    return "".join(out + lines[end:])


FORMAT_PATCH = ["-c", "core.abbrev=12", "-c", "diff.noprefix=false",
                "-c", "diff.mnemonicPrefix=false", "-c", "format.signOff=false",
                "-c", "format.coverLetter=false",
                "-c", "diff.renames=true", "-c", "diff.algorithm=default",
                "format-patch", "--no-signature", "--zero-commit", "--no-notes",
                "--no-numbered", "--keep-subject"]


def render_patches(tree: Path) -> list[tuple[str, str, str]]:
    """[(relative path under patches/, file text, subject)] for base..HEAD."""
    out = []
    counters: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for sha in _commits(tree):
            topic = _topic_of(tree, sha)
            counters[topic] = counters.get(topic, 0) + 1
            d = Path(tmp) / topic
            names = git(tree, *FORMAT_PATCH, f"--start-number={counters[topic]}",
                        "-o", str(d), "-1", sha).split()
            f = Path(names[0])
            subject = git(tree, "log", "-1", "--format=%s", sha).strip()
            out.append((f"{topic}/{f.name}", strip_topic(f.read_text()), subject))
    return out


def export(tree: Path, patches_dir: Path) -> list[str]:
    """Rewrite patches/ from the tree's commits; return the paths that changed."""
    rendered = render_patches(tree)
    changed = []
    wanted = {rel for rel, _, _ in rendered}
    for old in sorted(patches_dir.glob("*/*.patch")):
        rel = f"{old.parent.name}/{old.name}"
        if old.name != COVER and rel not in wanted:
            old.unlink()
            changed.append(rel)
    for rel, text, _ in rendered:
        dest = patches_dir / rel
        if not dest.exists() or dest.read_text() != text:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
            changed.append(rel)
    series_text = series.render([series.Entry(rel) for rel, _, _ in rendered])
    sf = patches_dir / "series"
    if not sf.exists() or sf.read_text() != series_text:
        sf.write_text(series_text)
        changed.append("series")
    return changed


def unexported(tree: Path, patches_dir: Path,
               rendered: list[tuple[str, str, str]] | None = None) -> list[str]:
    """What in tree that patches/ does not hold: dirty files, commits not
    exported. rendered: render_patches(tree), when the caller has it."""
    # A reset or checkout in the tree restores Debian's "/*" line, which
    # would hide new files from the status below.
    _unhide_toplevel(tree)
    problems = [f"uncommitted: {ln}" for ln in
                git(tree, "status", "--porcelain").splitlines() if ln.strip()]
    for rel, text, subject in (render_patches(tree) if rendered is None else rendered):
        f = patches_dir / rel
        if not f.exists() or f.read_text() != text:
            problems.append(f"not exported: {subject}")
    return problems


# ---------------------------------------------------------------- make tree

def old_tree(force: bool = False, old: Path | None = None, new: Path | None = None) -> str:
    """build/linux, where the default base's tree was before each base had
    build/<base>/, when the new place has no tree yet: its work not exported
    stops make tree (unless force), with how to move it; without any, a
    note that it and its worktrees are stale. It is never touched."""
    old, new = old or paths.OLD_TREE, new or paths.TREE
    if paths.BASE != paths.DEFAULT_BASE or not (old / ".git").is_dir() or (new / ".git").exists():
        return ""
    lost = [] if force else unexported(old, paths.PATCHES)
    if lost:
        raise LabError(f"{old}, base {paths.DEFAULT_BASE}'s tree before each base had a folder "
                       f"of its own, has work that {datafile.origin(paths.PATCHES)} does not "
                       f"hold; move it to its new place (mkdir -p {new.parent}; mv {old} {new}; "
                       f"git -C {new} worktree repair) and make tree again, or make tree "
                       f"FORCE=1 to leave it behind:\n    " + "\n    ".join(lost))
    note = (f"tree: {old} is base {paths.DEFAULT_BASE}'s tree from before each base had a "
            f"folder of its own, left as it is: {new} is the tree now (rm -rf {old} and its "
            f"worktrees, vanilla-src, check-src, variants/, when nothing uses them)")
    say(note)
    return note


def holds_series(rendered: list[tuple[str, str, str]], patches_dir: Path) -> bool:
    """Whether a tree whose commits render as rendered (render_patches), all
    exported (unexported() found nothing), is patches/'s series in its
    order: applying the series again would change no file's contents, only
    its time, and every build from the tree would then recompile what the
    series touches (and a build running meanwhile would compile the base:
    2026-11-24, make bench's patched arm64 kernel was built while another
    make reset the tree to the base)."""
    return [rel for rel, _, _ in rendered] == [e.path for e in series.load(patches_dir)]


def make_tree(source: Path, label: str, patches_dir: Path = paths.PATCHES,
              tree: Path = paths.TREE, force: bool = False) -> None:
    if (tree / ".git").exists() and not force:
        rendered = render_patches(tree)
        lost = unexported(tree, patches_dir, rendered)
        if lost:
            raise LabError(f"{tree} has work that {datafile.origin(patches_dir)}/ does not "
                           f"hold; export it (make export) or discard it (make tree FORCE=1):"
                           f"\n    "
                           + "\n    ".join(lost))
        if tree_base_label(tree) == label and holds_series(rendered, patches_dir):
            say(f"tree: {tree} = {label} + {len(series.load(patches_dir))} patch(es), "
                f"as {datafile.origin(patches_dir)}/ has them: left as it is")
            return
    if tree_base_label(tree) != label:
        import_base(tree, source, label)
    n = apply_series(tree, patches_dir)
    say(f"tree: {tree} = {label} + {n} patch(es)")


def ensure_worktree(tree: Path, dest: Path, rev: str = BASE_TAG, keep: bool = False) -> Path:
    """A checkout of rev beside the tree (the vanilla source), kept in step.
    keep: reuse an existing worktree wherever its HEAD is (its user moves it)."""
    want = git(tree, "rev-parse", f"{rev}^{{commit}}").strip()
    if (dest / ".git").exists():
        have = git(dest, "rev-parse", "HEAD", check=False).strip()
        if have == want or (keep and have):
            return dest
        git(tree, "worktree", "remove", "--force", str(dest), check=False)
    if dest.exists():
        shutil.rmtree(dest)
    git(tree, "worktree", "prune")
    git(tree, "worktree", "add", "-q", "--detach", str(dest), want)
    return dest
