"""The executor interface without a cluster: the embedded local pool and the --cluster values."""

from __future__ import annotations

import os

import pytest

from ktriage.errors import KtriageError
from ktriage.execute import Job, LocalExecutor, open_executor
from ktriage.execute.select import cluster_address
from ktriage.testing import fake_timing_job


def test_local_executor_runs_jobs_in_order_and_reports_failures_as_results() -> None:
    seen: list[int] = []
    with LocalExecutor(2) as ex:
        results = ex.run(
            [Job("compile", pow, (2, 10)), Job("build", int, ("x",)), Job("timing", fake_timing_job, (["a", "b"], 3))],
            on_done=lambda i, _r: seen.append(i),
        )
    ok, bad, timing = results
    assert ok.ok and ok.value == 1024 and ok.placement is not None and ok.placement.node_id == "local"
    assert not bad.ok and "ValueError" in bad.error and not bad.lost
    assert (
        timing.value is not None and timing.value["pid"] == os.getpid() and set(timing.value["samples"]) == {"a", "b"}
    )
    assert sorted(seen) == [0, 1, 2]
    assert ex.slots("timing") == 1 and ex.slots("compile") == 2


def test_cluster_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KTRIAGE_CLUSTER", raising=False)
    assert cluster_address(None) is None and cluster_address("local") is None
    assert cluster_address("auto") == "auto" and cluster_address("ray://h:10001") == "ray://h:10001"
    assert cluster_address("10.0.0.1:6379") == "10.0.0.1:6379"
    monkeypatch.setenv("KTRIAGE_CLUSTER", "head:6379")
    assert cluster_address(None) == "head:6379" and cluster_address("local") is None  # the option wins
    with pytest.raises(KtriageError, match="not a cluster address"):
        cluster_address("nowhere")
    # A pasted URL (the dashboard's among them) and a mistyped ray:// were taken for a host named
    # "http://h" and refused as "Name or service not known" by the reachability probe.
    with pytest.raises(KtriageError, match="http:// is no scheme of a Ray head") as url:
        cluster_address("http://10.0.0.1:8265/")
    assert url.value.fix is not None and "--cluster 10.0.0.1:8265;" in url.value.fix
    for typo in ("ray:/10.0.0.1:6379", "ray://h:10001/x", "10.0.0.1:6379/", "a b:6379"):
        with pytest.raises(KtriageError, match="not a cluster address"):
            cluster_address(typo)
    assert isinstance(open_executor("local", workers=3), LocalExecutor)


def test_a_ray_client_address_without_ray_client_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--cluster ray://HOST:PORT` with plain `pip install ray` (no grpcio): Ray's "requires pip package
    `ray[client]`" came under the fix "start one with `ray start --head`". Refused first now, naming the
    package and the GCS port that needs none (the port here listens to nothing: no probe is reached)."""
    import sys

    monkeypatch.setitem(sys.modules, "grpc", None)  # grpcio not importable, as without ray[client]
    with pytest.raises(KtriageError) as refused:
        open_executor("ray://127.0.0.1:1", workers=1)
    assert "Ray Client" in refused.value.problem and "ray[client]" in refused.value.problem
    assert "pip install 'ray[client]'" in refused.value.fix and "HOST:PORT" in refused.value.fix


def test_the_local_pool_keeps_a_jobs_ktriage_error_whole_and_raises_it_unchanged() -> None:
    """This machine's pool: the job's own error comes back as raised (``job_error()`` names no node: it ran
    here), so a caller raises it as if it had called the job itself."""
    from ktriage.errors import MeasureError
    from ktriage.testing import fake_raising_job

    error = MeasureError("a FAKE measurement problem", "the FAKE fix")
    with LocalExecutor(1) as ex:
        (result,) = ex.run([Job("timing", fake_raising_job, (error,))])
    assert not result.ok and result.exception is error and result.job_error() is error
    assert "a FAKE measurement problem" in result.error
    (plain,) = LocalExecutor(1).run([Job("build", int, ("x",))])
    assert plain.exception is None and plain.job_error() is None  # no KtriageError: only its text
