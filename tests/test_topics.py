"""python3 -m lab topics: which bases carry a topic, what its versions share."""
import pytest

from lab import base, paths, series, topics
from lab.progress import LabError


def patch(subject: str, line: str, at: int = 10, fold: bool = False) -> str:
    """A format-patch file changing one line of f.c at line `at`."""
    subj = subject.replace(": ", ":\n ", 1) if fold else subject
    return (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: kvm-mmu-series <kvm-mmu-series@users.noreply.invalid>\n"
            f"Date: Tue, 24 Nov 2026 00:00:00 +0000\nSubject: [PATCH] {subj}\n\n"
            f"Why.\n\nSigned-off-by: x <x@example.org>\n---\n f.c | 2 +-\n\n"
            f"diff --git a/f.c b/f.c\nindex 1111111..2222222 100644\n--- a/f.c\n+++ b/f.c\n"
            f"@@ -{at},3 +{at},3 @@ int f(void)\n a\n-b\n+{line}\n c\n--\n2.39.5\n")


def write(root, b: str, files: dict[str, str]) -> None:
    d = root / b
    for rel, text in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    (d / "series").write_text(series.render([series.Entry(r) for r in files], b))


@pytest.fixture
def two_bases(tmp_path):
    write(tmp_path, "6.12", {
        "aging/0001-KVM-Add-a-mode.patch": patch("KVM: Add a mode", "b2"),
        "aging/0002-KVM-x86-Age-it.patch": patch("KVM: x86: Age it", "b3"),
        "aging/0003-KVM-x86-Backport.patch": patch("KVM: x86: Backport", "b4"),
        "old-fix/0001-KVM-Fix.patch": patch("KVM: Fix", "b5")})
    write(tmp_path, "7.3", {
        # the same diff at other lines, another number in its name
        "aging/0002-KVM-Add-a-mode.patch": patch("KVM: Add a mode", "b2", at=40),
        # the same subject, folded as format-patch folds it, another change
        "aging/0001-KVM-x86-Age-it.patch": patch("KVM: x86: Age it", "b3 again", fold=True),
        "aging/0003-KVM-arm64-New.patch": patch("KVM: arm64: New", "b6"),
        "new/0001-KVM-selftests-Test.patch": patch("KVM: selftests: Test", "b7")})
    return tmp_path


def test_a_topic_s_versions_compared_patch_by_patch(two_bases):
    (two_bases / "topics.toml").write_text(
        '[[topic]]\nname = "old-fix"\nwhy = """upstream since 6.15:\n  commit abc"""\n')
    found = topics.compare(two_bases, ["6.12", "7.3"])
    assert [t.name for t in found] == ["aging", "old-fix", "new"]
    assert topics.render(found) == (
        "aging: 6.12, 7.3\n"
        "  6.12 0001-KVM-Add-a-mode.patch  7.3: same change (0002-KVM-Add-a-mode.patch)\n"
        "  6.12 0002-KVM-x86-Age-it.patch  7.3: ported (0001-KVM-x86-Age-it.patch)\n"
        "  6.12 0003-KVM-x86-Backport.patch  7.3: none\n"
        "  7.3 0003-KVM-arm64-New.patch  6.12: none\n"
        "old-fix: 6.12 only, 1 patch(es): upstream since 6.15: commit abc\n"
        "new: 7.3 only, 1 patch(es): (no reason in patches/topics.toml)\n")


@pytest.mark.parametrize("text, msg", [
    ('[[topic]]\nname = "gone"\nwhy = "x"\n',
     r"topics.toml: \[\[topic\]\] 'gone': no base carries it .* the topics: aging, old-fix, new$"),
    ('[[topic]]\nname = "aging"\nwhy = "x"\n',
     r"\[\[topic\]\] 'aging': carried on 6.12, 7.3, not on one base only: remove the entry$"),
    ('[[topic]]\nname = "new"\nwhy = " "\n', r"\[\[topic\]\] 'new': 'why' is empty$"),
    ('[[topic]]\nname = "new"\nwhy = "a"\n[[topic]]\nname = "new"\nwhy = "b"\n',
     r"\[\[topic\]\] 'new': named twice$"),
    ('[[topic]]\nname = "new"\nwhy = "a"\nbase = "7.3"\n', r"unknown key 'base'"),
])
def test_a_wrong_entry_of_topics_toml_is_one_line(two_bases, text, msg):
    (two_bases / "topics.toml").write_text(text)
    with pytest.raises(LabError, match=msg):
        topics.compare(two_bases, ["6.12", "7.3"])


def test_the_checkout_s_topics_compare():
    """patches/topics.toml names topics as they are: on one base only."""
    found = {t.name: t for t in topics.compare(paths.ROOT / "patches", base.names())}
    assert found["x86-lockless-aging"].why.startswith("a backport")
    assert all(t.bases for t in found.values())


PORT = ('[[port]]\ntopic = "aging"\n"6.12" = "KVM: x86: Backport"\n'
        '"7.3" = "KVM: arm64: New"\n')


def test_a_port_pairs_a_retitled_patch(two_bases):
    (two_bases / "topics.toml").write_text(PORT)
    aging = topics.compare(two_bases, ["6.12", "7.3"])[0]
    assert topics.render([aging]) == (
        "aging: 6.12, 7.3\n"
        "  6.12 0001-KVM-Add-a-mode.patch  7.3: same change (0002-KVM-Add-a-mode.patch)\n"
        "  6.12 0002-KVM-x86-Age-it.patch  7.3: ported (0001-KVM-x86-Age-it.patch)\n"
        "  6.12 0003-KVM-x86-Backport.patch  7.3: ported, retitled (0003-KVM-arm64-New.patch)\n")
    # from either side
    new = aging.patches["7.3"][2]
    assert topics.match(new, aging.patches["6.12"], aging.ports) == (
        topics.RETITLED, aging.patches["6.12"][2])


@pytest.mark.parametrize("text, msg", [
    (PORT.replace('"KVM: arm64: New"', '"KVM: arm64: Old"'),
     r"/topics.toml: \[\[port\]\] 'aging': no patch of 'aging' in .*/7.3/series has the "
     r"subject 'KVM: arm64: Old'; its subjects: KVM: Add a mode; KVM: x86: Age it; "
     r"KVM: arm64: New$"),
    (PORT.replace('"KVM: arm64: New"', '"KVM: selftests: Test"'),
     r"/topics.toml: \[\[port\]\] 'aging': no patch of 'aging' in .*/7.3/series has the "
     r"subject 'KVM: selftests: Test' \(new/0001-KVM-selftests-Test.patch has it, another "
     r"topic\)$"),
    (PORT.replace('"aging"', '"new"'),
     r"/topics.toml: \[\[port\]\] 'new': .*/6.12/series has no topic 'new'$"),
    (PORT.replace('"7.3" = "KVM: arm64: New"\n', ''),
     r"/topics.toml: \[\[port\]\] 'aging': names the subject of 1 base\(s\); a port pairs "),
    (PORT.replace('"7.3"', '"7.4"'), r"\[\[port\]\] 'aging': unknown key '7.4' "
     r"\(did you mean '7.3'\?\)$"),
    (PORT.replace('"KVM: arm64: New"', '"KVM: x86: Backport"'),
     r"\[\[port\]\] 'aging': the subjects are the same, which pairs the patches without an "
     r"entry: remove it$"),
    (PORT + PORT.replace('"KVM: arm64: New"', '"KVM: x86: Age it"'),
     r"\[\[port\]\] 'aging': 6.12's 'KVM: x86: Backport' is paired twice$"),
])
def test_a_wrong_port_is_one_line(two_bases, text, msg):
    (two_bases / "topics.toml").write_text(text)
    with pytest.raises(LabError, match=msg):
        topics.compare(two_bases, ["6.12", "7.3"])


def test_the_checkout_s_ports_pair_their_patches():
    """Each [[port]] of patches/topics.toml pairs what it says, and make
    topics shows the pair."""
    found = {t.name: t for t in topics.compare(paths.ROOT / "patches", base.names())}
    x86 = found["x86-mmu-selftests"]
    count = next(p for p in x86.patches["6.12"] if "Count the TLB flushes" in p.subject)
    kind, o = topics.match(count, x86.patches["7.3"], x86.ports)
    assert (kind, o.subject) == (topics.RETITLED, "KVM: selftests: Check how disabling "
                                                  "dirty logging recovers huge pages")
