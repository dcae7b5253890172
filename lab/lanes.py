"""Run make test's independent parts side by side.

make check, each arch's build and each of its boots touch separate trees,
output directories and logs. A TCG guest alone keeps ~1.2-1.6 of two cores
busy (the vCPU thread of the selftest's nested guest plus the test's own
threads), so on two cores another part can use the rest; side by side each
guest gets ~0.7-1.1 cores and its tests take up to twice as long, which the
test timeouts must allow for (timeout_scale).

The unit is a boot, not an arch: with arches as units, a lane that ended
early sat idle while the other ran its arch's last boots one after the other
(warm make test of 2026-11-23: one lane idle for the last 2.2 of 19.2 min).
A boot starts once its arch's build has ended; of the parts ready to start,
the one with the most work still behind it goes first, so the last parts to
start are light ones and the lanes end close together.
"""
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

# Kernel and selftests builds each use every core: one at a time, so a build
# is as fast as alone and its log and progress lines are not interleaved
# with another build's.
BUILD_LOCK = threading.Lock()


@dataclass(frozen=True)
class Part:
    name: str
    fn: Callable[[], object]
    weight: float = 0.0            # its expected share of the work (any unit)
    after: tuple[str, ...] = ()    # parts that must end before it starts


def work_behind(parts: list[Part]) -> dict[str, float]:
    """name -> its weight plus the heaviest chain of parts that wait for it."""
    waiting = {p.name: [q for q in parts if p.name in q.after] for p in parts}
    memo: dict[str, float] = {}

    on_path: set[str] = set()

    def chain(p: Part) -> float:
        if p.name in on_path:
            raise ValueError(f"parts {sorted(on_path)} wait on each other")
        if p.name not in memo:
            on_path.add(p.name)
            memo[p.name] = p.weight + max((chain(q) for q in waiting[p.name]), default=0.0)
            on_path.discard(p.name)
        return memo[p.name]
    return {p.name: chain(p) for p in parts}


def _first_to_start(ready: list[Part], behind: dict[str, float]) -> Part:
    """Of the ready parts, the one with the most work behind it; of ties,
    the first."""
    return max(ready, key=lambda p: behind[p.name])


def start_order(parts: list[Part]) -> list[str]:
    """The order in which one lane would start the parts: each time, of the
    parts whose `after` have ended, the one with the most work behind it;
    ties keep their order in parts."""
    behind = work_behind(parts)
    done: set[str] = set()
    order = []
    while len(order) < len(parts):
        ready = [p for p in parts if p.name not in done and set(p.after) <= done]
        nxt = _first_to_start(ready, behind)
        order.append(nxt.name)
        done.add(nxt.name)
    return order


def timeout_scale(lanes: int, parts: int) -> int:
    """What to multiply test timeouts by when parts run at most lanes at
    once: the number of parts that share the machine. Measured on 2 cores:
    x86 dirty_log_test (256 MiB) 33 s alone, 74 s beside make check, and past
    its 150 s timeout beside a cold arm64 kernel build."""
    return max(1, min(lanes, parts))


def run(parts: list[Part], lanes: int) -> dict:
    """Run every part, at most lanes at once, each as soon as its `after`
    have ended (by work_behind when several are ready). Returns
    {name: fn()}; an exception of any part is raised here, once the parts
    already started have ended."""
    names = [p.name for p in parts]
    unknown = {a for p in parts for a in p.after} - set(names)
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"parts {names}: unknown `after` {sorted(unknown)} or a name twice")
    behind = work_behind(parts)
    results: dict = {}
    pending = list(parts)
    running: dict = {}
    with ThreadPoolExecutor(max_workers=max(1, lanes)) as pool:
        while pending or running:
            ready = [p for p in pending if set(p.after) <= results.keys()]
            while ready and len(running) < max(1, lanes):
                nxt = _first_to_start(ready, behind)
                ready.remove(nxt)
                pending.remove(nxt)
                running[pool.submit(nxt.fn)] = nxt.name
            if not running:      # work_behind has ruled cycles out; never spin
                raise RuntimeError(f"parts {[p.name for p in pending]} cannot start")
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                name = running.pop(fut)
                err = fut.exception()
                if err is not None:
                    wait(running)
                    raise err
                results[name] = fut.result()
    return {n: results[n] for n in names}
