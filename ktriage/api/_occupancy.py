"""``ktriage.api.occupancy(arch=..., registers=..., warps=...) -> OccupancyReport``: resident CTAs and
warps per SM for a kernel's resources, the limiting one, and what would lift it (the CUDA occupancy
rules, ``ktriage.analyze.occupancy``).

Why an entry point: ``ktriage occupancy`` parsed the arch and computed the occupancy itself; a
notebook asking "how many registers can this kernel use at 2 CTAs per SM" now makes one call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ktriage.api import _args as args
from ktriage.brief import brief
from ktriage.errors import KtriageError, joined, option
from ktriage.mdsafe import markdown_writer

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.analyze.occupancy import Occupancy
    from ktriage.arch import Arch

__all__ = ["OccupancyReport", "occupancy"]


@dataclass(frozen=True)
class OccupancyReport:
    """The occupancy (``result``) of one kernel's resources on ``arch``, with the renderers
    ``ktriage occupancy`` writes with."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    result: Occupancy
    arch: Arch
    barriers: int = 1

    def json_text(self) -> str:
        from ktriage.report.occupancy import to_json

        return to_json(self.result)

    @markdown_writer
    def to_markdown(self) -> str:
        from ktriage.report.occupancy import to_markdown

        return to_markdown(self.result, self.arch, self.barriers)

    def print_table(self, console: Console) -> None:
        from ktriage.report.occupancy import print_table

        print_table(self.result, self.arch, console, self.barriers)


@args.entry_point
def occupancy(
    *, arch: str = "sm_90", registers: int, warps: int, shared: int = 0, barriers: int = 1
) -> OccupancyReport:
    """Occupancy on ``arch`` (``sm_90``, ``90``...) of a kernel using ``registers`` per thread,
    ``warps`` per CTA, ``shared`` bytes of shared memory per CTA and ``barriers`` named barriers.

    Each count is an int, checked here as every entry point checks one (their ranges are the arch's,
    checked below it): ``registers=True`` was read as 1 register and its report said ``"registers":
    true``; ``registers="64"`` and ``arch=["sm_90"]`` were refused without naming the keyword."""
    from ktriage.analyze.occupancy import compute_occupancy
    from ktriage.arch import parse_arch

    registers, warps = args.Whole("registers", "--registers")(registers), args.Whole("warps", "--warps")(warps)
    shared, barriers = args.Whole("shared", "--shared")(shared), args.Whole("barriers", "--barriers")(barriers)
    a = parse_arch(args.arch(arch))
    if shared > a.shared_per_block_optin:  # else 0 CTAs/SM, read as a result
        raise KtriageError(
            joined(
                option("shared", "--shared"),
                f" {shared} bytes per CTA is more than {a.name} allows one block: at most {a.shared_per_block_optin} bytes "
                "(with the opt-in; 48 KB without), so no CTA of it could launch",
            ),
            f"pass the kernel's shared memory per CTA (Triton's metadata.shared), at most {a.shared_per_block_optin}",
        )
    return OccupancyReport(compute_occupancy(a, registers, warps, shared, barriers=barriers), a, barriers)
