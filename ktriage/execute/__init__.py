"""Where jobs run: one interface for compile, build and timing jobs (DESIGN.md, "Executor").

``base.py`` holds the model (``Job``, ``JobResult``, ``Placement``, the ``Executor`` protocol) and
the embedded default, ``LocalExecutor``; ``ray_backend.py`` runs the same jobs on a Ray cluster;
``select.py`` turns ``--cluster`` / ``KTRIAGE_CLUSTER`` into one of them. This package sits below
compile and bisect and knows nothing of them: a job is a module-level function plus picklable
arguments, and the callers (``ktriage.compile.remote``, ``ktriage.bisect.cluster``) define theirs.
"""

from ktriage.execute.base import Executor, Job, JobKind, JobResult, LocalExecutor, Placement
from ktriage.execute.select import CLUSTER_ENV, open_executor

__all__ = ["CLUSTER_ENV", "Executor", "Job", "JobKind", "JobResult", "LocalExecutor", "Placement", "open_executor"]
