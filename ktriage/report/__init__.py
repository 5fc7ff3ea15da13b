"""Reports of comparisons (markdown for CI job summaries, one self-contained HTML file) and the
results file format that carries runs between machines."""
