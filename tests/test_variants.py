"""bench/<base>/variants.toml: its errors, what each variant resolves to, and the
tree it makes (on a tiny stand-in for the kernel tree)."""
import subprocess

import pytest

from lab import kernel, paths, profile, scenarios, series, tree, variants
from lab.progress import LabError

SERIES = """\
# arm64-split-skip-level
arm64-split-skip-level/0001-KVM-arm64-Add-walk-flags.patch
arm64-split-skip-level/0002-KVM-arm64-Do-not-visit-level-3.patch
arm64-split-skip-level/0003-KVM-arm64-Fill-the-table.patch

# x86-lockless-aging
x86-lockless-aging/0001-KVM-Age-without-mmu_lock.patch
"""


@pytest.fixture
def dirs(tmp_path):
    """(patches/ with a series of four patch files, bench/ with before/ and
    one bench-only patch, configs/ with a kasan fragment)."""
    patches = tmp_path / "patches"
    for e in series.parse(SERIES):
        (patches / e.path).parent.mkdir(parents=True, exist_ok=True)
        (patches / e.path).write_text(f"{e.path}\n")
    (patches / "series").write_text(SERIES)
    bench = tmp_path / "bench"
    (bench / "before" / "split-on-fault").mkdir(parents=True)
    (bench / "before" / "split-on-fault" / "0001-zap-again.patch").write_text("zap\n")
    (bench / "broken").mkdir()
    (bench / "broken" / "aging-always-old.patch").write_text("old\n")
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "kasan.config").write_text("")
    return patches, bench, configs


def parse(text, dirs):
    patches, bench, configs = dirs
    return variants.parse(text, "bench/variants.toml", patches, bench / "before", configs,
                          bench / "broken")


def test_upto_is_the_series_through_that_patch_with_topics(dirs):
    patches = dirs[0]
    v = parse('[[variant]]\nname = "split-0002"\nwhy = "step 2"\n'
              'upto = "arm64-split-skip-level/0002-KVM-arm64-Do-not-visit-level-3.patch"\n',
              dirs)["split-0002"]
    assert v.patches == (
        (patches / "arm64-split-skip-level/0001-KVM-arm64-Add-walk-flags.patch",
         "arm64-split-skip-level"),
        (patches / "arm64-split-skip-level/0002-KVM-arm64-Do-not-visit-level-3.patch",
         "arm64-split-skip-level"))
    assert v.why == "step 2"


def test_patches_are_bench_only_files_under_before_without_a_topic(dirs):
    bench = dirs[1]
    v = parse('[[variant]]\nname = "before-split"\nwhy = "6.12 zapping again"\n'
              'patches = ["split-on-fault/0001-zap-again.patch"]\n', dirs)["before-split"]
    assert v.patches == ((bench / "before/split-on-fault/0001-zap-again.patch", ""),)


def test_breaks_go_on_top_of_the_whole_series(dirs):
    patches, bench, _ = dirs
    v = parse('[[variant]]\nname = "broken-old"\nwhy = "aging says old"\n'
              'upto = "series"\nbreaks = ["aging-always-old.patch"]\n', dirs)["broken-old"]
    assert [p for p, _ in v.patches] == [patches / e.path for e in series.load(patches)] + [
        bench / "broken/aging-always-old.patch"]
    assert v.patches[-1][1] == "" and v.patches[0][1] == "arm64-split-skip-level"


def test_no_file_no_variants(tmp_path):
    assert variants.load(tmp_path) == {}


V = '[[variant]]\nname = "{name}"\nwhy = "w"\n{rest}\n'
UPTO = 'upto = "arm64-split-skip-level/0001-KVM-arm64-Add-walk-flags.patch"'


@pytest.mark.parametrize("text, msg", [
    (V.format(name="x", rest='upto = "arm64-split-skip-level/0009-gone.patch"'),
     r"^bench/variants.toml: \[\[variant\]\] 'x': upto 'arm64-split-skip-level/0009-gone.patch' "
     r"is not in .*patches/series; its patches: 0001-KVM-arm64-Add-walk-flags.patch, "
     r"0002-KVM-arm64-Do-not-visit-level-3.patch, 0003-KVM-arm64-Fill-the-table.patch$"),
    (V.format(name="x", rest='upto = "arm64-split/0001-KVM-arm64-Add-walk-flags.patch"'),
     r"no topic 'arm64-split' there, its topics: arm64-split-skip-level, x86-lockless-aging$"),
    (V.format(name="x", rest='patches = ["split-on-fault/0002-nope.patch"]'),
     r"'x': patches: .*bench/before/split-on-fault/0002-nope.patch is not a file under "
     r".*bench/before/$"),
    (V.format(name="x", rest='patches = ["../../patches/series"]'), "is not a file under"),
    (V.format(name="x", rest=""), "give exactly one of 'upto'"),
    (V.format(name="x", rest=UPTO + '\npatches = ["split-on-fault/0001-zap-again.patch"]'),
     "give exactly one of 'upto'"),
    (V.format(name="x", rest='patches = []'), "give exactly one of 'upto'"),
    (V.format(name="x", rest='patches = ["split-on-fault/0001-zap-again.patch"]\n'
                             'breaks = ["aging-always-old.patch"]'),
     r"'breaks' goes on top of 'upto' \(e.g. upto = 'series', the whole series\)$"),
    (V.format(name="x", rest=UPTO + '\nbreaks = ["aging-always-young.patch"]'),
     r"'x': breaks: .*bench/broken/aging-always-young.patch is not a file under "
     r".*bench/broken/$"),
    ('[[variant]]\nname = "x"\n' + UPTO + "\n", r"\[\[variant\]\] 'x': missing key 'why'$"),
    ('[[variant]]\nname = "x"\nwhy = " "\n' + UPTO + "\n", "'why' is empty"),
    (V.format(name="x", rest=UPTO + '\nup_to = "y"'),
     r"'x': unknown key 'up_to' \(did you mean 'upto'\?\)$"),
    (V.format(name="patched", rest=UPTO), "are the built-in kernels"),
    (V.format(name="vanilla-lock", rest=UPTO), "are the built-in kernels"),
    (V.format(name="split-kasan", rest=UPTO), "would name the kasan build of another kernel"),
    (V.format(name="split-debug", rest=UPTO), "would name the debug build"),
    (V.format(name="Split Fill", rest=UPTO), "a name is lower case letters"),
    (V.format(name="x", rest=UPTO) + V.format(name="x", rest=UPTO), "the name is given twice"),
])
def test_bad_variants_are_refused(dirs, text, msg):
    with pytest.raises(LabError, match=msg):
        parse(text, dirs)


def test_the_reserved_names_are_kernel_pys():
    assert set(variants.RESERVED) == {*kernel.VARIANTS, kernel.CHECK}


def test_a_side_may_boot_a_declared_variant(dirs, monkeypatch):
    patches, bench, configs = dirs
    monkeypatch.setattr(paths, "PATCHES", patches)
    (bench / "variants.toml").write_text(V.format(name="split-0001", rest=UPTO))
    (bench / "t.toml").write_text(
        '[[scenario]]\nname = "s"\narch = "arm64"\ncommand = "c"\nmetrics = []\n'
        'sides = [ { label = "vanilla", kernel = "vanilla" }, '
        '{ label = "step 1", kernel = "split-0001" }, { label = "patched" } ]\n')
    [sc] = scenarios.load_all(bench, configs)
    assert [(s.label, s.variant) for s in sc.sides] == [
        ("vanilla", "vanilla"), ("step 1", "split-0001"), ("patched", "patched")]
    (bench / "variants.toml").unlink()
    with pytest.raises(LabError, match="'kernel' is 'split-0001', not one of 'vanilla', "
                                       "'patched'$"):
        scenarios.load_all(bench, configs)


def test_a_variants_kernel_builds_in_its_own_tree(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "BASE_BUILD", tmp_path)
    b = kernel.Build(profile.load("arm64"), "split-0002", debug=False)
    assert b.src == tmp_path / "variants" / "split-0002"
    assert b.out == b.src / ".out-arm64-split-0002"       # a direct subdirectory: ccache
    assert b.link == tmp_path / "arm64-split-0002"


# ---------------------------------------------------------------- the tree

def sh(cwd, *argv):
    return subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def source(tmp_path, monkeypatch):
    """(build/<base>/linux on a tiny base, patches/<base>/ with two patches of
    one topic)."""
    monkeypatch.setattr(paths, "BASE_BUILD", tmp_path / "build")
    base = tmp_path / "base"
    base.mkdir()
    (base / "f.c").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    t = tmp_path / "build" / "linux"
    tree.import_base(t, base, "test base")
    for n in (5, 15):
        (t / "f.c").write_text((t / "f.c").read_text().replace(f"line {n}\n", f"line {n}!\n"))
        sh(t, "git", "commit", "-qam", f"KVM: change line {n}\n\nTopic: kvm-topic\n")
    patches = tmp_path / "patches"
    tree.export(t, patches)
    return t, patches


def variant(patches, upto):
    text = f'[[variant]]\nname = "step"\nwhy = "w"\nupto = "kvm-topic/{upto}"\n'
    return variants.parse(text, "v.toml", patches, patches / "none")["step"]


def test_a_variant_tree_is_the_base_and_its_patches_made_once(source, capsys):
    t, patches = source
    v = variant(patches, "0001-KVM-change-line-5.patch")
    dest = variants.ensure(v, t)
    assert dest == paths.BASE_BUILD / "variants" / "step"
    assert sh(dest, "git", "log", "--format=%s", "base..HEAD").split("\n")[:-1] == [
        "KVM: change line 5"]
    assert "line 5!\n" in (dest / "f.c").read_text()
    assert "line 15!\n" not in (dest / "f.c").read_text()
    # the same commit as build/<base>/linux's first one, Topic: trailer and all
    assert (sh(dest, "git", "rev-parse", "HEAD^{tree}")
            == sh(t, "git", "rev-parse", "HEAD~1^{tree}"))
    capsys.readouterr()
    variants.ensure(v, t)
    assert "git am" not in capsys.readouterr().err          # same inputs: kept as it is
    whole = variant(patches, "0002-KVM-change-line-15.patch")
    variants.ensure(whole, t)
    assert "git am of 2 patch(es)" in capsys.readouterr().err
    assert "line 15!\n" in (dest / "f.c").read_text()


def test_a_patch_that_does_not_apply_leaves_no_tree_taken_as_good(source):
    t, patches = source
    p = patches / "kvm-topic/0002-KVM-change-line-15.patch"
    good = p.read_text()
    p.write_text(good.replace(" line 14\n", " line fourteen\n"))
    v = variant(patches, p.name)
    with pytest.raises(LabError) as e:
        variants.ensure(v, t)
    msg = str(e.value)
    assert msg.startswith("variant step: ")
    assert "kvm-topic/0002-KVM-change-line-15.patch does not apply: f.c: Hunk #1 FAILED" in msg
    assert "(git am: error: patch failed: f.c:" in msg
    dest = paths.BASE_BUILD / "variants" / "step"
    assert not (dest / ".git" / variants.STAMP).exists()
    assert not (dest / ".git" / "rebase-apply").exists()     # no am left in progress
    p.write_text(good)
    variants.ensure(v, t)                                   # made again, whole this time
    assert "line 15!\n" in (dest / "f.c").read_text()
