import subprocess
from pathlib import Path

import pytest

from lab import base, check, profile, series
from lab.kernel import Build
from lab.progress import LabError

FIXTURES = Path(__file__).parent / "fixtures" / "check"


def test_touched_files_of_a_real_patch():
    text = (FIXTURES / "bisect/fixture/0002-KVM-arm64-Add-stage2_fixture_needs_cmo.patch").read_text()
    assert check.touched_files(text) == ["arch/arm64/kvm/hyp/pgtable.c"]


def test_plan_builds_per_arch():
    plans = check.plan_builds(["arch/arm64/kvm/hyp/pgtable.c",
                               "arch/arm64/include/asm/kvm_pgtable.h"])
    assert list(plans) == ["arm64"]
    assert plans["arm64"].targets == ["arch/arm64/kvm/"]
    assert plans["arm64"].w1_objects == ["arch/arm64/kvm/hyp/pgtable.o"]
    # generic code concerns both arches; a C file outside KVM is built as its object
    plans = check.plan_builds(["mm/vmscan.c", "include/linux/mmzone.h", "Documentation/x.rst"])
    assert sorted(plans) == ["arm64", "x86_64"]
    assert plans["x86_64"].targets == ["arch/x86/kvm/", "mm/vmscan.o"]
    assert plans["x86_64"].w1_objects == ["mm/vmscan.o"]
    # virt/kvm has no Makefile: its W=1 build goes through the arch's KVM dir
    assert check.plan_builds(["virt/kvm/kvm_main.c"])["arm64"].w1_objects == ["arch/arm64/kvm/"]
    # selftests: shared code builds for both arches, an arch folder for its own
    plans = check.plan_builds(["tools/testing/selftests/kvm/lib/kvm_util.c"])
    assert sorted(plans) == ["arm64", "x86_64"]
    assert plans["arm64"].selftests and plans["arm64"].targets == ["headers"]
    plans = check.plan_builds(["tools/testing/selftests/kvm/x86_64/nx_huge_pages_test.c"])
    assert list(plans) == ["x86_64"]
    assert check.plan_builds(["arch/riscv/kvm/mmu.c", "Documentation/virt/kvm/api.rst"]) == {}


def test_warnings_are_kept_only_for_touched_files():
    log = """\
../arch/arm64/kvm/hyp/pgtable.c:1470:6: warning: variable 'x' set but not used [-Wunused-but-set-variable]
../arch/arm64/kvm/mmu.c:12:1: warning: no previous prototype for 'f' [-Wmissing-prototypes]
/work/main/build/check-src/tools/testing/selftests/kvm/dirty_log_perf_test.c:40:2: warning: unused variable 'y'
../arch/arm64/kvm/hyp/pgtable.c:1471:6: error: 'z' undeclared
"""
    got = check.warnings_in(log, ["arch/arm64/kvm/hyp/pgtable.c",
                                  "tools/testing/selftests/kvm/dirty_log_perf_test.c"])
    assert [g.split(":")[0] for g in got] == ["../arch/arm64/kvm/hyp/pgtable.c",
                                              "/work/main/build/check-src/tools/testing/"
                                              "selftests/kvm/dirty_log_perf_test.c"]


CHECKPATCH = """\
WARNING:LONG_LINE: line length of 104 exceeds 100 columns
#30: FILE: arch/arm64/kvm/hyp/pgtable.c:1512:
CHECK:SPACING: spaces preferred around that '==' (ctx:VxV)
ERROR:MISSING_SIGN_OFF: Missing Signed-off-by: line(s)
"""
GOOD = "Subject: [PATCH] KVM: arm64: Do a thing\n\nSigned-off-by: A B <a@b.example>\n---\n"


def test_style_findings_waivers_subject_and_signoff():
    waivers = check.parse_waivers("# why\narm64-*/0001-* LONG_LINE the table in the message\n",
                                  "waivers")
    got = check.style_problems("arm64-x/0001-a.patch", GOOD, CHECKPATCH, waivers)
    assert got == ["CHECK:SPACING: spaces preferred around that '==' (ctx:VxV)",
                   "ERROR:MISSING_SIGN_OFF: Missing Signed-off-by: line(s)"]
    assert check.style_problems("t/0001-a.patch", GOOD, "", []) == []
    bad = check.style_problems("t/0001-a.patch", "Subject: [PATCH] fix stuff\n", "", [])
    assert bad[0].startswith("subject 'fix stuff' does not start with an upstream prefix")
    assert bad[1] == "no Signed-off-by"
    # a folded subject is judged whole
    folded = "Subject: [PATCH] KVM: arm64: Do a thing that\n takes two lines\n\n" + GOOD[GOOD.index("Signed"):]
    assert check.style_problems("t/0001-a.patch", folded, "", []) == []
    folded = "Subject: [PATCH] Do a thing that\n takes two lines\n\nSigned-off-by: A B <a@b.example>\n"
    assert check.style_problems("t/0001-a.patch", folded, "", [])[0].startswith(
        "subject 'Do a thing that takes two lines' does not start")
    with pytest.raises(LabError, match="waivers:1: a waiver is"):
        check.parse_waivers("only-a-glob\n", "waivers")


def test_placeholder_figures_are_named_by_file_and_line():
    d = FIXTURES / "placeholder"
    got = check.placeholder_problems(d, series.load(d))
    where = "tests/fixtures/check/placeholder/fixture/"
    assert got == [
        f"{where}0000-cover-letter.patch:5: [V7.3 FIGURES TO BE MEASURED]: a placeholder, "
        "not a figure: fill it in",
        f"{where}0001-KVM-selftests-Time-a-thing.patch:6: [7.3 figures to be measured]: a "
        "placeholder, not a figure: fill it in"]
    assert len(got) == check.PLACEHOLDER_FIXTURES
    # the series' real patches: a base without any passes
    assert check.placeholder_problems(FIXTURES / "bisect", series.load(FIXTURES / "bisect")) == []


@pytest.mark.parametrize("text, found", [
    ("[7.3 figures to be measured]", True),
    ("(figures: [to be measured on hardware])", True),
    ("[v7.3 figures to be\nmeasured]", True),
    ("[TO BE MEASURED]", True),
    ("[v4 message-id to be filled]", True),
    ("figures to be measured", False),         # no brackets
    ("[0] to be measured [1]", False),         # outside any bracket pair
    ("[7.3 figures to be remeasured]", False),
])
def test_what_is_a_placeholder(text, found):
    assert bool(series.PLACEHOLDER_RE.search(text)) == found


def test_fixture_series_are_well_formed():
    # make check runs these; each must name files that exist, in order
    assert [e.path for e in series.load(FIXTURES / "bisect")] == [
        "fixture/0001-KVM-arm64-Rename-kvm_pgtable_walk_skip_cmo.patch",
        "fixture/0002-KVM-arm64-Add-stage2_fixture_needs_cmo.patch"]
    assert len(series.load(FIXTURES / "style")) == 1
    assert len(series.load(FIXTURES / "placeholder")) == 1


def _git(repo, *argv):
    return subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_build_key_is_the_tree_not_the_commit(tmp_path):
    repo = tmp_path / "linux"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "pgtable.c").write_text("int a;\n")
    ident = ["-c", "user.name=A", "-c", "user.email=a@example.org"]
    _git(repo, "add", "pgtable.c")
    _git(repo, *ident, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    _git(repo, *ident, "commit", "-q", "--allow-empty", "-m", "same tree, other commit")
    same = _git(repo, "rev-parse", "HEAD")
    (repo / "pgtable.c").write_text("int b;\n")
    _git(repo, *ident, "commit", "-q", "-am", "other tree")
    other = _git(repo, "rev-parse", "HEAD")
    plan = check.plan_builds(["arch/arm64/kvm/hyp/pgtable.c"])["arm64"]
    key = check.build_key(repo, first, plan)
    assert check.build_key(repo, same, plan) == key
    assert check.build_key(repo, other, plan) != key
    wider = check.plan_builds(["arch/arm64/kvm/hyp/pgtable.c", "mm/vmscan.c"])["arm64"]
    assert check.build_key(repo, first, wider) != key


def test_a_remembered_pass_is_found_unless_a_rebuild_is_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(check.paths, "CACHE", tmp_path)
    monkeypatch.delenv("LAB_CHECK_REBUILD", raising=False)
    assert check.passed_before("k1") is None
    check.remember_pass("k1", {"patch": "t/0001.patch", "arch": "arm64", "when": "then"})
    assert check.passed_before("k1")["when"] == "then"
    monkeypatch.setenv("LAB_CHECK_REBUILD", "1")
    assert check.passed_before("k1") is None


def test_w1_build_reports_the_patchs_warnings_without_failing_on_others(tmp_path, monkeypatch):
    """The W=1 pass of a patch to virt/kvm builds the arch's whole KVM dir:
    -Werror must not fail it on another file's W=1 warning, and the patch's
    own warnings are still reported."""
    calls = []

    def fake_run(argv, log, label, explain=None):
        calls.append(argv)
        if "W=1" in argv:
            log.write_text("../arch/arm64/kvm/at.c:752:45: warning: variable 'px' set but not used\n"
                           "../virt/kvm/kvm_main.c:10:1: warning: no previous prototype\n")
        return 0.0

    monkeypatch.setattr(check, "run_logged", fake_run)
    monkeypatch.setattr(check.tree, "git", lambda *a, **k: "")
    plan = check.plan_builds(["virt/kvm/kvm_main.c"])["arm64"]
    problems = check.build_one(tmp_path, "HEAD", plan, tmp_path / "log")
    w1 = [a for a in calls if "W=1" in a][0]
    assert "KCFLAGS=-Wno-error" in w1
    assert problems == ["W=1: ../virt/kvm/kvm_main.c:10:1: warning: no previous prototype"]


def test_make_check_has_a_row_per_arch_for_debian_s_config(monkeypatch):
    def resolve(arch):
        if arch == "arm64":
            raise LabError("config distro-config-arm64: ...: CONFIG_X dropped (...)")
        return Build(profile.load(arch), "patched", False, distro=True), 9.0
    monkeypatch.setattr(check.deb, "resolve", resolve)
    rep = check.Report()
    for arch in ("arm64", "x86_64"):
        check.check_distro_config(arch, rep)
    dc = base.load().distro_config
    (arm_label, arm), (x86_label, x86) = rep.rows
    assert arm_label == (f"check: Debian's arm64 config ({dc.package} {dc.version}) with "
                         "configs/common and arm64: olddefconfig keeps every option")
    assert (arm.status, arm.detail) == ("fail", "config distro-config-arm64: ...: CONFIG_X "
                                                "dropped (...)")
    assert x86.status == "pass" and x86.detail.startswith("9 s, ")
    assert rep.problems == [f"{arm_label}: config distro-config-arm64: ...: CONFIG_X dropped (...)"]
