"""`ktriage occupancy` (placeholder: replaced by the occupancy module's owner)."""


def occupancy() -> None:
    """Occupancy calculator."""
