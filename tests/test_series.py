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
