"""Who is to blame for a change: the frontend (Triton/LLVM, i.e. the PTX) or the assembler (ptxas)?

The cross matrix answers it without guessing. With reference toolchain R and new toolchain N, each
metric m is measured on four cubins: m(R-PTX, R-ptxas) (the reference), m(N-PTX, N-ptxas) (the new
one), and the two swaps m(N-PTX, R-ptxas) and m(R-PTX, N-ptxas). If swapping only the PTX already
reproduces (most of) the new value, the frontend is responsible; if swapping only ptxas does, ptxas
is; if only both together do, or each does part of it, both are; a swap that cannot be assembled (an old ptxas that does not know
the new PTX) is left out and the decision uses the cells that exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Attribution = Literal["frontend", "ptxas", "both", "none", "unknown"]


@dataclass(frozen=True)
class CrossCells:
    """One metric over the 2x2 matrix; a swap cell is None when it could not be assembled."""

    ref: float  # reference PTX, reference ptxas
    new: float  # new PTX, new ptxas
    new_ptx_ref_ptxas: float | None  # only the frontend changed
    ref_ptx_new_ptxas: float | None  # only ptxas changed


def _close(a: float, b: float, rel_tol: float, abs_tol: float) -> bool:
    return abs(a - b) <= max(abs_tol, rel_tol * max(abs(a), abs(b)))


# A swap "reproduces" the change when it moves the metric at least this share of the way from the
# reference to the new value, and "does nothing" when it moves it less than 1 - REPRODUCES. Two ptxas
# releases rarely spill the exact same byte count (3712 vs 3728 B), so exact equality would call
# almost every frontend change "both".
REPRODUCES = 0.8


def share_of_change(cells: CrossCells, cell: float | None) -> float | None:
    """How much of the ref -> new change one swap reproduces (0 = none, 1 = all of it)."""
    if cell is None or cells.new == cells.ref:
        return None
    return (cell - cells.ref) / (cells.new - cells.ref)


def attribute(cells: CrossCells, *, rel_tol: float = 0.0, abs_tol: float = 0.0) -> Attribution:
    """Decide which side of the toolchain explains the change from ``ref`` to ``new``.

    ``rel_tol``/``abs_tol`` decide whether there is a change at all (opcode counts that wobble by an
    instruction or two are "none"); then each swap's share of the change decides who caused it.
    """
    if _close(cells.ref, cells.new, rel_tol, abs_tol):
        return "none"
    front = share_of_change(cells, cells.new_ptx_ref_ptxas)
    asm = share_of_change(cells, cells.ref_ptx_new_ptxas)
    if front is None and asm is None:
        return "unknown"
    front_all = front is not None and front >= REPRODUCES
    asm_all = asm is not None and asm >= REPRODUCES
    front_none = front is not None and abs(front) <= 1 - REPRODUCES
    asm_none = asm is not None and abs(asm) <= 1 - REPRODUCES
    if front_all and (asm is None or asm_none):
        return "frontend"
    if asm_all and (front is None or front_none):
        return "ptxas"
    if front is None:
        return "frontend" if asm_none else "both"
    if asm is None:
        return "ptxas" if front_none else "both"
    return "both"


def sentence(
    metric: str,
    cells: CrossCells,
    who: Attribution,
    ref_name: str,
    new_name: str,
    ref_ptxas: str,
    new_ptxas: str,
    unit: str = "",
) -> str:
    """One plain sentence a kernel engineer can act on."""

    def fmt(v: float | None) -> str:
        if v is None:
            return "n/a"
        return f"{v:g}{unit}"

    change = f"{metric} {fmt(cells.ref)} -> {fmt(cells.new)}"
    if who == "none":
        return f"{metric} unchanged ({fmt(cells.ref)})."
    if who == "frontend":
        return (
            f"{change} comes from the frontend: {new_name}'s PTX gives {fmt(cells.new_ptx_ref_ptxas)} even with "
            f"ptxas {ref_ptxas}"
            + (
                f", and {ref_name}'s PTX gives {fmt(cells.ref_ptx_new_ptxas)} with ptxas {new_ptxas}."
                if cells.ref_ptx_new_ptxas is not None
                else "."
            )
        )
    if who == "ptxas":
        return (
            f"{change} comes from ptxas: {ref_name}'s PTX already gives {fmt(cells.ref_ptx_new_ptxas)} with ptxas "
            f"{new_ptxas}"
            + (
                f", and {new_name}'s PTX gives {fmt(cells.new_ptx_ref_ptxas)} with ptxas {ref_ptxas}."
                if cells.new_ptx_ref_ptxas is not None
                else "."
            )
        )
    if who == "both":
        return (
            f"{change} needs both sides: new PTX with old ptxas gives {fmt(cells.new_ptx_ref_ptxas)}, "
            f"old PTX with new ptxas gives {fmt(cells.ref_ptx_new_ptxas)}."
        )
    return f"{change}; the cross matrix could not be assembled, so the cause is unknown."
