"""Timing jobs go only to the node that declares a GPU; compile/build jobs to CPU slots (real Ray cluster)."""

from __future__ import annotations

import os

import pytest

from ktriage.execute import Job
from ktriage.execute.ray_backend import RayExecutor
from ktriage.testing import fake_timing_job


def test_timing_jobs_run_only_on_the_gpu_node_in_one_process(ray_cluster) -> None:
    with RayExecutor(ray_cluster.address) as ex:
        nodes = {n["node_id"]: n["resources"] for n in ex.nodes()}
        gpu_nodes = [nid for nid, res in nodes.items() if res.get("gpu_slot")]
        assert len(gpu_nodes) == 2 and len(nodes) >= 4
        assert ex.slots("timing") == 2 and ex.slots("compile") >= 4
        jobs = [Job("timing", fake_timing_job, (["triton==3.3.1", "triton==3.4.0"], 6, seed)) for seed in range(4)]
        results = ex.run(jobs)
    assert all(r.ok for r in results), [r.error for r in results]
    for r in results:
        assert r.placement is not None and r.value is not None
        assert r.placement.node_id in gpu_nodes  # placed only on a node that declares gpu_slot
        assert r.placement.pid != os.getpid() and r.placement.hostname
        assert r.value["pid"] == r.placement.pid  # every variant of the comparison timed in that one process
        assert set(r.value["samples"]) == {"triton==3.3.1", "triton==3.4.0"}


def test_jobs_with_one_key_run_once_and_failures_come_back_as_results(ray_cluster) -> None:
    with RayExecutor(ray_cluster.address) as ex:
        jobs = [
            Job("compile", os.getpid, (), key="same"),
            Job("compile", os.getpid, (), key="same"),
            Job("build", int, ("not a number",)),
        ]
        a, b, bad = ex.run(jobs)
    assert a.ok and b.ok and a.value == b.value and a.placement == b.placement
    assert not bad.ok and not bad.lost and "ValueError" in bad.error


def test_the_executor_names_the_cluster_ray_joined(ray_cluster) -> None:
    """``--cluster auto`` joins whatever cluster Ray finds on the machine; the compile step's progress line
    says which one (the address Ray resolved) and how many nodes it has."""
    from ktriage.explain.session import compiling_label

    with RayExecutor(ray_cluster.address) as ex:
        label = compiling_label(ex)
        nodes = len(ex.nodes())
    port = ray_cluster.address.rsplit(":", 1)[1]
    assert label.startswith("compiling on the Ray cluster at ") and port in label, label
    assert f"({nodes} nodes)" in label and nodes >= 2
    assert compiling_label(None) == "compiling"


def test_a_timing_job_without_a_gpu_node_is_refused_with_the_fix(ray_cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    from ktriage.errors import KtriageError

    with RayExecutor(ray_cluster.address) as ex:
        monkeypatch.setattr(ex, "resources", lambda: {"CPU": 3.0})
        with pytest.raises(KtriageError, match="no GPU node"):
            ex.gpu_request()


def test_a_job_whose_node_is_unfit_runs_on_another_and_fails_only_where_no_node_is_fit(ray_cluster) -> None:
    """A compile job on a node that cannot build its toolchain (NodeUnfit, here a FAKE job raising it on the
    nodes it is given): the cell failed, though the rest of the cluster could compile it, under the node's
    "not on the package index" and the fix "pick an existing version". Now the job moves to a node not yet
    found unfit; with none left it fails at once (no task waits for a node forever), naming every node."""
    from ktriage.testing import fake_unfit_job

    with RayExecutor(ray_cluster.address) as ex:
        cpu_nodes = sorted(n["node_id"] for n in ex.nodes() if n["resources"].get("CPU", 0) >= 1)
        fit, unfit = cpu_nodes[0], tuple(cpu_nodes[1:])
        moved = ex.run([Job("compile", fake_unfit_job, (unfit,), key=f"k{i % 2}") for i in range(4)])
        nowhere = ex.run([Job("compile", fake_unfit_job, (tuple(cpu_nodes),))])
    assert all(r.ok and r.value == fit for r in moved), [(r.value, r.error) for r in moved]
    assert {r.placement.node_id for r in moved if r.placement} == {fit}
    (failed,) = nowhere
    assert not failed.ok and not failed.lost and failed.value is None
    assert failed.error.startswith("no node of the cluster can run it (")
    assert all(f"node {n[:12]}" in failed.error for n in cpu_nodes), failed.error
    assert "a FAKE reason" in failed.error and "(fix: build it on that node)" in failed.error


def test_a_node_that_refused_a_jobs_needs_gets_no_more_of_them_and_is_named_once(
    ray_cluster, tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    """A node that cannot install a bisect's toolchain wheel refused a candidate only after building it,
    and the refusal was not remembered: every later candidate it drew was built there and refused again.
    Now a node that refused a job another node then ran is sent no more jobs with the same needs for
    the executor's life, and a warning says once which node refused what and why. A job that EVERY node
    refuses (a candidate's own broken wheel) makes no node remembered. (FAKE job, real Ray: each run of
    the job writes its node to a log, so "not sent there" is what the nodes did, not what the driver says.)"""
    import logging

    from ktriage.testing import fake_unfit_job

    caplog.set_level(logging.WARNING, logger="ktriage.execute")
    needs = "triton={checkout}/dist/*.whl"
    with RayExecutor(ray_cluster.address) as ex:
        cpu_nodes = sorted(n["node_id"] for n in ex.nodes() if n["resources"].get("CPU", 0) >= 1)
        fit = ray_cluster.node_ids()["cpu"]  # a worker: Ray starts a driver's tasks on the head first
        others = tuple(n for n in cpu_nodes if n != fit)
        first, second = tmp_path / "round1.log", tmp_path / "round2.log"
        # round 1: one job per CPU of the cluster, at once: all but one start on a node that refuses them
        round1 = ex.run([Job("build", fake_unfit_job, (others, str(first)), needs=needs) for _ in cpu_nodes])
        refused = set(first.read_text().split()) - {fit}
        # round 2: a job that every node refuses; the ones refused in round 1 are not even tried
        (round2,) = ex.run([Job("build", fake_unfit_job, (tuple(cpu_nodes), str(second)), needs=needs)])
        # round 3: a job only the last node tried in round 2 can run: round 2 left nothing new remembered
        tried = second.read_text().split()
        last = tried[-1]
        (round3,) = ex.run([Job("build", fake_unfit_job, (tuple(n for n in cpu_nodes if n != last),), needs=needs)])
        # other needs: only the nodes remembered for ``needs`` can run it, and do
        only_refused = tuple(n for n in cpu_nodes if n not in refused)
        (other_needs,) = ex.run([Job("build", fake_unfit_job, (only_refused,), needs="triton==3.4.0")])
    assert all(r.ok and r.value == fit for r in round1), [(r.value, r.error) for r in round1]
    assert refused, "no round-1 job started on a node that refuses it"
    assert refused.isdisjoint(tried) and fit in tried  # not sent again where refused, tried where not
    assert not round2.ok and round2.unfit and round2.error.startswith("no node of the cluster can run it (")
    for node in refused:  # the skip still names every node, the remembered ones with their earlier refusal
        assert f"node {node[:12]} on " in round2.error
    assert round2.error.count("refused an earlier job of this run: ") == 1, round2.error  # said once for them all
    assert round3.ok and round3.value == last, round3.error
    assert other_needs.ok and other_needs.value in refused, other_needs.error
    warnings = [r.getMessage() for r in caplog.records if r.name == "ktriage.execute" and needs in r.getMessage()]
    assert len(warnings) == len(refused), warnings  # once per node, though later jobs met it again
    for node in refused:
        (said,) = [w for w in warnings if w.startswith(f"node {node[:12]} on ")]
        assert f"refused a job needing {needs}: cannot build the toolchain triton==0.0 here (a FAKE reason)" in said
        assert said.endswith(
            f"sends that node no more jobs needing {needs} (jobs needing another toolchain still go there)"
            " (fix: build it on that node)"
        ), said


def test_a_job_whose_every_node_is_remembered_unfit_fails_at_once_sent_nowhere(ray_cluster, tmp_path) -> None:
    """Where every node left was remembered unfit for a job's needs (seeded here through the executor's own
    ``_remember``), the job fails at once naming them, the same reason said once: sent with a selector no
    node matches, it would wait for one forever."""
    from ktriage.execute.base import Placement
    from ktriage.execute.ray_backend import _Unfit
    from ktriage.testing import fake_unfit_job

    log = tmp_path / "ran.log"
    with RayExecutor(ray_cluster.address) as ex:
        cpu_nodes = [n["node_id"] for n in ex.nodes() if n["resources"].get("CPU", 0) >= 1]
        ex._remember("triton==9.9", [(Placement(n, "h", 0), _Unfit("a FAKE refusal", None)) for n in cpu_nodes])
        (nowhere,) = ex.run([Job("build", fake_unfit_job, ((), str(log)), needs="triton==9.9")])
        (elsewhere,) = ex.run([Job("build", fake_unfit_job, ((), str(log)), needs="triton==3.4.0")])
    assert not nowhere.ok and nowhere.unfit and elsewhere.ok
    assert log.read_text().split() == [elsewhere.value]  # the first job ran nowhere
    assert all(f"node {n[:12]} on h" in nowhere.error for n in cpu_nodes)
    assert nowhere.error.count("refused an earlier job of this run: a FAKE refusal") == 1, nowhere.error


def test_a_port_of_the_cluster_that_is_no_gcs_is_refused_at_once_in_one_line(ray_cluster, toolchain, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`--cluster HOST:PORT` with a worker node's port (its raylet answers gRPC, so the TCP and HTTP/2 probe
    passed): ray.init retried it for 20 s, printed Ray's C++ warnings and said "start one with `ray start
    --head`" while the head ran. Refused now by one GCS connection, naming the GCS port to give."""
    import subprocess
    import sys

    from ktriage.errors import KtriageError

    wrong = f"127.0.0.1:{ray_cluster.workers['cpu']}"
    with pytest.raises(KtriageError, match="no Ray head's GCS port") as refused:
        RayExecutor(wrong)
    assert refused.value.fix is not None and "ray start --head" in refused.value.fix
    toolchain("triton==3.4.0")
    proc = subprocess.run(
        [sys.executable, "-m", "ktriage", "explain", "liger.layer_norm", "-i", "0", "-t", "triton==3.4.0"]
        + ["--cluster", wrong],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: cannot connect to the Ray cluster at {wrong}: the port answers"), proc.stderr
    assert "gcs_client.cc" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_jobs_ktriage_error_comes_back_from_the_node_with_its_fix_not_as_a_lost_node(ray_cluster) -> None:
    """A timing job that raises ``CudaError`` on its GPU node (here a FAKE job raising the real class): Ray
    pickles the error back, and Python's own reduction could not rebuild this class (its ``__init__`` takes the
    call, name and code), so Ray answered "failed to deserialize exception": the executor reported the job lost
    after 3 retries, the pinned worker marked itself lost and failed every later call of the measurement, and
    the error's fix never arrived. Now the job failed, with its problem and fix; the pinned worker lives on."""
    from ktriage.measure.driver import CudaError
    from ktriage.testing import fake_raising_job, fake_timing_job

    error = CudaError("cuLaunchKernel", "CUDA_ERROR_OUT_OF_MEMORY", 2)
    with RayExecutor(ray_cluster.address) as ex:
        (failed,) = ex.run([Job("timing", fake_raising_job, (error,))])
        worker = ex.pinned_worker("timing")
        try:
            pinned = worker.call(fake_raising_job, (error,))
            after = worker.call(fake_timing_job, (["a", "b"], 4, 0))
        finally:
            worker.close()
    for result in (failed, pinned):
        assert not result.ok and not result.lost, result.error
        assert result.error.startswith("CudaError: cuLaunchKernel failed: CUDA_ERROR_OUT_OF_MEMORY (2)"), result.error
        assert f"fix: {error.fix}" in result.error, result.error
    assert after.ok, after.error  # the worker that raised is not taken for lost: the measurement goes on


def test_a_jobs_ktriage_error_comes_back_whole_with_the_node_and_is_raised_as_its_own(ray_cluster) -> None:
    """The executor kept only the text of a job's KtriageError ("SpecError: bad ...\n  fix: ..."), so a caller
    could only wrap it: the job's fix ended up inside the wrapper's problem, under the wrapper's generic fix.
    Now the result carries the error itself (``exception``), for both a task (two jobs with one key: each
    result) and a pinned worker, and ``job_error()`` is that error, of its class, with its fix, its problem
    and fix in both spellings (a ``Worded`` option), its problem naming the node it ran on."""
    from ktriage.errors import SpecError, in_flags, worded
    from ktriage.testing import fake_raising_job

    problem = worded(lambda o: f"a FAKE spec with {o('limit', '--limit', 0)}")
    fix = worded(lambda o: f"give {o('limit', '--limit', 5)}")
    error = SpecError(problem, fix, "the details")
    with RayExecutor(ray_cluster.address) as ex:
        nodes = set(ray_cluster.node_ids().values())
        one, same = ex.run([Job("compile", fake_raising_job, (error,), key="k")] * 2)
        worker = ex.pinned_worker("timing")
        try:
            pinned = worker.call(fake_raising_job, (error,))
        finally:
            worker.close()
    for result in (one, same, pinned):
        assert not result.ok and not result.lost and result.placement is not None, result.error
        assert result.placement.node_id in nodes
        assert isinstance(result.exception, SpecError) and result.exception.problem == problem, result.exception
        raised = result.job_error()
        assert type(raised) is SpecError
        where = f" (on node {result.placement.node_id[:12]} on {result.placement.hostname})"
        assert str(raised.problem) == f"{problem}{where}" and in_flags(raised.problem) == f"{problem.flags}{where}"
        assert raised.fix == fix and in_flags(raised.fix) == fix.flags and raised.details == "the details"
        assert str(raised).startswith(f"{problem}{where}\n  fix: {fix}\n"), str(raised)
        assert result.exception.problem == problem  # the result's own error is left as the job raised it
        assert result.error.startswith(f"SpecError: {problem}\n  fix: {fix}"), result.error


def test_jobs_of_a_round_queued_before_a_nodes_first_refusal_are_not_sent_there_after_it(ray_cluster, tmp_path) -> None:
    """A round of more jobs than the cluster has CPUs, with one node that refuses their needs (the head: Ray
    starts a driver's tasks there first). The round's jobs were all sent at once, so each time the head came
    free after a refusal (at once) Ray gave it the next queued job, which refused there too: every job that
    landed there was built first (a bisect candidate) and failed once, and the node was remembered only for
    later rounds. Now the jobs not yet started when the node first refused are sent with it excluded: it
    runs one of them. In a round where a job EVERY node refuses makes every node suspect (a candidate's
    broken wheel), the other jobs still run where they can. (FAKE job, real Ray: each run writes its node.)"""
    from ktriage.testing import fake_unfit_job

    with RayExecutor(ray_cluster.address) as ex:
        ids = ray_cluster.node_ids()
        head = ids["head"]
        cpu_nodes = sorted(n["node_id"] for n in ex.nodes() if n["resources"].get("CPU", 0) >= 1)
        log = tmp_path / "round.log"
        jobs = [Job("build", fake_unfit_job, ((head,), str(log), 1.0), needs="triton==9.1") for _ in range(9)]
        results = ex.run(jobs)
        ran = log.read_text().split()
        broken_log, others_log = tmp_path / "broken.log", tmp_path / "others.log"
        broken = Job("build", fake_unfit_job, (tuple(cpu_nodes), str(broken_log)), needs="triton==9.2")
        others = [Job("build", fake_unfit_job, ((head,), str(others_log), 1.0), needs="triton==9.2") for _ in range(4)]
        failed, *fine = ex.run([broken, *others])
    assert all(r.ok and r.value != head for r in results), [(r.value, r.error) for r in results]
    assert len(ran) == 10 and ran.count(head) == 1, ran  # nine jobs, and the one the head refused once
    assert not failed.ok and failed.unfit and all(f"node {n[:12]}" in failed.error for n in cpu_nodes), failed.error
    assert all(r.ok and r.value != head for r in fine), [(r.value, r.error) for r in fine]
    assert sorted(broken_log.read_text().split()) == cpu_nodes  # tried once on each node, as before
