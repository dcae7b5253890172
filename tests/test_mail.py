import subprocess

import pytest

from lab import mail
from lab.progress import LabError

PATCH = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: kvm-mmu-series <kvm-mmu-series@users.noreply.invalid>
Subject: KVM: arm64: Do a thing

Because.

Reviewed-by: Someone Else <else@example.org>
Signed-off-by: kvm-mmu-series <kvm-mmu-series@users.noreply.invalid>
---
 a.c | 1 +
"""


def test_resign_puts_the_sender_in_from_and_signed_off_by():
    out = mail.resign(PATCH, "Ann Sender", "ann@example.org")
    assert "From: Ann Sender <ann@example.org>\n" in out
    assert "Signed-off-by: Ann Sender <ann@example.org>\n---\n" in out
    assert "kvm-mmu-series@" not in out
    assert "Reviewed-by: Someone Else <else@example.org>" in out


def test_cover_letter_fills_git_s_template():
    subject, body = mail.cover_parts("Subject: [PATCH 0/3] KVM: arm64: Skip it\n\nWhy.\n\nHow.\n")
    assert (subject, body) == ("KVM: arm64: Skip it", "Why.\n\nHow.\n")
    template = "Subject: [PATCH 0/3] *** SUBJECT HERE ***\n\n*** BLURB HERE ***\n\nA (3):\n"
    assert mail.fill_cover(template, subject, body) == (
        "Subject: [PATCH 0/3] KVM: arm64: Skip it\n\nWhy.\n\nHow.\n\nA (3):\n")
    with pytest.raises(LabError, match="template markers"):
        mail.fill_cover("Subject: x\n", subject, body)


def test_a_folded_cover_letter_subject_is_one_line_and_not_in_the_body():
    text = ("Subject: [PATCH 0/5] KVM: arm64: Split huge pages eagerly without a map\n"
            " walk and without visiting pages\n\nEager page splitting.\n")
    assert mail.cover_parts(text) == (
        "KVM: arm64: Split huge pages eagerly without a map walk and without visiting pages",
        "Eager page splitting.\n")
    with pytest.raises(LabError, match="no Subject: line"):
        mail.cover_parts("From: a <a@example.org>\n\nText.\n")


def test_get_maintainer_roles_split_to_and_cc():
    out = """\
Marc Zyngier <maz@kernel.org> (maintainer:KERNEL VIRTUAL MACHINE FOR ARM64 (KVM/arm64))
Joey Gouly <joey.gouly@arm.com> (reviewer:KERNEL VIRTUAL MACHINE FOR ARM64 (KVM/arm64))
Paolo Bonzini <pbonzini@redhat.com> (supporter:KERNEL VIRTUAL MACHINE (KVM))
kvmarm@lists.linux.dev (open list:KERNEL VIRTUAL MACHINE FOR ARM64 (KVM/arm64))
Marc Zyngier <maz@kernel.org> (maintainer:ANOTHER ENTRY)
"""
    to, cc = mail.split_roles(out)
    assert to == ["Marc Zyngier <maz@kernel.org>", "Paolo Bonzini <pbonzini@redhat.com>"]
    assert cc == ["Joey Gouly <joey.gouly@arm.com>", "kvmarm@lists.linux.dev"]


def test_a_missing_identity_says_what_to_set(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "EMAIL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    with pytest.raises(LabError, match="git config --global user.name 'Your Name'"):
        mail.sender_identity(tmp_path)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ann Sender")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ann@example.org")
    assert mail.sender_identity(tmp_path) == ("Ann Sender", "ann@example.org")


class Reached(Exception):
    """make_series got past its checks, to the tree."""


def test_make_series_refuses_a_topic_with_placeholder_figures(tmp_path, monkeypatch):
    for rel, text in {
            "a/0000-cover-letter.patch": "Subject: [PATCH 0/1] KVM: A\n\nIt took\n"
                                         "[7.3 figures to be measured].\n",
            "a/0001-KVM-A.patch": PATCH,
            "b/0000-cover-letter.patch": "Subject: [PATCH 0/1] KVM: B\n\nB.\n",
            "b/0001-KVM-B.patch": PATCH.replace("Because.", "Because [to be measured]."),
            "c/0000-cover-letter.patch": "Subject: [PATCH 0/1] KVM: C\n\nC.\n",
            "c/0001-KVM-C.patch": PATCH}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "series").write_text("a/0001-KVM-A.patch\nb/0001-KVM-B.patch\n"
                                     "c/0001-KVM-C.patch\n")
    monkeypatch.setattr(mail.paths, "PATCHES", tmp_path)

    def reached(*a, **k):
        raise Reached
    monkeypatch.setattr(mail.tree, "ensure_worktree", reached)
    ident = ("Ann Sender", "ann@example.org")
    with pytest.raises(LabError, match=r"^1 placeholder\(s\) of figures not measured yet, to "
                       r"fill in before mailing: .*a/0000-cover-letter.patch:4: "
                       r"\[7.3 figures to be measured\]$"):
        mail.make_series("a", 1, ident, tmp_path / "out")
    with pytest.raises(LabError, match=r"b/0001-KVM-B.patch:5: \[to be measured\]$"):
        mail.make_series("b", 1, ident, tmp_path / "out")
    # what is mailed is the topic's own: c goes on though b, before it, has one
    with pytest.raises(Reached):
        mail.make_series("c", 1, ident, tmp_path / "out")
    # make check reports them on a row of its own
    with pytest.raises(Reached):
        mail.make_series("a", 1, ident, tmp_path / "out", refuse_placeholders=False)
