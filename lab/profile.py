"""Per-architecture facts, as data: how to build the kernel and boot it in QEMU."""
import platform
from dataclasses import dataclass
from pathlib import Path

from lab import datafile, paths
from lab.datafile import Key, Table
from lab.progress import LabError


@dataclass(frozen=True)
class Profile:
    arch: str
    make_arch: str
    cross_compile: str
    target: str
    image: str
    debian_arch: str
    qemu_binary: str
    machine: str
    cpu: str
    smp: int
    memory: str
    console: str
    append: str

    def qemu_argv(self, kernel: Path, initrd: Path, cmdline: str,
                  extra: tuple[str, ...] = (), smp: int | None = None,
                  serial: str = "stdio", cpu: str = "") -> list[str]:
        append = " ".join(x for x in (f"console={self.console}", "panic=-1",
                                      "oops=panic", self.append, cmdline) if x)
        # -no-reboot turns the guest's reboot (and panic=-1's) into QEMU exiting.
        return [self.qemu_binary, "-M", self.machine, "-cpu", cpu or self.cpu,
                "-smp", str(smp or self.smp), "-m", self.memory, "-accel", "tcg",
                "-nodefaults", "-display", "none", "-serial", serial, "-no-reboot",
                *extra, "-kernel", str(kernel), "-initrd", str(initrd), "-append", append]


def arches() -> list[str]:
    return sorted(p.stem for p in paths.ARCH_PROFILES.glob("*.toml"))


# The file's keys are Profile's fields, [qemu] binary as qemu_binary.
FILE = Table({
    "kernel": Key(Table({k: Key(str) for k in ("make_arch", "cross_compile", "target", "image",
                                                "debian_arch")})),
    "qemu": Key(Table({"binary": Key(str), "machine": Key(str), "cpu": Key(str),
                       "smp": Key(int), "memory": Key(str), "console": Key(str),
                       "append": Key(str, "")}))})


def load(arch: str, directory: Path | None = None) -> Profile:
    f = (directory or paths.ARCH_PROFILES) / f"{arch}.toml"
    if not f.exists():
        raise LabError(f"unknown ARCH={arch}; known: {', '.join(arches())}")
    data = datafile.read(f, FILE)
    q = data["qemu"]
    return Profile(arch=arch, **data["kernel"], qemu_binary=q.pop("binary"), **q)


def host_arch() -> str:
    return {"x86_64": "x86_64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
