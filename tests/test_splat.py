from lab import splat

CONSOLE = """\
[    0.512345] kvm_amd: Nested Paging enabled
# selftests: kvm: dirty_log_test
# Test iterations: 3, interval: 10 (ms)
# WARNING: the test says this, not the kernel
[   12.100000] ------------[ cut here ]------------
[   12.100100] WARNING: CPU: 1 PID: 88 at arch/x86/kvm/mmu/tdp_mmu.c:530 handle_changed_spte+0x5a/0x70
[   12.100200] Modules linked in:
[   12.100300] Call Trace:
[   12.100400]  <TASK>
[   12.100500]  tdp_mmu_zap_leafs+0x10/0x20
ok 1 selftests: kvm: dirty_log_test
# selftests: kvm: demand_paging_test
[   20.000000] BUG: sleeping function called from invalid context at mm/memory.c:6000
ok 1 selftests: kvm: demand_paging_test
"""


def test_splats_are_found_grouped_and_named_by_test():
    found = splat.scan(CONSOLE.splitlines(keepends=True))
    assert [(s.test, s.line.split(" at ")[0]) for s in found] == [
        ("dirty_log_test", "WARNING: CPU: 1 PID: 88"),
        ("demand_paging_test", "BUG: sleeping function called from invalid context"),
    ]
    assert any("Call Trace:" in c for c in found[0].context)


def test_test_output_and_boot_messages_are_not_splats():
    text = "# WARNING: looks scary\n# BUG: in test output\nok 1 selftests: kvm: x\n"
    assert splat.scan(text.splitlines()) == []


def test_splat_before_any_test_is_blamed_on_boot():
    [s] = splat.scan(["[    1.0] rcu: INFO: rcu_sched self-detected stall on CPU\r\n"])
    assert s.test == "boot"


def test_every_kind_the_issue_names_is_caught():
    for line in ["WARNING: possible circular locking dependency detected",
                 "BUG: KASAN: slab-out-of-bounds in foo",
                 "Oops: general protection fault, probably for non-canonical address",
                 "Call Trace:",
                 "UBSAN: shift-out-of-bounds in arch/x86/kvm/mmu/mmu.c:100:5",
                 "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
                 "Unable to handle kernel paging request at virtual address 0"]:
        assert splat.scan([f"[    3.3] {line}"]), line
