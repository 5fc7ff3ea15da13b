"""The input case of a catalog op. Sweeps live with their operator (``ktriage/ops/<op>.py``);
the type is ``ktriage.ops.inputs.InputCase``, named here too because the catalog's API returns it."""

from ktriage.ops.inputs import InputCase

__all__ = ["InputCase"]
