"""Statistics on raw timing samples: verdicts for pairs of sample sets, cliffs along input sweeps,
and the comparison of two result sets. Pure functions on numbers: no GPU, no I/O."""
