"""spec stage of the ktriage pipeline (see DESIGN.md)."""
