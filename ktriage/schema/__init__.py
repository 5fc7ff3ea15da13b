"""The typed schemas of every file ktriage reads from outside (issue 11: validation at the edge).

One layer, below every reader: ``core`` turns bytes into typed objects (size limit, UTF-8, JSON/TOML
syntax, nesting depth, the schema) and every failure into a :class:`~ktriage.errors.KtriageError`
that names the file, the field path, what was wrong and the fix; ``results``, ``spec_toml``,
``bundle`` and ``bisect_state`` are the schemas of the formats, as msgspec Structs (the measurement
that chose msgspec over pydantic: benchmarks/hardening/README.md).

The readers (``ktriage.spec.toml_file``, ``ktriage.measure.results_file``, ``ktriage.workload.bundles.format``,
``ktriage.bisect.search``) convert the validated Structs into their own model objects; nothing above
this layer walks untyped ``dict``s of a file with ``isinstance``.
"""
