"""Command-line interface: one module per command group, wired together in ``app``."""
