"""The one reader of the data files: TOML checked against the keys its user declares.

testlists/<base>/*.toml, bench/<base>/*.toml, lab/arch_profiles/*.toml,
bases/*.toml and patches/topics.toml are facts the harness acts on, and a
typo in one must stop it, not run another
experiment: a [[boot]] with `cmd_line =` would boot with no command line (the
TDP MMU where the legacy MMU was meant), `repeat = 3` in a scenario would run
the default 5. So each module that owns a file kind declares its tables here
(Table, Key), and an unknown key, a value of the wrong type or a missing key
is one line naming the file, the table and the key, with the closest valid
key when there is one:

    testlists/6.12/x86_64.toml: [[boot]] 'legacy': unknown key 'cmd_line' (did you mean 'cmdline'?)
"""
import difflib
import tomllib
from dataclasses import dataclass
from pathlib import Path

from lab import paths
from lab.progress import LabError

# A Key's default when the key must be given.
REQUIRED = object()


@dataclass(frozen=True)
class Key:
    # str, int, bool, dict (any table), a Table, [kind] (an array of them),
    # or a tuple of kinds (any of them).
    kind: object
    default: object = REQUIRED
    choices: tuple = ()          # the only values allowed, when not empty


@dataclass(frozen=True)
class Table:
    keys: dict
    # The key whose value names an entry of an array in messages ("[[boot]]
    # 'legacy'"); None: entries are numbered ("[[flaky]] #2").
    label_key: str | None = "name"


_NAMES = {str: "a string", int: "an integer", bool: "true or false", float: "a number",
          dict: "a table"}
_TOML_NAMES = {str: "a string", int: "an integer", bool: "a boolean", float: "a float",
               list: "an array", dict: "a table"}


def _fits(value, kind) -> bool:
    if isinstance(kind, tuple):
        return any(_fits(value, k) for k in kind)
    if isinstance(kind, list):
        return isinstance(value, list) and all(_fits(v, kind[0]) for v in value)
    if isinstance(kind, Table):
        return isinstance(value, dict)
    # TOML's true is a Python int too.
    if kind in (int, float) and isinstance(value, bool):
        return False
    return isinstance(value, kind)


def _name(kind) -> str:
    if isinstance(kind, tuple):
        return " or ".join(_name(k) for k in kind)
    if isinstance(kind, list):
        inner = _name(kind[0])
        return "an array of " + ("tables" if inner == "a table" else inner.split(" ", 1)[1] + "s")
    if isinstance(kind, Table):
        return "a table"
    return _NAMES[kind]


def closest(word, valid) -> str:
    """A message's hint: the valid word closest to word, as " (did you mean
    'x'?)", or nothing."""
    near = difflib.get_close_matches(str(word), [str(v) for v in valid], n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def label(array: str, entry, i: int, label_key: str | None = "name") -> str:
    """How messages name the i-th (from 1) entry of an array of tables."""
    return f"[[{array}]] {_entry(entry, i, label_key)}"


def _entry(entry, i: int, label_key: str | None) -> str:
    name = entry.get(label_key) if label_key and isinstance(entry, dict) else None
    return repr(name) if isinstance(name, str) else f"#{i}"


def check(data: dict, table: Table, origin: str, where: str = "", partial: bool = False) -> dict:
    """data checked against table, with the defaults of absent keys filled
    in, nested tables and arrays of tables checked alike. where names the
    table ("" for the file's top level). partial: a table of defaults for
    other tables (bench's [defaults]): nothing is required or filled in."""
    at = f"{origin}: {where}: " if where else f"{origin}: "
    for k in data:
        if k not in table.keys:
            raise LabError(f"{at}unknown key {k!r}{closest(k, table.keys)}")
    out = {}
    for k, key in table.keys.items():
        if k not in data:
            if partial:
                continue
            if key.default is REQUIRED:
                raise LabError(f"{at}missing key {k!r}")
            value = key.default
            # An absent table is an empty one: its own defaults apply.
            out[k] = (check(value, key.kind, origin, _inner(where, k), partial)
                      if isinstance(key.kind, Table) and isinstance(value, dict) else value)
            continue
        value = data[k]
        if not _fits(value, key.kind):
            raise LabError(f"{at}{k!r} must be {_name(key.kind)}, not "
                           f"{_TOML_NAMES.get(type(value), type(value).__name__)} ({value!r})")
        if key.choices and value not in key.choices:
            raise LabError(f"{at}{k!r} is {value!r}, not one of "
                           f"{', '.join(map(repr, key.choices))}{closest(value, key.choices)}")
        out[k] = _nested(value, key.kind, origin, where, k, partial)
    return out


def _inner(where: str, k: str) -> str:
    return f"{where}, {k}" if where else f"[{k}]"


def _nested(value, kind, origin: str, where: str, k: str, partial: bool):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    table = next((t for t in kinds if isinstance(t, Table)), None)
    if table and isinstance(value, dict):
        return check(value, table, origin, _inner(where, k), partial)
    array = next((t[0] for t in kinds if isinstance(t, list) and isinstance(t[0], Table)), None)
    if array and isinstance(value, list):
        return [check(v, array, origin,
                      f"{where}, {k} {_entry(v, i, array.label_key)}" if where
                      else label(k, v, i, array.label_key), partial)
                for i, v in enumerate(value, 1)]
    return value


def parse(text: str, table: Table, origin: str) -> dict:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LabError(f"{origin}: {e}") from e
    return check(data, table, origin)


def origin(path: Path) -> str:
    """A data file's name in messages: relative to the checkout if inside it."""
    try:
        return str(Path(path).resolve().relative_to(paths.ROOT))
    except ValueError:
        return str(path)


def read(path: Path, table: Table) -> dict:
    try:
        text = Path(path).read_text()
    except FileNotFoundError as e:
        raise LabError(f"{origin(path)} is missing") from e
    return parse(text, table, origin(path))
