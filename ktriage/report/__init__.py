"""Reports of comparisons (markdown for CI job summaries, one self-contained HTML file, tables).

Rendering only: the results file format that carries runs between machines is
``ktriage.measure.results_file``, next to the cells it holds.
"""
