import pytest

from lab import series
from lab.progress import LabError


def test_parse_skips_comments_and_blank_lines():
    text = "# header\n\n# topic-a\ntopic-a/0001-x.patch\ntopic-b/0001-y.patch -p1  # why\n"
    entries = series.parse(text)
    assert [e.path for e in entries] == ["topic-a/0001-x.patch", "topic-b/0001-y.patch"]
    assert [e.topic for e in entries] == ["topic-a", "topic-b"]


def test_parse_rejects_other_strip_levels_and_duplicates():
    with pytest.raises(LabError, match="-p0"):
        series.parse("a/0001-x.patch -p0\n")
    with pytest.raises(LabError, match="twice"):
        series.parse("a/0001-x.patch\na/0001-x.patch\n")
    with pytest.raises(LabError, match="unknown option"):
        series.parse("a/0001-x.patch --fuzz=3\n")


def test_render_groups_by_topic_and_parses_back():
    entries = [series.Entry("a/0001-x.patch"), series.Entry("a/0002-y.patch"),
               series.Entry("b/0001-z.patch")]
    text = series.render(entries)
    assert "\n# a\na/0001-x.patch\na/0002-y.patch\n\n# b\nb/0001-z.patch\n" in text
    assert series.parse(text) == entries


def test_empty_series_is_valid(tmp_path):
    (tmp_path / "series").write_text(series.render([]))
    assert series.load(tmp_path) == []


def test_load_names_a_missing_patch(tmp_path):
    (tmp_path / "series").write_text("a/0001-x.patch\n")
    with pytest.raises(LabError, match="a/0001-x.patch does not exist"):
        series.load(tmp_path)


HEAD = ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: kvm-mmu-series <kvm-mmu-series@users.noreply.invalid>\n"
        "Date: Tue, 24 Nov 2026 00:00:00 +0000\n")


@pytest.mark.parametrize("subject_lines, want", [
    ("Subject: [PATCH] KVM: x86: Age it\n", "KVM: x86: Age it"),
    # format-patch folds a long subject; the fold is one space
    ("Subject: [PATCH v2 3/7] KVM: arm64: Split huge pages eagerly without a\n"
     " map walk\n", "KVM: arm64: Split huge pages eagerly without a map walk"),
    ("Subject: [RFC PATCH 0/4]\n\tKVM: selftests: Test\n", "KVM: selftests: Test"),
    ("Subject: KVM: untagged\n", "KVM: untagged"),
    # only the leading tag goes
    ("Subject: [PATCH] KVM: x86: Fix [0] and [1]\n", "KVM: x86: Fix [0] and [1]"),
    ("Subject: =?UTF-8?q?KVM:_x86:_caf=C3=A9?=\n", "KVM: x86: café"),
])
def test_a_patch_s_subject_is_one_line_without_its_tag(subject_lines, want):
    text = HEAD + subject_lines + "\nWhy.\n\nSigned-off-by: x <x@example.org>\n---\n"
    assert series.subject(text) == want
    assert series.message(text) == (want, "Why.\n\nSigned-off-by: x <x@example.org>\n---\n")


def test_a_subject_is_read_from_the_headers_only():
    assert series.subject(HEAD + "\nSubject: in the body\n") is None
    assert series.subject("Subject: [PATCH] fix stuff\n") == "fix stuff"
    assert series.message("Subject: [PATCH 0/2] KVM: Cover\n\nText.\n") == ("KVM: Cover",
                                                                             "Text.\n")
