"""kvm-mmu-series harness: base -> tree -> kernel -> selftests -> guest -> results."""
