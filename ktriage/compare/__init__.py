"""compare: two result sets (or the toolchains of one run) paired cell by cell, one verdict each.

The one home of a compare, used by ``ktriage compare``, ``triage``, the bench's toolchain summary
and the cost model's dataset:

- ``sides``: loading a side: a results file (ktriage's, or TritonBench's CSV/JSON) or a store run;
- ``pairing``: which cell pairs with which, the baseline check, the cliffs found along sweeps
  (``Comparison``), over the pure statistics of ``ktriage.stats`` (verdicts, intervals, cliffs);
- ``not_compared``: the cells no verdict covers, grouped by reason, for every renderer;
- ``quote``: the Nsight Compute counters of a compared cell, one line next to its verdict;
- ``report``: ``CompareReport``, the result, and its JSON, made in one place;
- ``run``: ``compare(old, new, ...) -> CompareReport``, the one call.

Nothing is imported here: ``import ktriage.compare`` stays free of numpy and scipy.
"""
