"""compare: loading two sides, pairing them, the report and its JSON."""
