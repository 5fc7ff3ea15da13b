"""Read Nsight Compute's CSV export (``ncu --import R --csv --page raw``) into per-launch metrics.

The raw page is one header row of metric names (after the launch's identity columns: ``ID``,
``Process ID``, ``Kernel Name``, ...), then, in most ncu versions, one row of units (its ``ID`` cell is
empty), then one row per profiled launch. Numbers may carry thousands separators (``"1,234"``); a
cell that is not a number (``n/a``, a kernel name) is kept as text. Pure standard library: the
parser runs in CI on committed real output (tests/profile/data/).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from ktriage.schema.jsontypes import JSONObject

IDENTITY = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)
_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Launch:
    """One profiled kernel launch: its identity and every metric the export had."""

    id: int
    kernel_name: str
    block_size: str
    grid_size: str
    metrics: dict[str, float | str]
    units: dict[str, str] = field(default_factory=dict)

    def number(self, name: str) -> float | None:
        value = self.metrics.get(name)
        return value if isinstance(value, float) else None

    def to_json(self) -> JSONObject:
        return {
            "id": self.id,
            "kernel_name": self.kernel_name,
            "block_size": self.block_size,
            "grid_size": self.grid_size,
        }


def _value(text: str) -> float | str:
    text = text.strip()
    if _NUMBER.match(text):
        return float(text.replace(",", ""))
    return text


def parse_raw_csv(text: str) -> list[Launch]:
    """The launches of a ``--page raw`` CSV export (ncu's ``==PROF==`` / ``==WARNING==`` lines skipped)."""
    lines = [line for line in text.splitlines() if line and not line.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows:
        return []
    header = rows[0]
    if "Kernel Name" not in header or "ID" not in header:
        raise ValueError("not an ncu --page raw CSV export: no 'ID' and 'Kernel Name' columns in the first row")
    col = {name: i for i, name in enumerate(header)}
    body = rows[1:]
    units: dict[str, str] = {}
    if body and not body[0][col["ID"]].strip():
        units = {header[i]: u for i, u in enumerate(body[0]) if u and header[i] not in IDENTITY}
        body = body[1:]
    launches = []
    for row in body:
        if len(row) < len(header) or not row[col["ID"]].strip():
            continue
        metrics = {header[i]: _value(v) for i, v in enumerate(row) if header[i] not in IDENTITY}
        launches.append(
            Launch(
                id=int(row[col["ID"]]),
                kernel_name=row[col["Kernel Name"]],
                block_size=row[col["Block Size"]] if "Block Size" in col else "",
                grid_size=row[col["Grid Size"]] if "Grid Size" in col else "",
                metrics=metrics,
                units=units,
            )
        )
    return launches


# ------------------------------------------------------------------------------ what we read of a launch
STALL = re.compile(r"^smsp__average_warps?_issue_stalled_(?P<reason>\w+?)_per_issue_active\.ratio$")
PCSAMP_STALL = re.compile(r"^smsp__pcsamp_warps_issue_stalled_(?P<reason>\w+)$")
OCCUPANCY_LIMITS = {
    "registers": "launch__occupancy_limit_registers",
    "shared memory": "launch__occupancy_limit_shared_mem",
    "warps": "launch__occupancy_limit_warps",
    "blocks": "launch__occupancy_limit_blocks",
}
# name in the summary -> ncu metric (the sections' metrics, plus the explicit --metrics of run.METRICS)
SCALARS = {
    "registers_per_thread": "launch__registers_per_thread",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "duration_ns": "gpu__time_duration.sum",
    "inst_executed": "smsp__inst_executed.sum",
    "dram_bytes_read": "dram__bytes_read.sum",
    "dram_bytes_write": "dram__bytes_write.sum",
    "dram_throughput_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_throughput_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_bytes": "lts__t_bytes.sum",
    "local_ld_requests": "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum",
    "local_st_requests": "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
    "local_ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "local_st_sectors": "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "global_ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_st_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "global_atom_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "global_red_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "global_atom_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "global_red_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l2_atom_sectors": "lts__t_sectors_op_atom.sum",
    "l2_red_sectors": "lts__t_sectors_op_red.sum",
    # shared memory (MemoryWorkloadAnalysis_Tables): a wavefront is one pass through the banks; a request
    # whose 32 lanes hit one bank at several addresses takes several (the bank conflicts counted here)
    "shared_ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "shared_ld_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_st_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
}


def _ctas(grid: str) -> int | None:
    dims = re.findall(r"\d+", grid)
    if not dims:
        return None
    total = 1
    for d in dims:
        total *= int(d)
    return total


def stalls(launch: Launch) -> dict[str, float]:
    """Warp stall reasons (cycles per issued instruction, WarpStateStats); the PC-sampling counts
    (SourceCounters) when the export has no per-issue ratios."""
    found = {
        m.group("reason"): v
        for k, v in launch.metrics.items()
        if (m := STALL.match(k)) and isinstance(v, float) and not m.group("reason").endswith("not_issued")
    }
    if not found:
        found = {
            m.group("reason"): v
            for k, v in launch.metrics.items()
            if (m := PCSAMP_STALL.match(k)) and isinstance(v, float) and not m.group("reason").endswith("not_issued")
        }
    return found


def summarize(launch: Launch) -> JSONObject:
    """The numbers ``ktriage profile`` diffs, for one launch (absent metrics are left out)."""
    out = launch.to_json()
    scalars = {key: value for key, metric in SCALARS.items() if (value := launch.number(metric)) is not None}
    out.update(scalars)
    limits = {name: v for name, metric in OCCUPANCY_LIMITS.items() if (v := launch.number(metric)) is not None}
    if limits:
        out["occupancy_limits_ctas"] = limits
        low = min(limits.values())
        out["occupancy_limiter"] = " and ".join(n for n, v in limits.items() if v == low)
        sms = launch.number("device__attribute_multiprocessor_count")
        ctas = _ctas(launch.grid_size)
        if sms and ctas:
            out["ctas_per_sm"] = ctas / sms
            if ctas / sms < low:
                out["occupancy_limiter"] = f"grid ({ctas} CTAs on {sms:.0f} SMs; resources allow {low:.0f} per SM)"
    local = sum(scalars.get(k, 0.0) for k in ("local_ld_sectors", "local_st_sectors"))
    memory = local + sum(
        scalars.get(k, 0.0)
        for k in ("global_ld_sectors", "global_st_sectors", "global_atom_sectors", "global_red_sectors")
    )
    if memory:
        out["local_share_of_l1_sectors_pct"] = 100.0 * local / memory
    if "dram_bytes_read" in scalars or "dram_bytes_write" in scalars:
        out["dram_bytes"] = scalars.get("dram_bytes_read", 0.0) + scalars.get("dram_bytes_write", 0.0)
    reasons = stalls(launch)
    total = sum(reasons.values())
    if total > 0:
        ranked = dict(sorted(reasons.items(), key=lambda kv: -kv[1]))
        out["stalls"] = ranked
        out["stall_share_pct"] = {r: 100.0 * v / total for r, v in ranked.items()}
    return out
