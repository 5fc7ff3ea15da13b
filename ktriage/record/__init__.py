"""Recorded workloads: ``ktriage record`` runs a program with a launch hook (ktriage/insitu/launch_hook.py)
and writes its kernels, inputs and source snapshots into a portable, versioned file (docs/record.md)."""
