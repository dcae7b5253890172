#!/bin/sh
# busybox's ash, which shellcheck knows as dash.
# shellcheck shell=dash
#
# aging_mmu_lock_test.sh [dirty_log_perf_test arguments]
#
# KVM ages guest memory without taking kvm->mmu_lock for write: x86 takes
# no lock (patches/x86-lockless-aging), arm64 takes its read side
# (patches/arm64-aging). 6.12 takes it for write once per page that the
# multi-gen LRU asks about. A harness test (lab/guest/kvm/, packed into the
# guest's kvm collection beside the selftests): it reads /proc/lock_stat,
# which a kvm selftest upstream would not, so it needs a kernel with
# CONFIG_LOCK_STAT (configs/lock-stat.config; the lock-stat-* boots).
#
# How it isolates the aging from everything else that takes mmu_lock:
# - a memstress VM populates its memory (dirty_log_perf_test, which 6.12
#   has too: the same check runs on the vanilla kernel), then its whole
#   process is stopped (SIGSTOP): no vCPU runs, so none faults, and no
#   thread of it makes an ioctl;
# - /proc/lock_stat is cleared, one multi-gen LRU aging pass runs over every
#   memcg (debugfs lru_gen, force_scan: every page table of the process is
#   walked, and KVM is asked about each present page), and lock_stat is read
#   right after. Every write acquisition of mmu_lock in that window is the
#   aging's, and there must be none.
# It is exact, with no threshold, and says why when it cannot be:
# - the pass must have asked KVM about at least every page of the test
#   memory (kvm_age_hva trace events, one per page asked about), else it
#   did not age the VM's memory and proves nothing;
# - lock_stat must be counting: the pass's own read acquisitions of the
#   VMM's mmap_lock are in it, and where the VM has rmaps (the legacy MMU,
#   shadow paging) reading its debugfs mmu_rmaps_stat takes mmu_lock for
#   write once, which lock_stat must count exactly;
# - a window in which something else invalidated guest memory
#   (kvm_unmap_hva_range) is not the aging's alone: it is tried again, up
#   to 3 windows.
# Exit codes as kselftest's: 0 pass, 1 fail, 4 skip (a kernel without
# lock_stat, the multi-gen LRU or KVM's trace events).

KSFT_SKIP=4
LOCK_STAT=/proc/lock_stat
LRU_GEN=/sys/kernel/debug/lru_gen
TRACE=/sys/kernel/tracing
WINDOWS=3
HOLDER=./dirty_log_perf_test
# -i: more iterations than any timeout allows; the test kills it when done.
ARGS=${*:-"-b 8M -v 2 -i 1000000"}
out=/tmp/aging_mmu_lock_test.$$
pid=
# What the test changes, put back as found at exit.
old_lock_stat=
old_tracing_on=

say() { echo "aging_mmu_lock_test: $*"; }
skip() { say "SKIP: $*"; exit "$KSFT_SKIP"; }
fail() {
	say "FAIL: $*"
	exit 1
}

cleanup() {
	if [ -n "$pid" ]; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	if [ -d "$TRACE/events/kvm" ]; then
		echo 0 > "$TRACE/events/kvm/kvm_age_hva/enable"
		echo 0 > "$TRACE/events/kvm/kvm_unmap_hva_range/enable"
		echo > "$TRACE/trace"
	fi
	[ -z "$old_tracing_on" ] || echo "$old_tracing_on" > "$TRACE/tracing_on"
	[ -z "$old_lock_stat" ] || echo "$old_lock_stat" > /proc/sys/kernel/lock_stat
	rm -f "$out"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# mmu_lock's acquisitions of one kind, W (write) or R (read), from
# /proc/lock_stat: "<class>:" (a class never taken for read), or
# "<class>-W:" and "<class>-R:", then con-bounces, contentions, four wait
# times, acq-bounces and acquisitions (the 9th field). Its contention
# points, further down, repeat the name without the colon.
acquisitions() {
	awk -v class="$1" -v kind="$2" '
		$1 == class ":" && kind == "W" { n += $9 }
		$1 == class "-" kind ":" { n += $9 }
		END { print n + 0 }' "$LOCK_STAT"
}

# "memcg node max_seq" for every memcg and node that lru_gen lists: a
# "memcg <id> <path>" line, " node <id>" lines, then one line per
# generation, the youngest (max_seq) last.
lru_gen_lruvecs() {
	awk '$1 == "memcg" { memcg = $2; node = ""; next }
	     $1 == "node" { node = $2; next }
	     node != "" && $1 ~ /^[0-9]+$/ { max[memcg " " node] = $1 }
	     END { for (k in max) print k, max[k] }' "$LRU_GEN"
}

# One aging pass of every lruvec: a new generation, with the anon LRU
# (can_swap, there is no swap) and a walk of every page table (force_scan).
age_everything() {
	lru_gen_lruvecs > "$out.lruvecs"
	while read -r memcg node seq; do
		echo "+ $memcg $node $seq 1 1" > "$LRU_GEN" ||
			fail "lru_gen refused '+ $memcg $node $seq 1 1'"
	done < "$out.lruvecs"
}

# 0: every thread stopped; 1: not yet; 2: one of them died (Z or X).
all_stopped() {
	for stat in /proc/"$pid"/task/*/stat; do
		state=$(sed 's/^.*) \(.\).*/\1/' "$stat" 2>/dev/null)
		case $state in T | t) ;; Z | X | "") return 2 ;; *) return 1 ;; esac
	done
}

# Waits of their own, well inside the test's timeout, so that a VM that
# hangs or dies says so instead of using the whole timeout.
POPULATE_SECONDS=90
STOP_SECONDS=20

[ -r "$LOCK_STAT" ] || skip "no $LOCK_STAT: the kernel lacks CONFIG_LOCK_STAT (configs/lock-stat.config)"
{ [ -w "$LRU_GEN" ] && [ -r /sys/kernel/mm/lru_gen/enabled ]; } ||
	skip "no multi-gen LRU (CONFIG_LRU_GEN, debugfs lru_gen)"
# LRU_GEN_MM_WALK (0x0002): the aging walks page tables and asks KVM.
[ $(($(cat /sys/kernel/mm/lru_gen/enabled) & 2)) -ne 0 ] ||
	skip "the multi-gen LRU does not walk page tables (lru_gen/enabled $(cat /sys/kernel/mm/lru_gen/enabled))"
[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE" 2>/dev/null
[ -d "$TRACE/events/kvm/kvm_age_hva" ] || skip "no KVM trace events in $TRACE"
[ -x "$HOLDER" ] || fail "no $HOLDER beside this script: the kvm selftests are not installed with it"
# lockdep turns itself off for good after its first splat: lock_stat then
# counts nothing, and zero write acquisitions would prove nothing.
debug_locks=$(awk '$1 == "debug_locks:" { print $2 }' /proc/lockdep_stats 2>/dev/null)
[ "$debug_locks" = 1 ] || fail "lockdep is off (debug_locks '$debug_locks' in /proc/lockdep_stats): lock_stat counts nothing"
old_lock_stat=$(cat /proc/sys/kernel/lock_stat)
echo 1 > /proc/sys/kernel/lock_stat
old_tracing_on=$(cat "$TRACE/tracing_on")

say "the VM: $HOLDER $ARGS"
# shellcheck disable=SC2086 # ARGS is a list of arguments
$HOLDER $ARGS > "$out" 2>&1 &
pid=$!
waited=0
while ! grep -q "Populate memory time" "$out"; do
	kill -0 "$pid" 2>/dev/null || { cat "$out"; pid=; fail "$HOLDER ended before populating its memory"; }
	[ "$waited" -lt "$POPULATE_SECONDS" ] ||
		{ cat "$out"; fail "$HOLDER did not populate its memory in $POPULATE_SECONDS s"; }
	sleep 1
	waited=$((waited + 1))
done
kill -STOP "$pid"
waited=0
while :; do
	all_stopped
	case $? in
	0) break ;;
	2) cat "$out"; fail "a thread of $HOLDER died after SIGSTOP" ;;
	esac
	[ "$waited" -lt "$STOP_SECONDS" ] || fail "$HOLDER's threads did not all stop in $STOP_SECONDS s"
	sleep 1
	waited=$((waited + 1))
done
vm=
for d in /sys/kernel/debug/kvm/"$pid"-*; do [ -d "$d" ] && vm=$d; done
[ -n "$vm" ] || fail "no debugfs directory of $HOLDER's VM in /sys/kernel/debug/kvm"
# The test memory, in host pages: each is a present PTE of the VMM that the
# pass must ask KVM about.
range=$(sed -n 's/.*guest physical test memory: \[\(0x[0-9a-f]*\), \(0x[0-9a-f]*\)).*/\1 \2/p' "$out")
page_kb=$(awk '$1 == "KernelPageSize:" { print $2; exit }' /proc/"$pid"/smaps)
{ [ -n "$range" ] && [ -n "$page_kb" ]; } ||
	fail "no 'guest physical test memory' line from $HOLDER, or no page size in its smaps"
pages=$(((${range#* } - ${range% *}) / (page_kb * 1024)))
grep -E "guest physical test memory|Populate memory time" "$out"
say "$HOLDER populated its memory ($pages pages of $page_kb KiB) and is stopped"

echo 1 > "$TRACE/events/kvm/kvm_age_hva/enable"
echo 1 > "$TRACE/events/kvm/kvm_unmap_hva_range/enable"

window=1
while :; do
	echo 0 > "$TRACE/tracing_on"
	echo > "$TRACE/trace"
	echo 1 > "$TRACE/tracing_on"
	echo 0 > "$LOCK_STAT"
	age_everything
	writes=$(acquisitions '&(kvm)->mmu_lock' W)
	reads=$(acquisitions '&(kvm)->mmu_lock' R)
	mmap_reads=$(acquisitions '&mm->mmap_lock' R)
	grep -F '&(kvm)->mmu_lock' "$LOCK_STAT" | grep -F ':'
	# The control: mmu_rmaps_stat takes mmu_lock for write once, if the VM
	# has rmaps (else it prints nothing and takes nothing).
	rmaps=$(cat "$vm/mmu_rmaps_stat" 2>/dev/null)
	control=$(($(acquisitions '&(kvm)->mmu_lock' W) - writes))
	echo 0 > "$TRACE/tracing_on"
	asked=$(grep -c ' kvm_age_hva:' "$TRACE/trace")
	unmaps=$(grep -c ' kvm_unmap_hva_range:' "$TRACE/trace")
	overrun=$(cat "$TRACE"/per_cpu/cpu*/stats | awk '$1 == "overrun:" { n += $2 } END { print n + 0 }')
	say "window $window: the aging pass asked KVM about $asked pages (the test memory has $pages) and took mmu_lock $writes times for write, $reads for read; $unmaps invalidations of guest memory"
	why=""
	if [ "$unmaps" -ne 0 ]; then
		why="$unmaps invalidations of guest memory ran in the window: its acquisitions are not the aging's alone"
	elif [ "$overrun" -ne 0 ]; then
		why="the trace buffer lost $overrun events"
	elif [ "$asked" -lt "$pages" ]; then
		why="the pass asked KVM about $asked pages, fewer than the test memory's $pages: it did not age the VM's memory"
	elif [ "$mmap_reads" -eq 0 ]; then
		why="lock_stat counted no read acquisition of mmap_lock by the pass's walk: is it counting?"
	elif [ -n "$rmaps" ] && [ "$control" -ne 1 ]; then
		why="reading mmu_rmaps_stat took mmu_lock for write once, lock_stat counted $control"
	fi
	if [ -z "$why" ]; then
		[ -n "$rmaps" ] && say "control: reading mmu_rmaps_stat took mmu_lock for write once, and lock_stat counted it"
		[ "$writes" -eq 0 ] ||
			fail "an aging pass took kvm->mmu_lock for write $writes times, asking KVM about $asked pages (the test memory has $pages): aging must not take mmu_lock for write"
		say "ok: aging took no write acquisition of mmu_lock"
		exit 0
	fi
	say "window $window proves nothing: $why"
	[ "$window" -lt "$WINDOWS" ] || fail "$WINDOWS windows, none of them an aging pass alone: $why"
	window=$((window + 1))
done
