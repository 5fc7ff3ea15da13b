"""A run's provenance (date, GPU, driver, toolchain versions) as every report and message says it, a missing
value said in words.

Why one home, in the measure package (where ``RunInfo`` is): the store's "no run ... in the store" hint lists
recent runs and sits below the reports, and it wrote "?" for a GPU nobody recorded while ``runs list`` and
compare's run lines (``ktriage.report``) said "GPU not recorded"; ``runs show`` wrote "?" for a toolchain's
missing Triton or ptxas version. A "?" asks the reader a question the report can answer: the value is not
recorded (or, for a TritonBench file, not in the file)."""

from __future__ import annotations

from collections.abc import Mapping

from ktriage.measure.cells import RunInfo
from ktriage.measure.tritonbench_format import is_tritonbench_run

NOT_RECORDED = "not recorded"
"""What a report says for a value a ktriage run did not record (a toolchain's version, its GPU's driver)."""


def run_date_gpu(run: RunInfo) -> tuple[str, str, str]:
    """A side's run date, GPU and driver as a report prints them, each missing one said as such. A TritonBench
    file's run has only what its file says (the nightly JSON's ``benchmark_date`` and ``device``; a CSV or a
    flat ``--output-json``: neither; a driver: never), and a missing one reads "not in the file": compare printed
    the time of reading as the run's date and "?" for its GPU. A ktriage run without them (a results file or a
    store run whose ``run.gpu`` has no name: NVML and torch could not name the GPU, or the file was cut) reads
    "not recorded": "?" asked the reader a question the report could answer."""
    missing = "not in the file" if is_tritonbench_run(run) else NOT_RECORDED
    gpu = str(run.gpu.get("name") or "") if run.gpu else ""
    driver = str(run.gpu.get("driver") or "") if run.gpu else ""
    return run.created or f"date {missing}", gpu or f"GPU {missing}", driver or missing


def toolchain_name(record: Mapping[str, object]) -> str | None:
    """A run's toolchain record as data: its id, else its spec, else None (neither recorded: a run file cut
    or written by hand). JSON says null there; :func:`toolchain_text` says it in words."""
    name = record.get("id") or record.get("spec")
    return str(name) if name else None


def toolchain_text(record: Mapping[str, object]) -> str:
    """A toolchain as a report prints it: its id or spec, or "toolchain not recorded" ("?" asked the reader)."""
    return toolchain_name(record) or f"toolchain {NOT_RECORDED}"
