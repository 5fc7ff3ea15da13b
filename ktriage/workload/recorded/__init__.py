"""Launches recorded from a real run, replayed on the GPU host.

``in_process`` records a backend's Triton launches in this process (the Python API; ``ktriage record``,
in ``ktriage.record``, records a whole program from outside). The rest replays a recorded workload:
``args`` plans each launch's arguments (pure), ``bundle`` compiles the workload into a bundle,
``replay`` allocates and launches with torch, ``check`` compares the outputs. The top of the workload's
sub-packages: it imports ``bundles`` and ``ops``.
"""
