"""The import -> export round trip on a tiny stand-in for the kernel tree."""
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from lab import check, paths, series, tree
from lab.progress import LabError


def sh(cwd, *argv):
    return subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def base_dir(tmp_path):
    d = tmp_path / "base"
    (d / "mm").mkdir(parents=True)
    # Debian's linux-source ships a .gitignore that ignores every top-level path.
    (d / ".gitignore").write_text("*.o\n/*\n!/debian/\n")
    (d / "Makefile").write_text("all:\n")
    (d / "mm" / "vmscan.c").write_text("".join(f"line {i}\n" for i in range(1, 41)))
    return d


def commit(t: Path, path: str, text: str, subject: str, topic: str | None):
    f = t / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    sh(t, "git", "add", path)
    msg = f"{subject}\n\nWhy it matters.\n\nSigned-off-by: A U Thor <a@example.org>\n"
    if topic:
        msg += f"Topic: {topic}\n"
    sh(t, "git", "-c", "user.name=A U Thor", "-c", "user.email=a@example.org",
       "commit", "-q", "-m", msg)


def test_base_import_keeps_every_file_and_new_files_are_visible(tmp_path, base_dir):
    t = tmp_path / "linux"
    tree.import_base(t, base_dir, "test base")
    assert sorted(sh(t, "git", "ls-files").split()) == [".gitignore", "Makefile", "mm/vmscan.c"]
    (t / "mm" / "new.c").write_text("x\n")
    assert "?? mm/new.c" in sh(t, "git", "status", "--porcelain")
    assert ".gitignore" not in sh(t, "git", "status", "--porcelain")
    assert tree.tree_base_label(t) == "test base"


def two_topics(tmp_path, base_dir):
    """The tree with a change of mm/vmscan.c and a new file, in two topics:
    (tree, empty patches dir, the new text of mm/vmscan.c)."""
    t = tmp_path / "linux"
    patches = tmp_path / "patches"
    patches.mkdir()
    tree.import_base(t, base_dir, "test base")
    text = (base_dir / "mm/vmscan.c").read_text().replace("line 5\n", "line five\n")
    commit(t, "mm/vmscan.c", text, "mm: multi-gen LRU: first", "mm-topic")
    commit(t, "virt/kvm/new.c", "int x;\n", "KVM: add a file", "kvm-topic")
    return t, patches, text


def test_round_trip_is_byte_identical(tmp_path, base_dir):
    t, patches, text = two_topics(tmp_path, base_dir)
    commit(t, "mm/vmscan.c", text.replace("line 30\n", "line thirty\n"),
           "mm: multi-gen LRU: second", "mm-topic")
    changed = tree.export(t, patches)
    assert sorted(changed) == ["kvm-topic/0001-KVM-add-a-file.patch",
                               "mm-topic/0001-mm-multi-gen-LRU-first.patch",
                               "mm-topic/0002-mm-multi-gen-LRU-second.patch", "series"]
    first = {p.relative_to(patches): p.read_bytes() for p in patches.rglob("*") if p.is_file()}
    patch = (patches / "mm-topic/0001-mm-multi-gen-LRU-first.patch").read_text()
    assert "Topic:" not in patch
    assert "Signed-off-by: A U Thor <a@example.org>\n---\n" in patch
    assert patch.startswith("From 0000000000000000000000000000000000000000 ")

    assert tree.export(t, patches) == []          # exporting twice changes nothing
    tree.make_tree(base_dir, "test base", patches_dir=patches, tree=t)
    assert tree.unexported(t, patches) == []
    assert tree.export(t, patches) == []
    again = {p.relative_to(patches): p.read_bytes() for p in patches.rglob("*") if p.is_file()}
    assert again == first
    # the series keeps topics in commit order
    assert sh(t, "git", "log", "--format=%s", "base..HEAD").split("\n")[:3] == [
        "mm: multi-gen LRU: second", "KVM: add a file", "mm: multi-gen LRU: first"]


def test_export_deletes_what_it_replaces_but_keeps_cover_letters(tmp_path, base_dir):
    t = tmp_path / "linux"
    patches = tmp_path / "patches"
    (patches / "mm-topic").mkdir(parents=True)
    (patches / "mm-topic" / "0000-cover-letter.patch").write_text("cover\n")
    (patches / "mm-topic" / "0009-stale.patch").write_text("old\n")
    tree.import_base(t, base_dir, "test base")
    commit(t, "mm/a.c", "a\n", "mm: one", "mm-topic")
    tree.export(t, patches)
    assert sorted(p.name for p in (patches / "mm-topic").iterdir()) == [
        "0000-cover-letter.patch", "0001-mm-one.patch"]


def test_make_tree_refuses_to_drop_unexported_work(tmp_path, base_dir):
    t = tmp_path / "linux"
    patches = tmp_path / "patches"
    patches.mkdir()
    tree.make_tree(base_dir, "test base", patches_dir=patches, tree=t)
    commit(t, "mm/a.c", "a\n", "mm: never exported", "mm-topic")
    (t / "Makefile").write_text("changed\n")
    with pytest.raises(LabError) as e:
        tree.make_tree(base_dir, "test base", patches_dir=patches, tree=t)
    assert "not exported: mm: never exported" in str(e.value)
    assert "uncommitted:  M Makefile" in str(e.value)
    assert (t / "mm/a.c").exists()                # nothing was lost
    tree.make_tree(base_dir, "test base", patches_dir=patches, tree=t, force=True)
    assert not (t / "mm/a.c").exists()


def test_commit_without_topic_is_named(tmp_path, base_dir):
    t = tmp_path / "linux"
    tree.import_base(t, base_dir, "test base")
    commit(t, "mm/a.c", "a\n", "mm: no topic", None)
    with pytest.raises(LabError, match='"mm: no topic" needs exactly one \'Topic: <folder>\''):
        tree.export(t, tmp_path / "patches")


def test_broken_patch_names_the_patch_and_the_hunk(tmp_path, base_dir):
    t = tmp_path / "linux"
    patches = tmp_path / "patches"
    patches.mkdir()
    tree.import_base(t, base_dir, "test base")
    text = (base_dir / "mm/vmscan.c").read_text().replace("line 20\n", "line twenty\n")
    commit(t, "mm/vmscan.c", text, "mm: touch line 20", "mm-topic")
    tree.export(t, patches)
    # Make the patch stale: the base no longer has the context it expects.
    p = patches / "mm-topic/0001-mm-touch-line-20.patch"
    p.write_text(p.read_text().replace(" line 19\n", " line nineteen\n"))
    with pytest.raises(LabError) as e:
        tree.make_tree(base_dir, "test base", patches_dir=patches, tree=t, force=True)
    msg = str(e.value)
    assert "patches/mm-topic/0001-mm-touch-line-20.patch does not apply" in msg
    assert "mm/vmscan.c: Hunk #1 FAILED at 17" in msg


def test_a_patch_that_does_not_apply_leaves_the_ones_before_it(tmp_path, base_dir):
    t = tmp_path / "linux"
    patches = tmp_path / "patches"
    patches.mkdir()
    tree.import_base(t, base_dir, "test base")
    text = (base_dir / "mm/vmscan.c").read_text()
    for n in (5, 20, 35):
        text = text.replace(f"line {n}\n", f"line {n} changed\n")
        commit(t, "mm/vmscan.c", text, f"mm: touch line {n}", "mm-topic")
    tree.export(t, patches)
    second = patches / "mm-topic/0002-mm-touch-line-20.patch"
    second.write_text(second.read_text().replace(" line 19\n", " line nineteen\n"))
    with pytest.raises(LabError) as e:
        tree.apply_series(t, patches)
    assert "patches/mm-topic/0002-mm-touch-line-20.patch does not apply" in str(e.value)
    assert sh(t, "git", "log", "--format=%s", f"{tree.BASE_TAG}..HEAD").split("\n")[0] == \
        "mm: touch line 5"
    assert sh(t, "git", "rev-list", "--count", f"{tree.BASE_TAG}..HEAD").strip() == "1"
    assert not (t / ".git" / "rebase-apply").exists()
    assert sh(t, "git", "status", "--porcelain") == ""


def test_a_patch_without_an_mbox_from_line_applies(tmp_path, base_dir):
    t = tmp_path / "linux"
    patches = tmp_path / "patches"
    tree.import_base(t, base_dir, "test base")
    text = (base_dir / "mm/vmscan.c").read_text()
    for n in (5, 20):
        text = text.replace(f"line {n}\n", f"line {n} changed\n")
        commit(t, "mm/vmscan.c", text, f"mm: touch line {n}", "mm-topic")
    tree.export(t, patches)
    first = patches / "mm-topic/0001-mm-touch-line-5.patch"
    first.write_text(first.read_text().split("\n", 1)[1].rstrip("\n"))
    assert tree.apply_series(t, patches) == 2
    assert "line 20 changed" in (t / "mm/vmscan.c").read_text()


@pytest.mark.skipif(not shutil.which("quilt"), reason="quilt not installed (make deps)")
def test_quilt_takes_the_series_onto_the_base_files_it_touches(tmp_path, base_dir):
    t, patches, text = two_topics(tmp_path, base_dir)
    tree.export(t, patches)
    entries = series.load(patches)
    dest = tmp_path / "quilt"
    assert check.check_quilt(t, patches, entries, dest) == []
    assert (dest / "mm/vmscan.c").read_text() == text
    assert not (dest / "Makefile").exists()          # only what the series touches
    # A patch whose context the base lacks: quilt's refusal names it.
    p = patches / "mm-topic/0001-mm-multi-gen-LRU-first.patch"
    p.write_text(p.read_text().replace(" line 4\n", " line four\n"))
    found = check.check_quilt(t, patches, entries, dest)
    assert len(found) == 1 and "0001-mm-multi-gen-LRU-first.patch" in found[0], found


def test_a_second_import_of_a_tarball_clones_the_first(tmp_path, base_dir, monkeypatch, capsys):
    monkeypatch.setattr(paths, "CACHE", tmp_path / "cache")
    tarball = tmp_path / "linux-source.tar.xz"
    with tarfile.open(tarball, "w:xz") as tf:
        tf.add(base_dir, arcname="linux-source-6.12")
    first, second = tmp_path / "one" / "linux", tmp_path / "two" / "linux"
    tree.import_base(first, tarball, "test base")
    assert "importing test base" in capsys.readouterr().err
    tree.import_base(second, tarball, "test base")
    assert "cloning test base" in capsys.readouterr().err
    assert sh(first, "git", "rev-parse", "base") == sh(second, "git", "rev-parse", "base")
    assert sh(second, "git", "status", "--porcelain") == ""
    assert sh(second, "git", "remote") == ""
    assert sh(second, "git", "symbolic-ref", "--short", "HEAD").strip() == "series"
    (second / "mm" / "new.c").write_text("x\n")      # Debian's .gitignore unhidden too
    assert "?? mm/new.c" in sh(second, "git", "status", "--porcelain")
    # A cache that cannot serve is said and replaced by a fresh import.
    cache = tree.base_cache(tarball)
    shutil.rmtree(cache / "objects")
    (cache / "objects").mkdir()
    tree.import_base(second, tarball, "test base")
    out = capsys.readouterr().err
    assert "unusable" in out and "importing test base" in out
    assert sh(first, "git", "rev-parse", "base") == sh(second, "git", "rev-parse", "base")
    tree.import_base(second, tarball, "test base")     # and the cache is whole again
    assert "cloning test base" in capsys.readouterr().err


def test_make_tree_leaves_a_tree_that_holds_the_series(tmp_path, base_dir):
    t, patches, text = two_topics(tmp_path, base_dir)
    tree.export(t, patches)
    touched = t / "mm/vmscan.c"
    os.utime(touched, (1, 1))                     # a time no re-apply keeps
    head = sh(t, "git", "rev-parse", "HEAD")
    tree.make_tree(base_dir, "test base", patches_dir=patches, tree=t)
    assert touched.stat().st_mtime == 1           # no file rewritten: builds stay valid
    assert sh(t, "git", "rev-parse", "HEAD") == head
    # The series file reordered (the same patches): applied again, in its order.
    sf = patches / "series"
    lines = sf.read_text().splitlines(keepends=True)
    entries = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    assert len(entries) == 2
    sf.write_text("".join(ln for ln in lines if ln not in entries) + entries[1] + entries[0])
    tree.make_tree(base_dir, "test base", patches_dir=patches, tree=t)
    assert sh(t, "git", "rev-parse", "HEAD") != head
    assert touched.stat().st_mtime != 1
    # A patch changed in patches/ (an edit, a pull): the tree's commits are
    # no longer what patches/ holds, so make tree asks for FORCE=1 and then
    # applies the series again.
    p = next(patches.glob("mm-topic/0001-*.patch"))
    assert "\nSubject: mm: multi-gen LRU: first\n" in p.read_text()
    p.write_text(p.read_text().replace("\nSubject: mm: multi-gen LRU: first\n",
                                       "\nSubject: mm: multi-gen LRU: first one\n"))
    tree.make_tree(base_dir, "test base", patches_dir=patches, tree=t, force=True)
    assert "mm: multi-gen LRU: first one" in sh(t, "git", "log", "--format=%s", "base..HEAD")
