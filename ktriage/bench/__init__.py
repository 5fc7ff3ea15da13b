"""bench: TritonBench-compatible operator runs (plan -> isolated worker per input -> store)."""
