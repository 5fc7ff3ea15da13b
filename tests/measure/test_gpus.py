"""--gpus: which GPUs a run uses, and how a bisect round's candidates are placed on them (pure logic)."""

from __future__ import annotations

import pytest

from ktriage.errors import KtriageError
from ktriage.measure.gpus import select_gpu_count, select_gpus, split_round, visible_gpus, worker_env


def test_all_a_count_and_indices_select_among_the_visible_gpus() -> None:
    visible = [0, 1, 2, 3]
    assert select_gpus(None, visible) is None  # no --gpus: one GPU, as before
    assert select_gpus("all", visible) == [0, 1, 2, 3]
    assert select_gpus("2", visible) == [0, 1]  # a count: the first N
    assert select_gpus("3,1", visible) == [3, 1] and select_gpus("2,", visible) == [2]  # indices; one GPU by index
    assert select_gpus("all", [4, 6]) == [4, 6]  # CUDA_VISIBLE_DEVICES=4,6


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("9", r"only 4 GPUs visible"),
        ("0", "a count of no GPUs"),
        ("1,7", "GPU 7 is not visible"),
        ("1,1", "names a GPU twice"),
        ("fast", "not all, a count or a list"),
        (",", "names no GPU"),
    ],
)
def test_a_bad_selection_names_the_problem_and_the_fix(spec: str, problem: str) -> None:
    with pytest.raises(KtriageError, match=problem) as info:
        select_gpus(spec, [0, 1, 2, 3])
    assert info.value.fix


def test_visible_gpus_follow_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert visible_gpus() == [2, 5]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-6b0c1a2e")
    with pytest.raises(KtriageError, match="UUID"):
        visible_gpus()
    assert worker_env(3) == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "3"}


def test_a_round_is_split_in_search_order_one_group_per_gpu() -> None:
    assert split_round(list("abcdefg"), [0, 1, 2]) == [(0, ["a", "b", "c"]), (1, ["d", "e"]), (2, ["f", "g"])]
    assert split_round(["a", "b"], [0, 1, 2, 3]) == [(0, ["a"]), (1, ["b"])]  # more GPUs than candidates
    assert split_round([], [0, 1]) == []
    groups = split_round(list(range(10)), [5, 7])
    assert [c for _, g in groups for c in g] == list(range(10))  # every candidate once, in order
    with pytest.raises(KtriageError):
        split_round(["a"], [])


def test_a_cluster_is_asked_for_all_or_a_count_of_its_gpus() -> None:
    assert select_gpu_count(None, 4) == 1  # no --gpus: one GPU, as before
    assert select_gpu_count("all", 4) == 4 and select_gpu_count("2", 4) == 2
    with pytest.raises(KtriageError, match="indices name GPUs of one host"):
        select_gpu_count("0,2", 4)
    with pytest.raises(KtriageError, match="has 4 GPU"):
        select_gpu_count("5", 4)
    with pytest.raises(KtriageError, match="count of no GPUs"):
        select_gpu_count("0", 4)


def test_bisect_leaves_a_clusters_gpus_to_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bisect --cluster H:P --gpus 2`` does not resolve the 2 against this host's GPUs (it may have
    none): the run counts the cluster's (BisectOptions.cluster_gpus)."""
    from ktriage.api._bisect import _host_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert _host_gpus("2", "latency", "127.0.0.1:6379") == []
    with pytest.raises(KtriageError, match="only 1 GPU"):
        _host_gpus("2", "latency", None)


UNCOUNTED = "nvidia-ml-py (pynvml) is not installed in this Python"


@pytest.mark.parametrize("spec", ["2", "0,1", "3,", "1"])
def test_gpus_beyond_gpu_0_are_refused_when_the_host_could_not_count_them(spec: str) -> None:
    """NVML not readable: the host was assumed to have one GPU, silently. ``--gpus 2`` then read "only 1
    GPU(s) visible" (it was never counted) and ``--gpus 0,1`` "GPU 1 is not visible"; now the refusal
    says the GPUs could not be counted, why, and how to let ktriage count or name them."""
    if spec == "1":  # one GPU is what a run without --gpus uses: nothing to check
        assert select_gpus(spec, [0], UNCOUNTED) == [0] and select_gpus("0,", [0], UNCOUNTED) == [0]
        return
    with pytest.raises(KtriageError, match="could not be counted") as info:
        select_gpus(spec, [0], UNCOUNTED)
    assert UNCOUNTED in info.value.problem and "nvidia-ml-py" in (info.value.fix or "")
    assert "CUDA_VISIBLE_DEVICES" in (info.value.fix or "")


def test_gpus_all_on_a_host_that_could_not_count_them_warns_and_uses_gpu_0(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="ktriage.gpus"):
        assert select_gpus("all", [0], UNCOUNTED) == [0]
    assert "could not count this host's GPUs" in caplog.text and "using GPU 0 only" in caplog.text
    with pytest.raises(KtriageError, match="not all, a count or a list"):  # a typo is still named as one
        select_gpus("fast", [0], UNCOUNTED)
    with pytest.raises(KtriageError, match="a count of no GPUs"):
        select_gpus("0", [0], UNCOUNTED)


def test_this_hosts_uncounted_gpus_are_not_assumed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real NVML reading of this host (on a machine where it cannot be read, as the CPU machines)."""
    from ktriage.measure.gpus import counted_gpus, host_gpus

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    visible, uncounted = counted_gpus()
    if uncounted is None:
        pytest.skip(f"NVML counts this host's GPUs ({visible})")
    assert visible == [0]
    with pytest.raises(KtriageError, match="could not be counted"):
        host_gpus("2")
