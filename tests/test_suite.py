"""make test's plan: which boots of which arch and base, which parts, waiting for what."""
import pytest

from lab import profile, suite, testlist
from lab.progress import LabError


def test_a_config_boot_waits_for_its_own_kernel(tmp_path):
    (tmp_path / "kasan.config").write_text("CONFIG_KASAN=y\n")
    tl = testlist.parse("""
[[boot]]
name = "tdp"
[[boot]]
name = "kasan-tdp"
config = "kasan"
[[boot]]
name = "kasan-shadow"
config = "kasan"
[[test]]
name = "aging_stress_test"
""", "x86_64", "t", configs=tmp_path)
    parts = suite.arch_parts(profile.load("x86_64"), tl, None, False, "patched", True)
    assert [(p.name, p.after) for p in parts] == [
        ("x86_64", ()), ("x86_64+kasan", ("x86_64",)), ("x86_64/tdp", ("x86_64",)),
        ("x86_64/kasan-tdp", ("x86_64+kasan",)), ("x86_64/kasan-shadow", ("x86_64+kasan",))]
    assert [p.name for p in suite.arch_parts(profile.load("x86_64"), tl, ["tdp"], False,
                                             "patched", True)] == [
        "x86_64", "x86_64/tdp"]


# Two bases' lists, as make test TEST_BOOT=... sees them: 7.3 has fewer boots.
HAVE = {"6.12": {"arm64": ["vhe", "nvhe", "split-thp"], "x86_64": ["tdp", "shadow"]},
        "7.3": {"arm64": ["vhe", "nvhe"], "x86_64": ["tdp", "shadow", "long"]}}
BOTH = ["6.12", "7.3"]


def test_without_test_boot_every_arch_runs_its_default_boots():
    assert suite.plan_boots(None, "7.3", BOTH, HAVE) == ({"arm64": None, "x86_64": None}, [])


def test_a_boot_of_one_base_only_skips_the_other_base_in_one_line():
    assert suite.plan_boots(["split-thp"], "6.12", BOTH, HAVE) == (
        {"arm64": ["split-thp"]},
        ["test: x86_64 skipped: testlists/6.12/x86_64.toml has none of the boots split-thp"])
    assert suite.plan_boots(["split-thp"], "7.3", BOTH, HAVE) == (
        {}, ["test: base 7.3 skipped: no list of testlists/7.3/ has boot split-thp "
             "(base 6.12 has it)"])


def test_a_base_runs_the_named_boots_it_has_and_says_which_it_has_not():
    plan, notes = suite.plan_boots(["long", "vhe", "split-thp"], "7.3", BOTH, HAVE)
    assert plan == {"arm64": ["vhe"], "x86_64": ["long"]}
    assert notes == ["test: base 7.3: no list of testlists/7.3/ has boot split-thp (base 6.12 "
                     "has it): not run here"]


def test_a_boot_no_base_of_the_run_has_is_an_error():
    with pytest.raises(LabError, match=r"^testlists/\{6.12,7.3\}/\{arm64,x86_64\}.toml: no boot "
                       r"shadw; did you mean shadow\? \(make list BASE=<base> shows a base's "
                       r"boots\)$"):
        suite.plan_boots(["tdp", "shadw"], "6.12", BOTH, HAVE)
    # make test BASE=7.3: 6.12's boot is not this run's, and the error says whose it is
    with pytest.raises(LabError, match=r"^testlists/7.3/\{arm64,x86_64\}.toml: no boot "
                       r"split-thp; base 6.12 has it \(BASE=6.12\) "):
        suite.plan_boots(["split-thp"], "7.3", ["7.3"], HAVE)
    # TEST_ARCH=arm64: only the arm64 lists count
    arm64 = {b: {"arm64": arches["arm64"]} for b, arches in HAVE.items()}
    with pytest.raises(LabError, match=r"^testlists/\{6.12,7.3\}/arm64.toml: no boot tdp"):
        suite.plan_boots(["tdp"], "6.12", BOTH, arm64)


def test_the_checkout_s_lists_give_each_base_s_boots():
    have = suite.boot_names(["6.12", "7.3"], ["x86_64", "arm64"])
    assert "split-thp" in have["6.12"]["arm64"] and "split-thp" not in have["7.3"]["arm64"]
    assert suite.plan_boots(["split-thp"], "7.3", ["6.12", "7.3"], have)[0] == {}


@pytest.mark.parametrize("full, variant, debug, packaged", [
    (True, "patched", True, True), (False, "patched", True, False),
    (True, "vanilla", True, False), (True, "patched", False, False)])
def test_a_full_run_packages_make_test_s_kernel(monkeypatch, full, variant, debug, packaged):
    """make test FULL=1: make deb CONFIG=test of each arch, after its build,
    a row of the arch's; not of another variant's tree or config."""
    tl = testlist.parse('[[boot]]\nname = "tdp"\n[[test]]\nname = "t"\n', "x86_64", "t")
    parts = suite.arch_parts(profile.load("x86_64"), tl, None, full, variant, debug)
    deb_parts = [p for p in parts if p.name == "x86_64+deb"]
    assert len(deb_parts) == packaged
    if not packaged:
        return
    assert deb_parts[0].after == ("x86_64",)
    built = []
    monkeypatch.setattr(suite.deb, "build", lambda arch, config: built.append((arch, config))
                        or [suite.paths.BASE_BUILD / "debs/x86_64-test/linux-image-1_amd64.deb"])
    (rep,) = deb_parts[0].fn()
    assert built == [("x86_64", "test")]
    assert rep.rows == [("x86_64: make deb CONFIG=test packages make test's kernel",
                         suite.ktap.Result("deb", "pass", "linux-image-1_amd64.deb"))]

    def fails(arch, config):
        raise LabError("deb deb-x86_64-test failed (exit 2); log: l\n    dpkg-checkbuilddeps: "
                       "error: Unmet build dependencies: libssl-dev")
    monkeypatch.setattr(suite.deb, "build", fails)
    (rep,) = deb_parts[0].fn()
    assert rep.rows[0][1].status == "fail"
    assert rep.problems == ["deb deb-x86_64-test failed (exit 2); log: l\n    "
                            "dpkg-checkbuilddeps: error: Unmet build dependencies: libssl-dev"]
