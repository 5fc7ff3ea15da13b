"""Change bundles after they are built: add a *variant* of a toolchain (other kernels: a tuned config,
a source fix), or merge bundles of the same op into one so that one GPU process times them all."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ktriage.errors import FormatError, SpecError
from ktriage.workload.bundles.format import MANIFEST, artifact_entry, check_bundle_folder, write_manifest


def add_variant(
    out_dir: Path,
    base_toolchain_id: str,
    variant_id: str,
    label: str,
    artifacts: Mapping[str, Any],
    *,
    absent: str = "no kernel of this variant for this input",
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Add a *variant* of a bundle's toolchain: the same toolchain with other kernels (another
    config from ``ktriage tune``, a source fix from ``explain --fixes``). ``artifacts`` maps spec
    keys of the bundle to compiled Artifacts; the variant's other kernels are recorded as absent
    (their cells are reported, not timed), never silently replaced by the library's kernel.

    Why variants and not a new runner: the bench then times the fix or config interleaved with
    the toolchains it is compared with, in one process, with the same correctness check. ``extra``:
    more fields of the variant's toolchain record (a tune config's ``tune_config``); the bench copies
    the record into its results file, so a reader knows what each variant was without the bundle."""
    manifest_path = Path(out_dir) / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    if base_toolchain_id not in manifest["toolchains"]:
        raise SpecError(
            f"bundle {out_dir} has no toolchain {base_toolchain_id}",
            f"toolchains in the bundle: {', '.join(manifest['toolchains'])}",
        )
    unknown = sorted(set(artifacts) - set(manifest["artifacts"]))
    if unknown:
        raise SpecError(
            f"variant {variant_id}: kernels {unknown} are not in bundle {out_dir}",
            "compile the variant from the bundle's own specs (same inputs, arch and SM count)",
        )
    record = dict(manifest["toolchains"][base_toolchain_id])
    record.update(id=variant_id, spec=f"{record['spec']} [{label}]", variant_of=base_toolchain_id, variant=label)
    record.update(extra or {})
    manifest["toolchains"][variant_id] = record
    for key, per_tc in manifest["artifacts"].items():
        art = artifacts.get(key)
        per_tc[variant_id] = (
            artifact_entry(art, Path(out_dir))
            if art is not None
            else {"status": "failed", "stage": "variant", "kind": "absent", "message": absent}
        )
    write_manifest(Path(out_dir), manifest)


def merge_bundles(paths: Sequence[Path], out_dir: Path) -> Path:
    """One bundle from several of the same op, mode, precision, target and SM count (e.g. one
    tune bundle per input): the bench then times all inputs in ONE GPU process. Toolchains and
    kernels are united; a toolchain missing for some kernels is recorded as absent there."""
    import shutil

    if not paths:
        raise SpecError("no bundle to merge", "give the bundle folders to merge")
    out_dir = Path(out_dir)
    check_bundle_folder(out_dir)
    (out_dir / "cubins").mkdir(parents=True, exist_ok=True)
    merged: dict[str, Any] | None = None
    tunes: list[Any] = []  # each part's tune info (ktriage tune bundles)
    same = ("op", "mode", "precision", "target", "sm_count")
    for path in paths:
        data = json.loads((Path(path) / MANIFEST).read_text())
        for entries in data["artifacts"].values():
            for entry in entries.values():
                if entry.get("status") == "ok":
                    dest = out_dir / entry["cubin"]
                    if not dest.exists():
                        shutil.copyfile(Path(path) / entry["cubin"], dest)
        if data.get("tune"):
            tunes.append(data["tune"])
        if merged is None:
            merged = {k: v for k, v in data.items() if k != "tune"}
            merged["inputs"] = list(data["inputs"])
            continue
        for k in same:
            if data[k] != merged[k]:
                raise FormatError(
                    f"bundle {path} has {k}={data[k]!r}, the others {merged[k]!r}",
                    "merge only bundles of the same op, mode, precision, target and SM count",
                )
        known = {row["id"] for row in merged["inputs"]}
        merged["inputs"] += [row for row in data["inputs"] if row["id"] not in known]
        merged["backends"] = list(dict.fromkeys([*merged["backends"], *data["backends"]]))
        for tc_id, rec in data["toolchains"].items():
            if merged["toolchains"].setdefault(tc_id, rec).get("variant") != rec.get("variant"):
                raise FormatError(
                    f"bundle {path} names {tc_id} {rec.get('variant')!r}, another bundle "
                    f"{merged['toolchains'][tc_id].get('variant')!r}: one toolchain id would stand for two kernels",
                    "give each variant its own id in every bundle merged (ktriage tune numbers its configs "
                    "across all inputs)",
                )
        merged["specs"].update(data["specs"])
        for key, per_tc in data["artifacts"].items():
            merged["artifacts"].setdefault(key, {}).update(per_tc)
    assert merged is not None
    merged["inputs"].sort(key=lambda row: row["id"])
    for per_tc in merged["artifacts"].values():
        for tc_id in merged["toolchains"]:
            per_tc.setdefault(
                tc_id,
                {
                    "status": "failed",
                    "stage": "variant",
                    "kind": "absent",
                    "message": f"{tc_id} has no kernel for this input",
                },
            )
    merged["tunes"] = tunes
    write_manifest(out_dir, merged)
    return out_dir
