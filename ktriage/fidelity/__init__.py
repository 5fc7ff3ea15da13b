"""JIT equivalence: is ktriage's artifact the kernel Triton's JIT would run? Checked on a CPU machine.

For every case (a launch described by values: catalog ops, real third-party kernels) and every
Triton version, ``harness`` runs Triton's real launch path with only the GPU driver faked
(insitu/jitrun.py), derives ktriage's own spec from what the JIT was launched with, compiles it
through ktriage's compiler, and compares what went into the compile (signature, constants,
attributes) and the cubin, byte for byte. ``cases`` lists the launches.
"""
