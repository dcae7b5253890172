"""Time dirty-log enable on several arm64 kernel Images, boots interleaved.

    PYTHONPATH=. python3 docs/experiments/enable_time.py --rounds 3 \
        --image vanilla=IMG --image skiplevel=IMG --image childskip=IMG \
        -- -g -k 1G -s anonymous_hugetlb_1gb -b 1G -v 1 -i 2 -w 0

Boots each Image once per round (the order reversed every other round),
runs dirty_log_perf_test of the patched non-debug build with the arguments
after "--" in every guest mode, and prints each "Enabling dirty logging
time" and a summary per Image. A one-off for questions that make bench's
vanilla/patched pairs cannot ask (a third kernel); see README.md.
"""
import argparse
import re
import statistics

from lab import initramfs, paths, profile, qemu
from lab.kernel import Build

ENABLE = re.compile(r"Enabling dirty logging time: (\d+\.\d+)s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--image", action="append", required=True, metavar="NAME=PATH")
    ap.add_argument("--cmdline", default="hugepagesz=1G hugepages=2")
    ap.add_argument("--budget", type=int, default=900, help="seconds per boot")
    ap.add_argument("args", nargs="+", help="dirty_log_perf_test arguments")
    opts = ap.parse_args()
    images = dict(i.split("=", 1) for i in opts.image)

    prof = profile.load("arm64")
    script = ("cd /kselftest/kvm\n./dirty_log_perf_test " + " ".join(opts.args)
              + "\necho \"LAB-RC $?\"\n")
    initrd = initramfs.pack(Build(prof, "patched", False), ["dirty_log_perf_test"], [],
                            {"q": script}, paths.BASE_BUILD / "initramfs-enable-time.cpio.gz",
                            "enable_time")
    times = {name: [] for name in images}
    failed = False
    for r in range(opts.rounds):
        for name in (list(images) if r % 2 == 0 else list(images)[::-1]):
            log = paths.LOGS / f"enable-time-{name}-{r}.log"
            con = qemu.run(prof.qemu_argv(images[name], initrd, f"lab.boot=q {opts.cmdline}"),
                           opts.budget, log, "LAB-DONE")
            got = [float(m[1]) * 1000 for ln in con.lines if (m := ENABLE.search(ln))]
            ok = con.outcome == "ended" and any(ln.startswith("LAB-RC 0") for ln in con.lines)
            failed |= not ok or not got
            times[name] += got
            print(f"round {r} {name}: {'ok' if ok else 'FAILED'} ({con.outcome}, log {log}), "
                  f"enable ms: " + " ".join(f"{t:.1f}" for t in got), flush=True)
    for name, t in times.items():
        if len(t) > 1:
            print(f"{name}: n={len(t)} mean {statistics.mean(t):.1f} ms, sd "
                  f"{statistics.stdev(t):.1f}, median {statistics.median(t):.1f}, "
                  f"min {min(t):.1f}, max {max(t):.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
