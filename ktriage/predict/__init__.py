"""The one cost model of ktriage (model.py): predicted time ratios of two toolchains' kernels from
their compile artifacts, calibrated on GPU-measured cells (calibration.py, dataset.py)."""
