"""The program ``ktriage profile`` runs under ncu: one toolchain's kernels of one bundle input.

``python -m ktriage.profile.target BUNDLE TOOLCHAIN INPUT_ID BACKEND [WARMUP]``: makes the input as
the bench does, prepares the backend's replay with kernel-only timing (the launches alone, on
buffers allocated at prepare), calls it WARMUP times, then once between ``cudaProfilerStart`` and
``cudaProfilerStop`` (ncu runs with ``--profile-from-start off``, so only that call is profiled).
Prints one line ``ktriage-profile: N launches`` for the log; a ``KtriageError`` (a kernel this
toolchain could not compile, an input the bundle lacks) is one line ``TARGET_ERROR`` + its problem and
exit 3, which ``profile.run`` reads as the reason instead of ncu's notes.
"""

from __future__ import annotations

import sys

TARGET_ERROR = "ktriage-profile-error: "
# The seed of a recorded entry's buffers (plus the entry id), as the recorded bench's default --seed.
RECORDED_SEED = 0


def main(argv: list[str]) -> int:
    from ktriage.errors import KtriageError

    try:
        return _profiled_call(argv)
    except KtriageError as exc:
        print(f"{TARGET_ERROR}{exc.problem}", flush=True)
        return 3


def _profiled_call(argv: list[str]) -> int:
    import torch

    from ktriage.measure.loader import runner_loader
    from ktriage.workload.bundles.format import load_bundle
    from ktriage.workload.bundles.launch import make_launcher
    from ktriage.workload.ops.backends import make_input
    from ktriage.workload.ops.replay import artifact_backend
    from ktriage.workload.recorded.bundle import is_recorded_bundle, recorded_view
    from ktriage.workload.recorded.replay import RecordedKernel, allocate

    path, toolchain, input_id, backend_name = argv[0], argv[1], int(argv[2]), argv[3]
    warmup = int(argv[4]) if len(argv) > 4 else 3
    bundle = load_bundle(path)
    launch = make_launcher(bundle, toolchain, runner_loader())
    if is_recorded_bundle(bundle):  # one recorded launch, its arguments rebuilt as the recorded bench does
        entry = recorded_view(bundle).entry(input_id)
        plan = entry.plan(bundle.specs[entry.spec_key])
        buffers = allocate(plan, seed=RECORDED_SEED + entry.id, device="cuda")
        kernel = RecordedKernel(launch, entry.spec_key, plan)

        def call() -> None:
            kernel(buffers)
    else:
        case = next(c for c in bundle.input_cases() if c.id == input_id)
        inp = make_input(bundle.op, case, precision=bundle.precision)
        backend = artifact_backend(
            backend_name, launch=launch, specs=bundle.spec_source(), timing="kernel", sm_count=bundle.sm_count
        )
        call = backend.prepare(inp, bundle.mode)
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()  # type: ignore[no-untyped-call]
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()  # type: ignore[no-untyped-call]
    print(
        f"ktriage-profile: {toolchain} input {input_id} {backend_name}: profiled one call after {warmup} warm-up calls"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
