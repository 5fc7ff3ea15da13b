"""A cell's latency across stored runs, with the change points Apache Otava finds in it (``ktriage history``)."""
