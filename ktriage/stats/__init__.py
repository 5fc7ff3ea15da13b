"""Statistics on raw timing samples: verdicts for pairs of sample sets (intervals, the U test),
cliffs along input sweeps, change points of a series. Pure functions on numbers: no GPU, no I/O.
Which cell is compared with which (two result sets, or a run's toolchains) is ``ktriage.compare``'s."""
