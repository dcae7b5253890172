"""The guest's fixed files spell the LAB-* markers as lab/markers.py does."""
import re
from pathlib import Path

from lab import devloop, initramfs, markers

GUEST = Path(initramfs.__file__).parent / "guest"
# init, timeout, bash and the harness's own tests (guest/kvm/)
GUEST_FILES = sorted(f for f in GUEST.rglob("*") if f.is_file())
MARKER_RE = re.compile(r"LAB-[A-Z][A-Z-]*:?")


def printed(text: str) -> set[str]:
    return set(MARKER_RE.findall(text))


def test_the_guest_files_print_only_the_markers_of_the_module():
    for f in GUEST_FILES:
        unknown = printed(f.read_text()) - set(markers.ALL)
        assert not unknown, f"{f.name} prints {sorted(unknown)}: add them to lab/markers.py"


def test_every_marker_is_printed_by_the_guest_files_or_a_generated_script():
    guest = set().union(*(printed(f.read_text()) for f in GUEST_FILES))
    generated = printed(initramfs.RUN_TEST) | {markers.SCENARIO_BEGIN, markers.SCENARIO_END} \
        | printed(devloop.SHELL_SCRIPT.format(marker=markers.SHELL, boot="b"))
    assert set(markers.ALL) == guest | generated


def test_init_says_kvm_missing_as_the_judge_reads_it():
    assert f'echo "{markers.KVM_MISSING}"' in (GUEST / "init").read_text()
