"""make series TOPIC=...: a send-ready folder for one topic of patches/.

The folder is what `git send-email build/<base>/series/<topic>-vN/*.patch` mails and
what `b4 am` reads back: git format-patch with a cover letter (subject and
text from patches/<base>/<topic>/0000-cover-letter.patch, shortlog and diffstat from
git), the version (vN), --base (the base commit, plus prerequisite-patch-id
lines for earlier topics of the series), To/Cc from scripts/get_maintainer.pl
of the tree, and the sender's git identity as From and Signed-off-by in place
of the project's.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

from lab import datafile, paths, series, tree
from lab.progress import LabError, say

COVER = tree.COVER
TEMPLATE_SUBJECT = "*** SUBJECT HERE ***"
TEMPLATE_BLURB = "*** BLURB HERE ***"


def sender_identity(repo: Path = paths.ROOT) -> tuple[str, str]:
    """The sender's name and email, as git would sign with them."""
    def get(env_key, config_key):
        v = os.environ.get(env_key, "").strip()
        if v:
            return v
        proc = subprocess.run(["git", "-C", str(repo), "config", "--get", config_key],
                              capture_output=True, text=True)
        return proc.stdout.strip()
    name, email = get("GIT_AUTHOR_NAME", "user.name"), get("GIT_AUTHOR_EMAIL", "user.email")
    if not name or not email or "@" not in email:
        raise LabError("make series signs the patches as you and mails them from you, but no "
                       "git identity is set: git config --global user.name 'Your Name' and "
                       "git config --global user.email you@example.org (or set "
                       "GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL)")
    return name, email


def resign(patch_text: str, name: str, email: str) -> str:
    """The patch with the sender as From: and Signed-off-by: in place of the
    project identity (other people's trailers stay)."""
    project = f"{tree.IDENT_NAME} <{tree.IDENT_EMAIL}>"
    me = f"{name} <{email}>"
    head, sep, rest = patch_text.partition("\n---\n")
    head = re.sub(r"^From: .*$", f"From: {me}", head, count=1, flags=re.M)
    head = head.replace(f"Signed-off-by: {project}", f"Signed-off-by: {me}")
    if f"Signed-off-by: {me}" not in head:
        head = head.rstrip("\n") + f"\nSigned-off-by: {me}"
    return head + sep + rest


def cover_parts(text: str) -> tuple[str, str]:
    """(subject without the [PATCH x/n] tag, body) of a maintained cover letter."""
    subject, body = series.message(text)
    if not subject:
        raise LabError("the cover letter has no Subject: line")
    return subject, body.strip("\n") + "\n"


def fill_cover(template: str, subject: str, body: str) -> str:
    if TEMPLATE_SUBJECT not in template or TEMPLATE_BLURB not in template:
        raise LabError("git format-patch wrote a cover letter without its template markers")
    return template.replace(TEMPLATE_SUBJECT, subject).replace(TEMPLATE_BLURB, body.rstrip("\n"))


def maintainers(src: Path, patch_files: list[Path]) -> tuple[list[str], list[str]]:
    """(to, cc): maintainers and supporters to To, reviewers and lists to Cc."""
    proc = subprocess.run(["perl", "scripts/get_maintainer.pl", "--no-git", "--no-git-fallback",
                           "--rolestats", *map(str, patch_files)],
                          cwd=src, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"get_maintainer.pl failed: {proc.stderr.strip()[-300:]}")
    return split_roles(proc.stdout)


def split_roles(output: str) -> tuple[list[str], list[str]]:
    to, cc = [], []
    for line in output.splitlines():
        m = re.match(r"^(.*?<[^>]+>|\S+@\S+)\s*(?:\((.*)\))?$", line.strip())
        if not m:
            continue
        addr, role = m.group(1).strip(), (m.group(2) or "")
        (to if re.search(r"maintainer|supporter", role) else cc).append(addr)
    return list(dict.fromkeys(to)), [a for a in dict.fromkeys(cc) if a not in to]


def topics() -> list[str]:
    return list(dict.fromkeys(e.topic for e in series.load(paths.PATCHES)))


def refuse_placeholders_in(patches_dir: Path, entries: list[series.Entry]) -> None:
    """A LabError naming each placeholder (series.PLACEHOLDER_RE) of these
    patches and their cover letters: a figure not measured yet is not mailed."""
    found = series.placeholders(patches_dir, entries)
    if found:
        raise LabError(f"{len(found)} placeholder(s) of figures not measured yet, to fill in "
                       f"before mailing: {'; '.join(found)}")


def make_series(topic: str, version: int, ident: tuple[str, str],
                out_root: Path = paths.BASE_BUILD / "series",
                refuse_placeholders: bool = True) -> Path:
    """The topic's send-ready folder. What is mailed, its patches and cover
    letter, must hold no placeholder (refuse_placeholders: make check
    reports them on a row of its own)."""
    entries = series.load(paths.PATCHES)
    mine = [e for e in entries if e.topic == topic]
    if not mine:
        raise LabError(f"no topic {topic!r} in {datafile.origin(paths.PATCHES / 'series')}; "
                       f"topics: {', '.join(topics()) or '(none)'}")
    cover_file = paths.PATCHES / topic / COVER
    if not cover_file.exists():
        raise LabError(f"{cover_file} is missing: a topic is mailed with its cover letter")
    if refuse_placeholders:
        refuse_placeholders_in(paths.PATCHES, mine)
    subject, body = cover_parts(cover_file.read_text())
    name, email = ident
    src = tree.ensure_worktree(paths.TREE, paths.BASE_BUILD / "mail-src", keep=True)
    # The series up to the topic, the topic's own patches signed by the sender.
    upto = entries[:entries.index(mine[-1]) + 1]
    staged = paths.BASE_BUILD / "mail-patches"
    if staged.exists():
        shutil.rmtree(staged)
    for e in upto:
        text = (paths.PATCHES / e.path).read_text()
        if e.topic == topic:
            text = resign(text, name, email)
        (staged / e.path).parent.mkdir(parents=True, exist_ok=True)
        (staged / e.path).write_text(text)
    (staged / "series").write_text(series.render(upto))
    tree.apply_series(src, staged, branch="mail")
    first = f"HEAD~{len(mine)}"
    out = out_root / f"{topic}-v{version}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    commits = tree.git(src, "rev-list", "--reverse", f"{first}..HEAD").split()
    patch_files = [Path(p) for p in tree.git(
        src, "format-patch", "-o", str(out / ".plain"), f"{first}..HEAD").split()]
    to, cc = maintainers(src, patch_files)
    shutil.rmtree(out / ".plain")
    if not to:
        raise LabError(f"get_maintainer.pl named no maintainer for {topic}")
    argv = ["-c", f"user.name={name}", "-c", f"user.email={email}", "format-patch",
            # upstream leaves v1 unmarked: [PATCH 0/3], then [PATCH v2 0/3]
            *([f"-v{version}"] if version > 1 else []), "--cover-letter", "--thread=shallow", f"--base={tree.BASE_TAG}",
            "--no-signature", "--from", "-o", str(out),
            *[f"--to={a}" for a in to], *[f"--cc={a}" for a in cc], f"{first}..HEAD"]
    files = [Path(p) for p in tree.git(src, *argv).split()]
    for f in files[1:]:
        f.write_text(tree.strip_topic(f.read_text()))
    cover = files[0]
    cover.write_text(fill_cover(cover.read_text(), subject, body))
    say(f"series: {out}: cover letter + {len(commits)} patch(es), v{version}, "
        f"To: {', '.join(to)}; Cc: {', '.join(cc)}")
    return out


def verify(out: Path, b4: str, ident: tuple[str, str]) -> list[str]:
    """Problems (none: ok) when b4 reads the folder back and git send-email
    --dry-run goes through it."""
    problems = []
    files = sorted(out.glob("*.patch"))
    mbox = out.parent / f"{out.name}.mbox"
    mbox.write_text("".join(f.read_text() for f in files))
    b4_out = out.parent / f"{out.name}.b4"
    if b4_out.exists():
        shutil.rmtree(b4_out)
    proc = subprocess.run([b4, "--offline-mode", "am", "-m", str(mbox), "-o", str(b4_out)],
                          capture_output=True, text=True, cwd=out.parent)
    got = sorted(b4_out.glob("*.mbx")) if b4_out.exists() else []
    if proc.returncode != 0 or not got:
        problems.append(f"b4 am did not read it back: {(proc.stderr or proc.stdout).strip()[-300:]}")
    else:
        n_read = got[0].read_text().count("\nFrom: ") + got[0].read_text().startswith("From: ")
        if n_read < len(files) - 1:
            problems.append(f"b4 am read {n_read} of {len(files) - 1} patches")
    name, email = ident
    proc = subprocess.run(["git", "send-email", "--dry-run", "--confirm=never", "--quiet",
                           f"--from={name} <{email}>", "--smtp-server=/bin/false",
                           *map(str, files)],
                          capture_output=True, text=True, cwd=out.parent,
                          env=dict(os.environ, GIT_CONFIG_NOSYSTEM="1"))
    if proc.returncode != 0:
        problems.append(f"git send-email --dry-run refused it: "
                        f"{(proc.stderr or proc.stdout).strip()[-300:]}")
    return problems
