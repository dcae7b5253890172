"""Run make test's independent parts side by side.

make check, each arch's build and boots, touch separate trees and output
directories. A TCG guest alone keeps ~1.2-1.6 of two cores busy (the vCPU
thread of the selftest's nested guest plus the test's own threads), so on
two cores another part can use the rest; side by side each guest gets
~0.7-1.1 cores and its tests take up to twice as long, which the test
timeouts must allow for (timeout_scale). Within an arch the boots stay in
order: they share a kernel build and one console each.
"""
import threading
from concurrent.futures import ThreadPoolExecutor

# Kernel and selftests builds each use every core: one at a time, so a build
# is as fast as alone and its log and progress lines are not interleaved
# with another build's.
BUILD_LOCK = threading.Lock()


def longest_first(parts: list, weight: dict) -> list:
    """parts (names) in the order to start them: the heaviest first, so the
    last to start is a light one and the lanes end close together. Ties keep
    their order."""
    return sorted(parts, key=lambda p: -weight.get(p, 0))


def timeout_scale(lanes: int, parts: int) -> int:
    """What to multiply test timeouts by when parts run at most lanes at
    once: the number of parts that share the machine. Measured on 2 cores:
    x86 dirty_log_test (256 MiB) 33 s alone, 74 s beside make check, and past
    its 150 s timeout beside a cold arm64 kernel build."""
    return max(1, min(lanes, parts))


def run(jobs: list, lanes: int) -> dict:
    """jobs: [(name, fn)] started in that order, at most lanes at once.
    Returns {name: fn()}; an exception of any job is raised here."""
    if lanes <= 1 or len(jobs) <= 1:
        return {name: fn() for name, fn in jobs}
    with ThreadPoolExecutor(max_workers=lanes) as pool:
        futures = [(name, pool.submit(fn)) for name, fn in jobs]
        return {name: fut.result() for name, fut in futures}
