"""Failure isolation with real worker processes (CPU): crash, hang, errors, streaming."""

from __future__ import annotations

import os
import time
from typing import Any

from ktriage.measure.cells import Cell, CellKey
from ktriage.measure.isolate import IsolatedRunner, Job, classify_exception


class FakeStickyCudaError(RuntimeError):
    """Carries what ktriage.measure.driver.CudaError carries for a lost context."""

    sticky = True
    name = "CUDA_ERROR_ILLEGAL_ADDRESS"


def handler(payload: dict[str, Any], emit: Any) -> None:
    """Runs in the worker: emits one cell per key unless told to misbehave."""
    case = payload["case"]
    keys = [CellKey(**k) for k in payload["keys"]]
    if case == "ok":
        for k in keys:
            emit(
                Cell(
                    key=k,
                    status="ok",
                    samples_ms=[1.0, 1.1],
                    extra={"pid": os.getpid()},
                )
            )
    elif case == "crash":
        os._exit(7)
    elif case == "hang_after_first":
        emit(Cell(key=keys[0], status="ok", extra={"pid": os.getpid()}))
        time.sleep(600)
    elif case == "raise":
        raise ValueError("bad argument order")
    elif case == "sticky":
        raise FakeStickyCudaError("cuLaunchKernel failed")
    elif case == "silent":
        return


def key(i: int, label: str = "x") -> CellKey:
    return CellKey("layer_norm", "bwd", i, label, "liger_layer_norm", "tc")


def job(case: str, *keys: CellKey) -> Job:
    return Job(list(keys), {"case": case, "keys": [k.__dict__ for k in keys]})


def test_crash_hang_and_errors_cost_only_their_cells() -> None:
    streamed: list[Cell] = []
    with IsolatedRunner(handler, timeout_s=2.0, on_cell=streamed.append) as runner:
        cells = runner.run(
            [
                job("ok", key(0)),
                job("crash", key(1)),
                job("ok", key(2)),
                job("hang_after_first", key(3, "a"), key(3, "b"), key(3, "c")),
                job("ok", key(4)),
                job("raise", key(5)),
                job("ok", key(6)),
                job("sticky", key(7)),
                job("ok", key(8)),
                job("silent", key(9)),
            ]
        )
        started = runner.workers_started
    assert streamed == cells
    got = [(c.key.input_id, c.key.input_label, c.status) for c in cells]
    assert got == [
        (0, "x", "ok"),
        (1, "x", "error"),
        (2, "x", "ok"),
        (3, "a", "ok"),
        (3, "b", "timeout"),
        (3, "c", "timeout"),
        (4, "x", "ok"),
        (5, "x", "error"),
        (6, "x", "ok"),
        (7, "x", "error"),
        (8, "x", "ok"),
        (9, "x", "error"),
    ]
    by_id = {(c.key.input_id, c.key.input_label): c for c in cells}
    assert by_id[(1, "x")].error == "worker died (exit code 7) while measuring"
    assert by_id[(3, "b")].error == "timeout after 2 s"
    assert by_id[(3, "a")].status == "ok"  # measured before the hang: not lost
    assert "ValueError: bad argument order" in by_id[(5, "x")].error
    assert by_id[(7, "x")].error.startswith("CUDA_ERROR_ILLEGAL_ADDRESS")
    assert by_id[(9, "x")].error == "the job finished without measuring this cell"
    # Workers: first, after the crash, after the hang, after the sticky error; a plain exception keeps it.
    assert started == 4
    pid = {i: by_id[(i, "x")].extra["pid"] for i in (0, 2, 4, 6, 8)}
    assert pid[0] != pid[2] != pid[4]
    assert pid[4] == pid[6] != pid[8]


def test_handler_given_as_module_reference() -> None:
    with IsolatedRunner("tests.measure.test_isolate:handler", timeout_s=5.0) as runner:
        cells = runner.run_job(job("ok", key(0), key(1)))
    assert [c.status for c in cells] == ["ok", "ok"] and cells[0].samples_ms == [
        1.0,
        1.1,
    ]


def test_classify_names_the_cuda_error() -> None:
    text, sticky = classify_exception(FakeStickyCudaError("cuLaunchKernel failed"))
    assert sticky and text == "CUDA_ERROR_ILLEGAL_ADDRESS: FakeStickyCudaError: cuLaunchKernel failed"
    text, sticky = classify_exception(ValueError("x"))
    assert not sticky and text == "ValueError: x"


def slow_init(marker: str) -> None:
    """A worker init that takes a while (stands for importing torch and reading a bundle)."""
    time.sleep(1.0)
    with open(marker, "w") as f:
        f.write(str(os.getpid()))


def failing_init() -> None:
    from ktriage.errors import DeviceError

    raise DeviceError("no CUDA GPU is visible to the measurement worker", "run on the GPU machine")


def test_start_spawns_at_once_and_the_first_job_waits_for_the_init(tmp_path: Any) -> None:
    import functools

    marker = tmp_path / "init_done"
    runner = IsolatedRunner(handler, timeout_s=20, init=functools.partial(slow_init, str(marker)))
    t0 = time.monotonic()
    runner.start()
    assert time.monotonic() - t0 < 0.9  # start() does not wait for the 1 s init
    try:
        cells = runner.run_job(job("ok", key(0)))
        assert marker.exists() and cells[0].status == "ok"
        assert cells[0].extra["pid"] == int(marker.read_text())  # the init ran in the worker that measured
        cells = runner.run_job(job("ok", key(1)))
        assert cells[0].extra["pid"] == int(marker.read_text()) and runner.workers_started == 1
    finally:
        runner.close()


def test_an_init_failure_is_the_init_errors_problem_and_fix() -> None:
    import pytest

    from ktriage.errors import MeasureError

    runner = IsolatedRunner(handler, timeout_s=20, init=failing_init)
    runner.start()
    try:
        with pytest.raises(MeasureError) as info:
            runner.wait_started()
        assert "no CUDA GPU is visible" in info.value.problem and info.value.fix == "run on the GPU machine"
    finally:
        runner.close()
