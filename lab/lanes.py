"""Run make test's independent parts side by side.

make check, each arch's build and boots, touch separate trees and output
directories, and a TCG guest keeps only ~1.3 of the host's cores busy (the
vCPU thread of the selftest's nested guest plus the test's own threads), so
on two cores an arch's boots and another part overlap well. Within an arch
the boots stay in order: they share a kernel build and one console each.
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


def run(jobs: list, lanes: int) -> dict:
    """jobs: [(name, fn)] started in that order, at most lanes at once.
    Returns {name: fn()}; an exception of any job is raised here."""
    if lanes <= 1 or len(jobs) <= 1:
        return {name: fn() for name, fn in jobs}
    with ThreadPoolExecutor(max_workers=lanes) as pool:
        futures = [(name, pool.submit(fn)) for name, fn in jobs]
        return {name: fut.result() for name, fut in futures}
