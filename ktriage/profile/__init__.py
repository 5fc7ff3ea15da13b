"""``ktriage profile``: Nsight Compute counters of each toolchain's kernel from a bundle, diffed."""
