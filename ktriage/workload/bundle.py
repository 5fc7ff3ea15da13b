"""The compile-here / measure-there split: a self-contained folder of cubins and a manifest.

Why: toolchains (a Triton wheel is ~155 MB) and their compiles live on CPU machines; the GPU host
must measure from artifacts alone, with no toolchain, no Triton compile and no kernel source. A
bundle holds, for one op and mode over some inputs, every kernel the op's artifact backends launch,
compiled by every toolchain, plus what a launcher needs (kernel name, Triton's launch metadata,
the ABI with hidden scratch parameters) and a resources summary for reports. Identical cubins are
stored once (content hash), so a 30-input, 3-toolchain sweep stays a few MB and travels in the
working tree. A compile failure is recorded for its (spec, toolchain) and the bundle goes on.

Layout::

    <out_dir>/manifest.json
    <out_dir>/cubins/<sha256[:20]>.cubin

``load_bundle`` reads it with the standard library (plus ktriage's pure-Python spec model).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ktriage.catalog.inputs import InputCase
from ktriage.errors import CompileError, FormatError, KtriageError, SpecError, check_format_version
from ktriage.spec.model import KernelSpec
from ktriage.workload.replay import ROLES_BY_MODE, KernelRef, LaunchFn, SpecSource

if TYPE_CHECKING:
    from ktriage.compile.compiler import Compiler
    from ktriage.toolchain.manager import Toolchain

FORMAT = 1
MANIFEST = "manifest.json"
# Triton metadata a launcher needs (the rest of the metadata is kept too, minus local paths).
LAUNCH_KEYS = ("shared", "num_warps", "num_ctas", "cluster_dims", "global_scratch_size", "global_scratch_align",
               "profile_scratch_size", "profile_scratch_align", "launch_cooperative_grid", "launch_pdl", "tmem_size")
RESOURCE_KEYS = ("registers", "stack_bytes", "spill_store_bytes", "spill_load_bytes", "shared_bytes",
                 "shared_static_bytes", "shared_dynamic_bytes", "local_loads", "local_stores", "barriers",
                 "sass_instructions", "sass_opcodes")


@dataclass(frozen=True)
class BundleArtifact:
    """One compiled (spec, toolchain): what the GPU host needs to load and launch it."""

    spec_key: str
    toolchain_id: str
    cubin_path: Path
    cubin_sha256: str
    kernel_name: str
    launch: dict[str, Any]  # shared, num_warps, num_ctas, cluster_dims, scratch sizes/aligns, ...
    metadata: dict[str, Any]
    abi: tuple[dict[str, Any], ...]  # AbiParam.to_json() each
    resources: dict[str, Any] | None
    triton_version: str
    ptxas_version: str

    def cubin_bytes(self) -> bytes:
        return self.cubin_path.read_bytes()


@dataclass(frozen=True)
class BundleFailure:
    """A (spec, toolchain) that did not compile: reported as such by the runner, never timed."""

    spec_key: str
    toolchain_id: str
    stage: str
    kind: str
    message: str


@dataclass
class Bundle:
    """A loaded bundle (see the module docstring)."""

    path: Path
    op: str
    mode: str
    precision: str
    target: str
    sm_count: int
    backends: tuple[str, ...]
    inputs: list[dict[str, Any]]  # {"id", "facts", "x_val", "kernels": {backend: {role: spec_key}}}
    toolchains: dict[str, dict[str, Any]]  # id -> Toolchain.to_json()
    specs: dict[str, KernelSpec]
    artifacts: dict[tuple[str, str], BundleArtifact | BundleFailure] = field(default_factory=dict)
    created: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # what the writer noted (e.g. skipped kernels)

    def input_cases(self) -> list[InputCase]:
        return [InputCase(int(i["id"]), {k: int(v) for k, v in i["facts"].items()}) for i in self.inputs]

    def toolchain_ids(self) -> list[str]:
        return list(self.toolchains)

    def kernel_key(self, backend: str, input_id: int, role: str) -> str:
        for item in self.inputs:
            if int(item["id"]) == input_id:
                try:
                    return str(item["kernels"][backend][role])
                except KeyError:
                    break
        raise FormatError(f"bundle {self.path} has no {backend} {role} kernel for input {input_id}",
                           f"build a bundle with --only {backend} and that input (inputs here: {[i['id'] for i in self.inputs]})")

    def spec_source(self) -> SpecSource:
        """A SpecSource for the replays: kernels by (backend, input, role), from the manifest alone."""

        def source(backend: str, case: InputCase, role: str) -> KernelRef:
            key = self.kernel_key(backend, case.id, role)
            return KernelRef(key, self.specs[key])

        return source

    def artifact(self, spec_key: str, toolchain_id: str) -> BundleArtifact | BundleFailure:
        try:
            return self.artifacts[(spec_key, toolchain_id)]
        except KeyError:
            raise FormatError(f"bundle {self.path} has no artifact for kernel {spec_key} with toolchain {toolchain_id}",
                               f"toolchains in the bundle: {', '.join(self.toolchains)}") from None


# ----------------------------------------------------------------------------------- building
def build_bundle(
    op: str,
    mode: str,
    inputs: Sequence[str | int] | None,
    toolchains: Sequence[Toolchain],
    out_dir: Path,
    *,
    target: str = "sm_90",
    sm_count: int | None = None,
    compiler: Compiler,
    precision: str | None = None,
    backends: Sequence[str] | None = None,
) -> Path:
    """Compile every kernel of ``op``'s artifact backends for ``inputs`` (ids or selectors; None: all)
    with every toolchain and write the bundle to ``out_dir``; returns ``out_dir``."""
    from ktriage.catalog.targets import default_sm_count
    from ktriage.compile.compiler import Artifact
    from ktriage.workload.ops import (
        check_mode,
        get_op,
        resolve_precision,
        select_op_inputs,
    )
    from ktriage.workload.replay import REPLAYS, catalog_spec

    opdef = get_op(op)
    check_mode(opdef, mode)
    prec = resolve_precision(opdef, precision)
    sm = sm_count if sm_count is not None else default_sm_count(target)
    if not toolchains:
        raise SpecError("no toolchain given for the bundle", "pass --toolchain (e.g. --toolchain triton==3.4.0)")
    chosen = list(backends) if backends else [b for b in opdef.artifact_backends
                                              if not (REPLAYS[b].fwd_only and mode != "fwd")]
    for b in chosen:
        if b not in opdef.artifact_backends:
            raise SpecError(f"{b} is not an artifact backend of {op}", f"use: {', '.join(opdef.artifact_backends)}")
        if REPLAYS[b].fwd_only and mode != "fwd":
            raise SpecError(f"{b} has no {mode} kernels (forward only)", "bundle it with --fwd")
    cases = select_op_inputs(opdef, selectors=[str(i) for i in inputs] if inputs else None)

    specs: dict[str, KernelSpec] = {}
    input_rows = []
    for case in cases:
        kernels: dict[str, dict[str, str]] = {}
        for b in chosen:
            for role in ROLES_BY_MODE[mode]:
                spec = catalog_spec(b, case, role, precision=prec, target=target, sm_count=sm)
                key = spec.key()
                specs.setdefault(key, spec)
                kernels.setdefault(b, {})[role] = key
        input_rows.append({"id": case.id, "facts": dict(case.facts), "x_val": list(opdef.x_val(case)), "kernels": kernels})

    out_dir = Path(out_dir)
    (out_dir / "cubins").mkdir(parents=True, exist_ok=True)
    outcomes = compiler.compile_many(list(specs.values()), list(toolchains))  # in (spec, toolchain) order
    pairs = [(key, tc) for key in specs for tc in toolchains]
    artifacts: dict[str, dict[str, Any]] = {}
    for (key, tc), outcome in zip(pairs, outcomes, strict=True):
        if isinstance(outcome, Artifact):
            entry = _artifact_entry(outcome, out_dir)
        else:
            entry = {"status": "failed", "stage": outcome.stage, "kind": outcome.kind, "message": outcome.message}
        artifacts.setdefault(key, {})[tc.id] = entry

    manifest = {
        "format_version": FORMAT,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "op": op,
        "mode": mode,
        "precision": prec,
        "target": target,
        "sm_count": sm,
        "backends": chosen,
        "inputs": input_rows,
        "toolchains": {tc.id: tc.to_json() for tc in toolchains},
        "specs": {k: s.to_json() for k, s in specs.items()},
        "artifacts": artifacts,
    }
    write_manifest(out_dir, manifest)
    return out_dir


def _artifact_entry(art: Any, out_dir: Path) -> dict[str, Any]:
    data = art.cubin.cubin_path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    rel = f"cubins/{sha[:20]}.cubin"
    dest = out_dir / rel
    if not dest.exists():
        dest.write_bytes(data)
    metadata = {k: v for k, v in art.frontend.metadata.items() if k != "extern_libs"}
    return {
        "status": "ok",
        "cubin": rel,
        "cubin_sha256": sha,
        "kernel_name": art.kernel_name,
        "triton_version": art.frontend.triton_version,
        "ptxas_version": art.cubin.ptxas_version,
        "launch": {k: metadata.get(k) for k in LAUNCH_KEYS if k in metadata},
        "metadata": metadata,
        "abi": [p.to_json() for p in art.abi],
        "resources": _resources(art),
    }


def _resources(art: Any) -> dict[str, Any] | None:
    """Registers, stack, spills, shared memory: for reports next to the timings (None if cuobjdump fails)."""
    from ktriage.analyze.artifact import cached_resources

    try:
        res = cached_resources(art.cubin, art.toolchain, art.frontend.text("ptx"), art.kernel_name,
                               int(art.frontend.metadata.get("shared", 0)))
    except (KtriageError, OSError) as exc:
        return {"error": str(exc)}
    data = res.to_json()
    return {k: data.get(k) for k in RESOURCE_KEYS}


# ----------------------------------------------------------------------------------- named kernels
KERNELS_OP = "kernels"  # the ``op`` of a bundle of named kernels without a workload


def write_kernel_bundle(out_dir: Path, artifacts: Mapping[str, Any], *, extra: Mapping[str, Any] | None = None) -> Path:
    """A bundle of NAMED kernels without an op workload (the runner's GPU fixtures, ad-hoc kernels):
    each name is a spec key with the one toolchain that compiled it; ``extra`` is kept for the
    reader. Same format as op bundles, so one loader (hashes and ABI checked) serves both."""
    out_dir = Path(out_dir)
    (out_dir / "cubins").mkdir(parents=True, exist_ok=True)
    specs: dict[str, Any] = {}
    toolchains: dict[str, Any] = {}
    entries: dict[str, dict[str, Any]] = {}
    for name, art in artifacts.items():
        specs[name] = art.spec.to_json()
        toolchains.setdefault(art.toolchain.id, art.toolchain.to_json())
        entries[name] = {art.toolchain.id: _artifact_entry(art, out_dir)}
    targets = sorted({str(a.spec.target) for a in artifacts.values()})
    manifest = {
        "format_version": FORMAT, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "op": KERNELS_OP, "mode": "", "precision": "", "target": targets[0] if len(targets) == 1 else ",".join(targets),
        "sm_count": 0, "backends": [], "inputs": [], "toolchains": toolchains, "specs": specs, "artifacts": entries,
        "extra": dict(extra or {}),
    }  # fmt: skip
    write_manifest(out_dir, manifest)
    return out_dir / MANIFEST


@dataclass(frozen=True)
class NamedKernel:
    """One kernel of a named-kernel bundle: its spec (grid, meta) and its artifact, which
    ``ktriage.measure.loader.load_for_runner`` loads on the GPU host."""

    name: str
    spec: KernelSpec
    artifact: BundleArtifact

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(self.spec.grid or ())

    @property
    def info(self) -> dict[str, Any]:
        return {"spec": self.spec.name, "spec_meta": self.spec.meta, "toolchain": self.artifact.toolchain_id,
                "triton_version": self.artifact.triton_version, "ptxas_version": self.artifact.ptxas_version}

    @property
    def metadata(self) -> dict[str, Any]:
        return self.artifact.metadata


def read_kernel_bundle(path: Path | str) -> tuple[dict[str, NamedKernel], dict[str, Any]]:
    """The kernels of a bundle written by :func:`write_kernel_bundle`, by name, and its ``extra``."""
    bundle = load_bundle(path)
    if bundle.op != KERNELS_OP:
        raise FormatError(f"bundle {bundle.path} is an op bundle ({bundle.op}), not a bundle of named kernels",
                           "read it with load_bundle, or write named kernels with write_kernel_bundle")
    out: dict[str, NamedKernel] = {}
    for (key, _tc), art in bundle.artifacts.items():
        if isinstance(art, BundleArtifact):
            out[key] = NamedKernel(key, bundle.specs[key], art)
    return out, bundle.extra


# ----------------------------------------------------------------------------------- variants
def write_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    """Replace a bundle's manifest atomically (a reader never sees half of one)."""
    tmp = Path(out_dir) / f".{MANIFEST}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1))
    os.replace(tmp, Path(out_dir) / MANIFEST)


def add_variant(out_dir: Path, base_toolchain_id: str, variant_id: str, label: str, artifacts: Mapping[str, Any],
                *, absent: str = "no kernel of this variant for this input") -> None:
    """Add a *variant* of a bundle's toolchain: the same toolchain with other kernels (another
    config from ``ktriage tune``, a source fix from ``explain --fixes``). ``artifacts`` maps spec
    keys of the bundle to compiled Artifacts; the variant's other kernels are recorded as absent
    (their cells are reported, not timed), never silently replaced by the library's kernel.

    Why variants and not a new runner: the bench then times the fix or config interleaved with
    the toolchains it is compared with, in one process, with the same correctness check."""
    manifest_path = Path(out_dir) / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    if base_toolchain_id not in manifest["toolchains"]:
        raise SpecError(f"bundle {out_dir} has no toolchain {base_toolchain_id}",
                           f"toolchains in the bundle: {', '.join(manifest['toolchains'])}")
    unknown = sorted(set(artifacts) - set(manifest["artifacts"]))
    if unknown:
        raise SpecError(f"variant {variant_id}: kernels {unknown} are not in bundle {out_dir}",
                           "compile the variant from the bundle's own specs (same inputs, arch and SM count)")
    record = dict(manifest["toolchains"][base_toolchain_id])
    record.update(id=variant_id, spec=f"{record['spec']} [{label}]", variant_of=base_toolchain_id, variant=label)
    manifest["toolchains"][variant_id] = record
    for key, per_tc in manifest["artifacts"].items():
        art = artifacts.get(key)
        per_tc[variant_id] = (_artifact_entry(art, Path(out_dir)) if art is not None else
                              {"status": "failed", "stage": "variant", "kind": "absent", "message": absent})
    write_manifest(Path(out_dir), manifest)


def merge_bundles(paths: Sequence[Path], out_dir: Path) -> Path:
    """One bundle from several of the same op, mode, precision, target and SM count (e.g. one
    tune bundle per input): the bench then times all inputs in ONE GPU process. Toolchains and
    kernels are united; a toolchain missing for some kernels is recorded as absent there."""
    import shutil

    if not paths:
        raise SpecError("no bundle to merge", "give the bundle folders to merge")
    out_dir = Path(out_dir)
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
                raise FormatError(f"bundle {path} has {k}={data[k]!r}, the others {merged[k]!r}",
                                   "merge only bundles of the same op, mode, precision, target and SM count")
        known = {row["id"] for row in merged["inputs"]}
        merged["inputs"] += [row for row in data["inputs"] if row["id"] not in known]
        merged["backends"] = list(dict.fromkeys([*merged["backends"], *data["backends"]]))
        for tc_id, rec in data["toolchains"].items():
            merged["toolchains"].setdefault(tc_id, rec)
        merged["specs"].update(data["specs"])
        for key, per_tc in data["artifacts"].items():
            merged["artifacts"].setdefault(key, {}).update(per_tc)
    assert merged is not None
    merged["inputs"].sort(key=lambda row: row["id"])
    for per_tc in merged["artifacts"].values():
        for tc_id in merged["toolchains"]:
            per_tc.setdefault(tc_id, {"status": "failed", "stage": "variant", "kind": "absent",
                                      "message": f"{tc_id} has no kernel for this input"})
    merged["tunes"] = tunes
    write_manifest(out_dir, merged)
    return out_dir


# ----------------------------------------------------------------------------------- launching
class LoadedKernelLike(Protocol):
    def launch(self, grid: tuple[int, ...], args: Sequence[int | float]) -> None: ...


PREPARED_CACHE = 64


def make_launcher(bundle: Bundle, toolchain_id: str,
                  load: Callable[[BundleArtifact], LoadedKernelLike]) -> LaunchFn:
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
                    raise CompileError(f"kernel {key} did not compile with {toolchain_id} ({art.stage}: {art.kind}): {art.message[:300]}",
                                       "this toolchain cannot run this input; the other toolchains still can")
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


# ----------------------------------------------------------------------------------- loading
def load_bundle(path: Path | str) -> Bundle:
    """Read a bundle on the GPU host: no toolchain, no Triton; checks every cubin's hash and ABI."""
    root = Path(path)
    manifest_path = root / MANIFEST if root.is_dir() else root
    root = manifest_path.parent
    if not manifest_path.exists():
        raise FormatError(f"no bundle at {root} ({MANIFEST} missing)", "build one with build_bundle / `ktriage bench --compile-only`")
    data = json.loads(manifest_path.read_text())
    check_format_version(data, FORMAT, what=f"bundle {root}", legacy_keys=("format",),
                         fix="rebuild the bundle with this ktriage version")
    specs = {k: KernelSpec.from_json(v) for k, v in data["specs"].items()}
    bundle = Bundle(
        path=root, op=data["op"], mode=data["mode"], precision=data["precision"], target=data["target"],
        sm_count=int(data["sm_count"]), backends=tuple(data["backends"]), inputs=data["inputs"],
        toolchains=data["toolchains"], specs=specs, created=data.get("created", ""), extra=dict(data.get("extra") or {}),
    )  # fmt: skip
    for key, per_tc in data["artifacts"].items():
        for tc_id, entry in per_tc.items():
            if entry["status"] != "ok":
                bundle.artifacts[(key, tc_id)] = BundleFailure(key, tc_id, entry["stage"], entry["kind"], entry["message"])
                continue
            cubin = root / entry["cubin"]
            if not cubin.exists() or hashlib.sha256(cubin.read_bytes()).hexdigest() != entry["cubin_sha256"]:
                raise FormatError(f"bundle {root}: {entry['cubin']} is missing or changed", "copy the whole bundle folder again")
            _check_abi(specs[key], entry["abi"], where=f"bundle {root} kernel {key} toolchain {tc_id}")
            bundle.artifacts[(key, tc_id)] = BundleArtifact(
                spec_key=key, toolchain_id=tc_id, cubin_path=cubin, cubin_sha256=entry["cubin_sha256"],
                kernel_name=entry["kernel_name"], launch=entry["launch"], metadata=entry["metadata"],
                abi=tuple(entry["abi"]), resources=entry.get("resources"), triton_version=entry["triton_version"],
                ptxas_version=entry["ptxas_version"],
            )  # fmt: skip
    return bundle


def _check_abi(spec: KernelSpec, abi: list[dict[str, Any]], *, where: str) -> None:
    """The visible ABI must be the spec's runtime parameters in order (what the replays pass)."""
    visible = [p["name"] for p in abi if not p.get("hidden")]
    runtime = [n for n, t in spec.signature.items() if t != "constexpr"]
    if visible != runtime:
        raise CompileError(f"{where}: ABI parameters {visible} differ from the spec's runtime parameters {runtime}",
                           "rebuild the bundle with this ktriage")

