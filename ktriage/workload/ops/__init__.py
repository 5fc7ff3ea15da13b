"""Operators as ``ktriage bench`` runs them (TritonBench's contract): lookup and metrics (``opdef``), backends
(``backends``: native torch/Liger callables and the artifact replays' mechanics in ``artifacts``), and one
module of torch code per operator (``embedding``, ``layer_norm``, ``rope``) named by ``ktriage/ops/<op>.py``.

The lowest of the workload's sub-packages: ``bundles`` and ``recorded`` import it, never the reverse
(an import-linter contract keeps it so).
"""
