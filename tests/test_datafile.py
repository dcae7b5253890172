"""The one loader of the data files: every shipped file loads, every kind
refuses a typo in one line (the kinds' own typos: test_testlist, test_bench,
test_base)."""
import pytest

from lab import base, datafile, paths, profile, scenarios, testlist
from lab.datafile import Key, Table
from lab.progress import LabError


def test_every_shipped_data_file_loads():
    lists = sorted(paths.TESTLISTS.glob("*.toml"))
    assert lists and all(testlist.load(f.stem).boots for f in lists)
    assert scenarios.load_all()
    assert profile.arches() and all(profile.load(a).qemu_binary for a in profile.arches())
    assert len(base.load().sha256) == 64


PROFILE = (paths.ARCH_PROFILES / "x86_64.toml").read_text()


@pytest.mark.parametrize("edit, msg", [
    (("smp = 2", "smpp = 2"),
     r"^lab/arch_profiles/x86_64.toml: \[qemu\]: unknown key 'smpp' \(did you mean 'smp'\?\)$"),
    (('cpu = "max"\n', ""), r"^lab/arch_profiles/x86_64.toml: \[qemu\]: missing key 'cpu'$"),
    (("smp = 2", 'smp = "2"'), r"\[qemu\]: 'smp' must be an integer, not a string \('2'\)$"),
    (("[kernel]", "[kernal]"), r"x86_64.toml: unknown key 'kernal' \(did you mean 'kernel'\?\)$"),
])
def test_a_bad_arch_profile_is_one_line_not_a_key_error(tmp_path, monkeypatch, edit, msg):
    d = tmp_path / "lab" / "arch_profiles"
    d.mkdir(parents=True)
    (d / "x86_64.toml").write_text(PROFILE.replace(*edit))
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    with pytest.raises(LabError, match=msg):
        profile.load("x86_64", d)


T = Table({"n": Key(int, 1), "flag": Key(bool, False), "names": Key((str, [str]), []),
           "sub": Key(Table({"size": Key(str, "x")}), {})})


def test_defaults_fill_in_nested_tables_too():
    assert datafile.parse("", T, "f") == {"n": 1, "flag": False, "names": [], "sub": {"size": "x"}}
    assert datafile.parse('names = "a"', T, "f")["names"] == "a"


@pytest.mark.parametrize("text, msg", [
    ("n = true", r"^f: 'n' must be an integer, not a boolean \(True\)$"),
    ("flag = 1", r"^f: 'flag' must be true or false, not an integer \(1\)$"),
    ("names = [1]", r"^f: 'names' must be a string or an array of strings, not an array"),
    ("[sub]\nsiez = 1", r"^f: \[sub\]: unknown key 'siez' \(did you mean 'size'\?\)$"),
    ("zzz = 1", r"^f: unknown key 'zzz'$"),
    ("n = ", r"^f: "),
])
def test_wrong_types_and_unknown_keys_are_one_line(text, msg):
    with pytest.raises(LabError, match=msg):
        datafile.parse(text, T, "f")
