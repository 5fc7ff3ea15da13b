"""A test cluster's teardown (``Cluster.stop``, what the ``ray_cluster`` fixture runs) leaves no process of it
running, checked from outside the teardown's own bookkeeping (real Ray on 127.0.0.1).

The cluster is started by a probe process that is a child subreaper (``PR_SET_CHILD_SUBREAPER``): every
process the cluster starts, whatever its parent and however it retitles itself, stays a descendant of the
probe, so what runs under the probe after the teardown is exactly what the teardown left behind. Before,
each node's ``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent`` did (the fixture killed by command line,
which those retitle), eight per test session, running on for a minute or so after it ended."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import ctypes, json, os, sys
sys.path[:0] = [sys.argv[1]]
from ray_test_cluster import Cluster, _children, _name, stop_processes

PR_SET_CHILD_SUBREAPER = 36
assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, ctypes.get_errno()


def under_me():
    children, out, todo = _children(), [], [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            if open(f"/proc/{child}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
                out.append(f"{child} {_name(child)}")
            todo.append(child)
    return out


cluster = Cluster.private()
os.environ["RAY_TMPDIR"] = str(cluster.tmp)
report = {"stop_error": None}
try:
    cluster.start_head()
    from ktriage.execute import Job
    from ktriage.execute.ray_backend import RayExecutor

    with RayExecutor(cluster.address) as ex:
        (result,) = ex.run([Job("compile", os.getpid, ())])
    report["job_ran"] = result.ok
    report["running"] = under_me()
finally:
    try:
        cluster.stop()
    except AssertionError as exc:
        report["stop_error"] = str(exc)
    while True:  # the cluster's ended processes are this subreaper's zombies now
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    report["left"] = under_me()
    if report["left"]:  # a failing test leaves nothing either: what is left is this subreaper's
        stop_processes(_children().get(os.getpid(), []))
    print(json.dumps(report))
"""


def test_a_stopped_test_cluster_leaves_no_process_of_it_running(ray_installed: None, tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    proc = subprocess.run(
        [sys.executable, str(probe), str(Path(__file__).parent)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["job_ran"], report
    # the probe saw the cluster's processes, agents included: what it finds after the stop would be there
    assert any("ray::DashboardAgent" in p for p in report["running"]), report["running"]
    assert any("ray::RuntimeEnvAgent" in p for p in report["running"]), report["running"]
    assert report["left"] == [], report["left"]
    assert report["stop_error"] is None, report["stop_error"]
