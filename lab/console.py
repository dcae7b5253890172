"""A boot's console, read once into what every judge of the boot looks at.

qemu.run captures the lines; read() parses them once (ktap.runs, splat.scan
and the LAB-* markers) into a Reading, which testrun's judges (judge_boot,
unexplained_end, known_crash, resume_point) share instead of each scanning
the console again.
"""
from dataclasses import dataclass

from lab import ktap, markers, qemu, splat


@dataclass(frozen=True)
class Reading:
    con: qemu.Console                # outcome, return code, time, tail
    lines: tuple[str, ...]           # ktap.clean of each console line
    runs: dict                       # test basename -> [ktap.Run], console order
    splats: tuple                    # splat.Splat, console order
    panicked: bool                   # "Kernel panic" anywhere
    booted: bool                     # init's LAB-BOOT line: the tests started
    kvm_missing: bool                # init found no /dev/kvm


def read(con: qemu.Console) -> Reading:
    lines = tuple(ktap.clean(ln) for ln in con.lines)
    return Reading(
        con=con, lines=lines, runs=ktap.runs(con.lines), splats=tuple(splat.scan(con.lines)),
        panicked=any("Kernel panic" in ln for ln in con.lines),
        booted=any(ln.startswith(markers.BOOT) for ln in lines),
        kvm_missing=any(ln.startswith(markers.KVM_MISSING) for ln in con.lines))
