"""Bisect: find the first bad toolchain, release or commit (sources, predicates, search, reports).

The shared types are in ``ktriage.bisect.candidate``; import submodules directly (kept free of
imports here so that ``model`` loads without toolchain or GPU dependencies).
"""
