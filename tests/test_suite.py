"""make test's plan: which parts, waiting for what."""
from lab import profile, suite, testlist


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
