"""Launch a loaded bundle's kernels from the replays: one toolchain's launcher by spec key.

The GPU side (loading a cubin into the CUDA launcher) is ``ktriage.measure.loader``; this module
takes it as the ``load`` callable and never imports it, so ``workload`` stays above ``measure``
without a GPU import."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ktriage.compile.messages import one_line
from ktriage.errors import CompileError
from ktriage.workload.bundles.format import Bundle, BundleArtifact, BundleFailure
from ktriage.workload.ops.replay import LaunchFn


class LoadedKernelLike(Protocol):
    def launch(self, grid: tuple[int, ...], args: Sequence[int | float]) -> None: ...


PREPARED_CACHE = 64


def make_launcher(bundle: Bundle, toolchain_id: str, load: Callable[[BundleArtifact], LoadedKernelLike]) -> LaunchFn:
    """A replay launcher for one toolchain of ``bundle``: loads each kernel once (``load`` is the
    runner's cubin loader, ``ktriage.measure.loader.runner_loader()`` on the GPU host; this module
    never imports the GPU launcher) and launches it by spec key. A kernel that
    failed to compile raises KtriageError naming the failure, so its cell is reported, not timed."""
    loaded: dict[str, LoadedKernelLike] = {}
    # Packed launches by (kernel, grid, args): args are device addresses and scalars, so a timed
    # call that launches on the same buffers again only enqueues (packing costs tens of us of
    # Python, which event timing would otherwise count as GPU idle time for small kernels).
    prepared: OrderedDict[tuple[Any, ...], Callable[[], None]] = OrderedDict()

    def launch(key: str, grid: tuple[int, ...], args: Sequence[int | float]) -> None:
        cache_key = (key, tuple(grid), tuple(args))
        ready = prepared.get(cache_key)
        if ready is None:
            kernel = loaded.get(key)
            if kernel is None:
                art = bundle.artifact(key, toolchain_id)
                if isinstance(art, BundleFailure):
                    # the one line with the root cause (a CompilationError's first 300 characters are source)
                    raise CompileError(
                        f"kernel {key} did not compile with {toolchain_id} ({art.stage}: {art.kind}): "
                        f"{one_line(art.message, art.kind)}",
                        "this toolchain cannot run this input; the other toolchains still can",
                    )
                kernel = loaded[key] = load(art)
            prepare = getattr(kernel, "prepare", None)
            if prepare is None:  # a loader without packing (the CPU fakes): launch directly
                kernel.launch(grid, args)
                return
            ready = prepared[cache_key] = prepare(grid, args)
            while len(prepared) > PREPARED_CACHE:
                prepared.popitem(last=False)
        else:
            prepared.move_to_end(cache_key)
        ready()

    return launch
