"""Work shared by the inputs of a sweep is done once: the frontend per key, the launch ABI per entry
(kept as a self-hashed sidecar), and the order in which a sweep's pairs are compiled."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from ktriage.catalog import expand_op
from ktriage.compile.cache import QUARANTINE, SIDECAR_PREFIX
from ktriage.compile.compiler import Artifact, Compiler, cached_abi, pick_next, unique_first


def test_unique_first_puts_the_first_pair_of_every_key_before_the_repeats() -> None:
    """Pure ordering logic, with a fake key: (spec, toolchain) pairs are stood in for by strings."""
    pairs = [("a", "t1"), ("a", "t2"), ("b", "t1"), ("b", "t2"), ("a2", "t1"), ("c", "t1")]
    same_kernel = {"a": "A", "a2": "A", "b": "B", "c": "C"}

    def fake_key(spec: str, toolchain: str) -> str:
        return f"{same_kernel[spec]}|{toolchain}"

    order = unique_first(pairs, fake_key)  # type: ignore[arg-type]
    assert order == [0, 1, 2, 3, 5, 4]
    assert sorted(order) == list(range(len(pairs)))


def test_pick_next_keeps_each_thread_on_a_toolchain_whose_worker_is_free() -> None:
    """Pure scheduling logic: pairs 0..5 alternate toolchains a, b; one thread per toolchain."""
    lanes = ["a", "b", "a", "b", "a", "b"]
    pending = [0, 1, 2, 3, 4, 5]
    busy = {"a": 1, "b": 0}  # a thread is compiling with a's worker
    assert pick_next(pending, lanes, busy, share=1) == 1  # not 2: that would start a second a-worker
    busy["b"] = 1
    assert pick_next(pending, lanes, busy, share=1) == 0  # every toolchain busy: plain order
    assert pending == [2, 3, 4, 5]
    # a toolchain with nothing left: its thread helps the other one
    assert pick_next([4], lanes, {"a": 1, "b": 0}, share=1) == 4
    assert pick_next([], lanes, {}, share=1) is None


def _sharing_specs():
    """Inputs 1 and 2 of liger.layer_norm bwd (TritonBench's sweep) compile to one kernel."""
    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["1", "2"])
    assert specs[0].key() == specs[1].key() and specs[0].name != specs[1].name
    return specs


@pytest.mark.slow
def test_two_inputs_with_one_key_compile_once_and_share_the_artifact(toolchain, compiler: Compiler) -> None:
    specs = _sharing_specs()
    tc = toolchain("triton==3.4.0")
    outcomes = compiler.compile_many(specs, [tc])
    assert all(isinstance(o, Artifact) for o in outcomes)
    a, b = outcomes
    assert isinstance(a, Artifact) and isinstance(b, Artifact)
    assert compiler.frontend_compiles == 1
    assert a.frontend.dir == b.frontend.dir and a.abi == b.abi
    # results stay in input order, each with its own spec
    assert (a.spec.name, b.spec.name) == (specs[0].name, specs[1].name)


@pytest.mark.slow
def test_the_launch_abi_is_kept_as_a_sidecar_and_a_damaged_one_is_recomputed(
    toolchain, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = _sharing_specs()[0]
    tc = toolchain("triton==3.4.0")
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as c:
        art = c.compile(spec, tc)
    assert isinstance(art, Artifact)
    sidecars = list(art.frontend.dir.glob(f"{SIDECAR_PREFIX}abi-*.json"))
    assert len(sidecars) == 1
    # a fresh run reads the sidecar: same ABI
    assert cached_abi(spec, art.frontend) == art.abi
    # edit the stored ABI without fixing its hash: quarantined, recomputed from the PTX, never served
    wrapper = json.loads(sidecars[0].read_text())
    wrapper["data"][0]["ptx_type"] = "u8"
    sidecars[0].write_text(json.dumps(wrapper))
    with caplog.at_level(logging.WARNING, logger="ktriage.cache"):
        again = cached_abi(spec, art.frontend)
    assert again == art.abi and again[0].ptx_type != "u8"
    assert "damaged entry" in caplog.text
    assert any(
        p.name.startswith(f"{art.frontend.dir.name}-{sidecars[0].name}")
        for p in (tmp_path / "artifacts" / QUARANTINE).iterdir()
    )
    # the recomputed ABI was stored again, with a valid hash: the next reader gets it
    with Compiler(jobs=1, cache_dir=tmp_path / "artifacts") as c:
        warm = c.compile(spec, tc)
        assert isinstance(warm, Artifact) and warm.abi == art.abi
        assert c.frontend_compiles == 0 and not c.cache_repairs
