"""GPU measurement: launch artifacts and native backends, time them side by side, keep raw samples.

Also the results file (``results_file``): a run's cells as the JSON that goes from the GPU host to
the machine that compares them.
"""
