"""The record hook's launch key (pure logic, no Triton): a repeat launch must hit the key of the
first, and different launches must not share one (the key is flat: no nesting to tell them apart)."""

from __future__ import annotations

from typing import Any

from ktriage.insitu import launch_hook


class FakeTensor:
    """The attributes the key reads from a torch tensor, and nothing else."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "float32", address: int = 1 << 20) -> None:
        self.shape, self.dtype, self._address = shape, dtype, address

    def stride(self) -> tuple[int, ...]:
        return tuple(1 for _ in self.shape)

    def data_ptr(self) -> int:
        return self._address


class FakeKernel:
    pass


def _key(*args: Any, grid: Any = (4,), **kwargs: Any) -> tuple[Any, ...]:
    return launch_hook.jit_key(KERNEL, args, grid, kwargs)


KERNEL = FakeKernel()


def test_the_first_launch_of_a_new_tensor_type_has_the_repeats_key() -> None:
    class FirstSeen(FakeTensor):
        pass

    first = _key(FirstSeen((4096,)), FirstSeen((4096,)), 4096, BLOCK=1024)
    assert FirstSeen in launch_hook._TENSOR_TYPES
    assert _key(FirstSeen((4096,)), FirstSeen((4096,)), 4096, BLOCK=1024) == first


def test_launches_that_differ_get_different_keys() -> None:
    x = FakeTensor((4096,))
    base = _key(x, 4096, BLOCK=1024)
    assert _key(FakeTensor((8192,)), 4096, BLOCK=1024) != base  # shape
    assert _key(FakeTensor((4096,), dtype="float16"), 4096, BLOCK=1024) != base  # dtype
    assert _key(FakeTensor((4096,), address=(1 << 20) + 4), 4096, BLOCK=1024) != base  # alignment
    assert _key(x, 4096, grid=(8,), BLOCK=1024) != base  # grid
    assert _key(x, 4096, BLOCK=512) != base  # an option
    assert _key(x, 1, BLOCK=1024) != _key(x, True, BLOCK=1024)  # True specializes unlike 1
    assert _key(x, 4096, BLOCK=1024) == base
    # a scalar passed positionally is not the same launch as that name passed as a keyword
    assert _key(x, 4096) != _key(x, n=4096)
