"""GPU measurement: launch artifacts and native backends, time them side by side, keep raw samples."""
