"""The LAB-* lines the guest prints on its console, and the host reads.

One place for them: the scripts the harness generates (initramfs, bench,
devloop) use these constants; the fixed guest files in lab/guest/ spell them
out, and tests/test_markers.py checks that they spell them as here.
"""

# lab/guest/init
AGING = "LAB-AGING"                # what init set up for the aging tests
PANIC_CHECK = "LAB-PANIC-CHECK"    # lab.panic=1: init exits, the kernel panics
BOOT = "LAB-BOOT"                  # "LAB-BOOT <boot> <uname -r> <cmdline>": tests start
KVM = "LAB-KVM"                    # "LAB-KVM present" or KVM_MISSING
KVM_MISSING = f"{KVM} missing"
DONE = "LAB-DONE"                  # the boot script ended: the guest powers off next
ERROR = "LAB-ERROR"                # no boot script for lab.boot=

# lab/guest/timeout: a test past its time, with its threads' kernel stacks
HANG = "LAB-HANG:"

# initramfs.RUN_TEST: a failed test runs once more
RETRY = "LAB-RETRY"

# bench: one scenario's output lies between these two
SCENARIO_BEGIN = "LAB-SCENARIO-BEGIN"
SCENARIO_END = "LAB-SCENARIO-END"

# devloop.SHELL_SCRIPT: the shell is up
SHELL = "LAB-SHELL"

# Every marker, each once (KVM_MISSING is KVM with its argument).
ALL = (AGING, PANIC_CHECK, BOOT, KVM, DONE, ERROR, HANG, RETRY, SCENARIO_BEGIN,
       SCENARIO_END, SHELL)
