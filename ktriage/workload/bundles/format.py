"""The bundle format: a self-contained folder of cubins and a manifest (compile here, measure there).

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

This module is the format: the manifest's records, writing an artifact entry and the manifest
(the one way every writer replaces it, which leaves the folder pruned: ``prune``), and ``load_bundle``, which reads it with the standard library (plus ktriage's pure-Python spec
model). The jobs around it have their own modules: ``build`` (compile an op's kernels
into a bundle), ``merge`` (variants and merges), ``named_kernels`` (bundles of named
kernels without a workload) and ``launch`` (a replay launcher over a loaded bundle; the
GPU loader itself is ``ktriage.measure.loader``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ktriage.atomic import write_atomic
from ktriage.catalog.inputs import InputCase
from ktriage.errors import CompileError, FormatError, KtriageError, check_format_version, worded
from ktriage.schema.bundle import (
    FIX,
    FIXES,
    ArtifactFailedSchema,
    BundleSchema,
    KernelSpecSchema,
    SelectionSchema,
)
from ktriage.schema.core import check_depth, decode_json, read_text, size_limit
from ktriage.schema.jsontypes import JSONObject, as_json_object
from ktriage.spec.model import KernelSpec
from ktriage.wording import plural
from ktriage.workload.bundles.prune import remove_unreferenced_cubins
from ktriage.workload.bundles.verify import CubinFacts, bundle_key, check_artifact, check_signature, read_cubin, sign
from ktriage.workload.ops.replay import KernelRef, SpecSource

FORMAT = 1
MANIFEST = "manifest.json"
# the PTX parameters of a tensor descriptor after its first (compile.abi: "a_desc[1]", "a_desc[2]", ...)
_DESCRIPTOR_PART = re.compile(r".+\[\d+\]")
MAX_MANIFEST_MB = 256  # a manifest lists specs and artifacts, never cubins (KTRIAGE_MAX_INPUT_MB sets it)
# Triton metadata a launcher needs (the rest of the metadata is kept too, minus local paths).
LAUNCH_KEYS = (
    "shared",
    "num_warps",
    "num_ctas",
    "cluster_dims",
    "global_scratch_size",
    "global_scratch_align",
    "profile_scratch_size",
    "profile_scratch_align",
    "launch_cooperative_grid",
    "launch_pdl",
    "tmem_size",
)
RESOURCE_KEYS = (
    "registers",
    "stack_bytes",
    "spill_store_bytes",
    "spill_load_bytes",
    "shared_bytes",
    "shared_static_bytes",
    "shared_dynamic_bytes",
    "local_loads",
    "local_stores",
    "barriers",
    "sass_instructions",
    "sass_opcodes",
)


@dataclass(frozen=True)
class BundleArtifact:
    """One compiled (spec, toolchain): what the GPU host needs to load and launch it."""

    spec_key: str
    toolchain_id: str
    cubin_path: Path
    cubin_sha256: str
    kernel_name: str
    launch: JSONObject  # shared, num_warps, num_ctas, cluster_dims, scratch sizes/aligns, ...
    metadata: JSONObject
    abi: tuple[JSONObject, ...]  # AbiParam.to_json() each
    resources: dict[str, Any] | None
    triton_version: str
    ptxas_version: str
    # path in the cubin's line table -> line -> text, as compiled (``analyze.lines.CarriedText``)
    source_text: Mapping[str, Mapping[int, str]] = field(default_factory=dict)

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


@dataclass(frozen=True)
class Selection:
    """The backends an op bench's compile was asked for: ``--only`` (None: the op's default set) and
    ``--baseline`` (None: the op's). Why in the bundle: the compile and the measuring run are two commands on
    two machines, and the measuring run chose every backend of the op again (``--only liger_layer_norm``
    compiled one backend, then the GPU timed torch_compile and triton too); the bundle carries the choice, as
    it carries the op, pass and precision, and ``bench --bundle`` measures it unless given its own."""

    only: tuple[str, ...] | None = None
    baseline: str | None = None

    def to_json(self) -> JSONObject:
        return {"only": list(self.only) if self.only is not None else None, "baseline": self.baseline}

    def flags(self) -> str:
        """The selection as the command line spells it (``--only a,b --baseline c``)."""
        only = f"--only {','.join(self.only)}" if self.only else ""
        return " ".join(f for f in (only, f"--baseline {self.baseline}" if self.baseline else "") if f)


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
    toolchains: dict[str, JSONObject]  # id -> Toolchain.to_json()
    specs: dict[str, KernelSpec]
    artifacts: dict[tuple[str, str], BundleArtifact | BundleFailure] = field(default_factory=dict)
    created: str = ""
    extra: JSONObject = field(default_factory=dict)  # what the writer noted (e.g. skipped kernels)
    selection: Selection | None = None  # None: the op's default backends (and bundles written before it)

    def input_cases(self) -> list[InputCase]:
        return [InputCase(int(i["id"]), {k: int(v) for k, v in i["facts"].items()}) for i in self.inputs]

    def compiled_text(self) -> str:
        """What the bundle holds, counted so that no count reads as another: ``10 kernels x 2 toolchains:
        20 cubins, 0 failed compiles``. Why: "20 kernels" counted one kernel once per toolchain, while
        ``workload show`` said 10 kernels of the same workload."""
        kernels = len({key for key, _ in self.artifacts})
        toolchains = len({tc for _, tc in self.artifacts})
        total, failed = len(self.artifacts), len(self.failure_lines())
        cubins = f"{total - failed} of {total} cubins" if failed else plural(total, "cubin")
        return (
            f"{plural(kernels, 'kernel')} x {plural(toolchains, 'toolchain')}:"
            f" {cubins}, {plural(failed, 'failed compile')}"
        )

    def failure_lines(self) -> list[str]:
        """One line per (kernel, toolchain) that did not compile, with the reason: what the person who
        built the bundle reads before carrying it to the GPU (those cells will not be timed)."""
        return [
            self._failure_text(key, tc, art)
            for (key, tc), art in self.artifacts.items()
            if isinstance(art, BundleFailure)
        ]

    def failure_of(self, spec_keys: Iterable[str], toolchain_id: str) -> str | None:
        """Why ``toolchain_id`` cannot run these kernels (the first that did not compile, in the words
        of ``failure_lines``), or None when all compiled: what ``profile`` says instead of starting
        ncu on a program that can only fail."""
        for key in spec_keys:
            art = self.artifacts.get((key, toolchain_id))
            if isinstance(art, BundleFailure):
                return self._failure_text(key, toolchain_id, art)
        return None

    def _failure_text(self, key: str, toolchain_id: str, art: BundleFailure) -> str:
        from ktriage.compile.messages import one_line

        spec = self.specs.get(key)
        toolchain = self.toolchains.get(toolchain_id, {}).get("spec", toolchain_id)
        return f"{toolchain} could not compile {spec.name if spec else key}: {one_line(art.message, art.kind)}"

    def toolchain_ids(self) -> list[str]:
        return list(self.toolchains)

    def kernel_key(self, backend: str, input_id: int, role: str) -> str:
        for item in self.inputs:
            if int(item["id"]) == input_id:
                try:
                    return str(item["kernels"][backend][role])
                except KeyError:
                    break
        raise FormatError(
            f"bundle {self.path} has no {backend} {role} kernel for input {input_id}",
            worded(
                lambda o: (
                    f"build a bundle with {o('only', '--only', [backend])} and that input "
                    f"(inputs here: {[i['id'] for i in self.inputs]})"
                )
            ),
        )

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
            raise FormatError(
                f"bundle {self.path} has no artifact for kernel {spec_key} with toolchain {toolchain_id}",
                f"toolchains in the bundle: {', '.join(self.toolchains)}",
            ) from None


# ----------------------------------------------------------------------------------- writing
BUNDLE_KEYS = ("op", "mode", "toolchains", "specs", "artifacts")  # what every bundle manifest has


def is_bundle_manifest(path: Path) -> bool:
    """Whether ``path`` holds a ktriage bundle's manifest (a JSON object with a format version and the
    keys every bundle has), loosely: a bundle of another ktriage version, one merged or with variants, is
    one too; the loader checks the rest. Unreadable, too large or not JSON: not one."""
    try:
        doc = json.loads(read_text(path, what="bundle manifest", limit=size_limit(MAX_MANIFEST_MB)))
    except (KtriageError, OSError, ValueError, RecursionError):
        return False
    return (
        isinstance(doc, dict)
        and any(k in doc for k in ("format_version", "format"))
        and all(k in doc for k in BUNDLE_KEYS)
    )


def bundle_identity(path: Path) -> tuple[str, str] | None:
    """The (op, mode) of the bundle whose manifest is ``path`` (a recorded bundle's op is its workload's
    name), or None when it is no bundle's or does not say."""
    if not is_bundle_manifest(path):
        return None
    try:
        doc = json.loads(read_text(path, what="bundle manifest", limit=size_limit(MAX_MANIFEST_MB)))
    except (KtriageError, OSError, ValueError, RecursionError):
        return None
    op, mode = doc.get("op"), doc.get("mode")
    return (op, mode) if isinstance(op, str) and isinstance(mode, str) else None


def check_bundle_folder(out_dir: Path, *, replacing: tuple[str, str] | None = None) -> None:
    """Refuse to write a bundle into ``out_dir`` when its ``manifest.json`` is not a bundle's, before any
    compile. Why: ``--bundle DIR`` named a folder that is not the bundle's alone (``--bundle .`` in a web
    app, a dataset's folder) and its ``manifest.json`` was replaced by the bundle's without a word. A
    bundle's manifest there is replaced or updated, as rebuilding a bundle in place always did (the
    builders, ``add_variant`` and ``merge_bundles`` rewrite their own).

    ``replacing``: the (op, mode) of the bundle about to be written (a recorded bundle's: its workload's
    name, ``recorded``). A bundle of another op or workload there is refused too: ``bench B.json
    --compile-only --bundle DIR`` into the folder of A's bundle replaced A's without a word, and A's
    bundle was lost; a rebuild of the same one still replaces it."""
    manifest = Path(out_dir) / MANIFEST
    given = Path(out_dir)
    named = given if given.name not in ("", "..") else given.resolve()  # --bundle . : the folder's own name
    sibling = named.with_name(f"{named.name}-bundle") if named.name else named / "ktriage-bundle"
    if not (manifest.exists() or manifest.is_symlink()):
        return
    if manifest.is_file() and is_bundle_manifest(manifest):
        held = bundle_identity(manifest) if replacing is not None else None
        if replacing is None or held is None or held == replacing:
            return
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('bundle', '--bundle', str(out_dir))} holds the bundle of {held[0]} ({held[1]}), which the "
                    f"bundle of {replacing[0]} ({replacing[1]}) would replace"
                )
            ),
            worded(
                lambda o: (
                    f"write it to a folder of its own, e.g. {o('bundle', '--bundle', str(sibling))}, or remove "
                    f"{out_dir} first to replace that bundle"
                )
            ),
        )
    raise KtriageError(
        worded(
            lambda o: (
                f"{o('bundle', '--bundle', str(out_dir))}: {manifest} exists and is not a ktriage bundle's "
                f"manifest: the bundle's {MANIFEST} would replace it"
            )
        ),
        worded(
            lambda o: (
                f"write the bundle to a folder of its own (new, empty, or holding a ktriage bundle), e.g. "
                f"{o('bundle', '--bundle', str(sibling))}"
            )
        ),
    )


def write_manifest(out_dir: Path, manifest: Mapping[str, object]) -> int:
    """Replace a bundle's manifest atomically (a reader never sees half of one); signed when
    ``KTRIAGE_BUNDLE_KEY`` is set (``verify.sign``). Every bundle writer goes through here (the builders,
    ``add_variant``, ``merge_bundles``, ``write_kernel_bundle``, tune's bundle), so each leaves the folder
    pruned the same way: when it held a ktriage bundle's manifest until now, the cubins the new manifest
    does not reference are removed (``prune``); returns how many."""
    path = Path(out_dir) / MANIFEST
    held = is_bundle_manifest(path)  # read before it is replaced: a folder that held no bundle is not pruned
    signed = sign(manifest)
    write_atomic(path, json.dumps(signed, indent=1))
    return remove_unreferenced_cubins(Path(out_dir), signed) if held else 0


def artifact_entry(art: Any, out_dir: Path) -> JSONObject:
    """The manifest entry of a compiled Artifact, its cubin copied into ``out_dir/cubins`` (once per hash)."""
    data = art.cubin.cubin_path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    rel = f"cubins/{sha[:20]}.cubin"
    dest = out_dir / rel
    if not dest.exists():
        dest.write_bytes(data)
    metadata = {k: v for k, v in art.frontend.metadata.items() if k != "extern_libs"}
    resources, source_text = _resources(art)
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
        "resources": resources,
        "source_text": source_text,
    }


def _resources(art: Any) -> tuple[JSONObject, dict[str, dict[str, str]]]:
    """Registers, stack, spills, shared memory: for reports next to the timings (an error if cuobjdump fails);
    and the source text of the cubin's lines, which the GPU host cannot read (``analyze.lines.text_of_lines``)."""
    from ktriage.analyze.artifact import cached_resources
    from ktriage.analyze.lines import text_of_lines

    try:
        res = cached_resources(
            art.cubin,
            art.toolchain,
            art.frontend.text("ptx"),
            art.kernel_name,
            int(art.frontend.metadata.get("shared", 0)),
        )
    except (KtriageError, OSError) as exc:
        return {"error": str(exc)}, {}
    data = res.to_json()
    texts = text_of_lines(res.source_lines)
    return {k: data.get(k) for k in RESOURCE_KEYS}, {
        path: {str(n): t for n, t in lines.items()} for path, lines in texts.items()
    }


# ----------------------------------------------------------------------------------- loading
def load_bundle(path: Path | str) -> Bundle:
    """Read a bundle on the GPU host: no toolchain, no Triton; checks the signature (when
    ``KTRIAGE_BUNDLE_KEY`` is set), every cubin's hash, and each cubin against its entry (kernel
    symbol, target, assembler, ABI, launch, registers: ``verify``)."""
    given = Path(path)
    manifest_path = given / MANIFEST if given.is_dir() else given
    root = manifest_path.parent
    if not manifest_path.exists():
        what = f"{given} has no {MANIFEST}" if given.is_dir() else f"{given} does not exist"
        raise FormatError(
            f"no bundle at {given}: {what}",
            "build one on a machine with the toolchains: ktriage bench OP|WORKLOAD -t OLD -t NEW --compile-only "
            f"--bundle {given}",
        )
    origin = f"bundle manifest {manifest_path}"
    try:
        text = read_text(manifest_path, what="bundle manifest", limit=size_limit(MAX_MANIFEST_MB))
        doc = decode_json(text, BundleSchema, origin=origin, fix=FIX, fixes=FIXES)
    except FormatError:
        if not given.is_dir():
            _refuse_workload(given)
        raise
    if bundle_key() is not None:
        check_signature(json.loads(text), origin)
    version = {
        k: v for k, v in (("format_version", doc.format_version), ("format", doc.format)) if v is not msgspec.UNSET
    }
    check_format_version(
        version,
        FORMAT,
        what=f"bundle {root}",
        legacy_keys=("format",),
        fix="rebuild the bundle with this ktriage version",
    )
    check_depth([doc.inputs, doc.toolchains, doc.extra], origin=origin)
    specs = {k: _spec_from_schema(s) for k, s in doc.specs.items()}
    bundle = Bundle(
        path=root,
        op=doc.op,
        mode=doc.mode,
        precision=doc.precision,
        target=doc.target,
        sm_count=doc.sm_count,
        backends=tuple(doc.backends),
        inputs=doc.inputs,
        toolchains={tc_id: as_json_object(tc) for tc_id, tc in doc.toolchains.items()},
        specs=specs,
        created=doc.created,
        extra=as_json_object(dict(doc.extra)),
        selection=_selection(doc.selection),
    )
    facts: dict[Path, tuple[str, CubinFacts]] = {}  # a cubin shared by entries is read once
    for key, per_tc in doc.artifacts.items():
        if key not in specs:
            raise FormatError(f"{origin}: artifacts.{key}: no spec {key!r} in specs", FIX)
        for tc_id, entry in per_tc.items():
            if isinstance(entry, ArtifactFailedSchema):
                bundle.artifacts[(key, tc_id)] = BundleFailure(key, tc_id, entry.stage, entry.kind, entry.message)
                continue
            cubin = (root / entry.cubin).resolve()
            where = f"bundle {root}: entry {key} / {tc_id} ({entry.cubin})"
            if not cubin.is_relative_to(root.resolve()) or not cubin.is_file():
                raise FormatError(
                    f"{where}: the cubin is missing or changed (not a file inside the bundle)",
                    "copy the whole bundle folder again",
                )
            if cubin not in facts:
                data = cubin.read_bytes()
                facts[cubin] = (hashlib.sha256(data).hexdigest(), read_cubin(data, where))
            sha, cubin_facts = facts[cubin]
            if sha != entry.cubin_sha256:
                raise FormatError(
                    f"{where}: the cubin is missing or changed (its sha256 is not the manifest's)",
                    "copy the whole bundle folder again",
                )
            _check_abi(specs[key], entry.abi, where=f"bundle {root} kernel {key} toolchain {tc_id}")
            check_artifact(
                cubin_facts,
                where=where,
                kernel_name=entry.kernel_name,
                target=specs[key].target or doc.target,
                ptxas_version=entry.ptxas_version,
                abi=entry.abi,
                signature=specs[key].signature,
                launch=entry.launch,
                resources=entry.resources,
            )
            bundle.artifacts[(key, tc_id)] = BundleArtifact(
                spec_key=key,
                toolchain_id=tc_id,
                cubin_path=cubin,
                cubin_sha256=entry.cubin_sha256,
                kernel_name=entry.kernel_name,
                launch=as_json_object(entry.launch),
                metadata=as_json_object(entry.metadata),
                abi=tuple(as_json_object(p) for p in entry.abi),
                resources=entry.resources,
                triton_version=entry.triton_version,
                ptxas_version=entry.ptxas_version,
                source_text=_carried(entry.source_text),
            )
    return bundle


def _selection(doc: SelectionSchema | None) -> Selection | None:
    """The manifest's selection (names checked against the op's backends by the bench that reads it)."""
    if doc is None:
        return None
    return Selection(tuple(doc.only) if doc.only is not None else None, doc.baseline)


def _carried(texts: Mapping[str, Mapping[str, str]]) -> dict[str, dict[int, str]]:
    """The manifest's source text (JSON keys are strings) by line number; a key that is no number is dropped."""
    return {path: {int(n): t for n, t in lines.items() if n.isdigit()} for path, lines in texts.items()}


def _refuse_workload(given: Path) -> None:
    """A recorded workload given where its bundle goes (``bench --bundle W.json.gz``) is named as one.
    Read as a manifest it was "not UTF-8" or "missing key 'op'", whose fix (copy the whole bundle
    folder again) cannot help. Only on the failure path: a good manifest is not read twice."""
    from ktriage.record.workload import JOURNAL_KIND, WORKLOAD_KIND
    from ktriage.schema.core import read_text_gz

    try:
        text = read_text_gz(given, what="file", limit=size_limit(MAX_MANIFEST_MB))
        try:
            doc = json.loads(text)
        except ValueError:  # a journal: one JSON record a line, its header first
            doc = json.loads(text.split("\n", 1)[0])
    except (KtriageError, ValueError, RecursionError):  # nested too deep for json: no workload either
        return
    if isinstance(doc, dict) and doc.get("kind") in (WORKLOAD_KIND, JOURNAL_KIND):
        raise FormatError(
            f"{given} is a recorded workload (`ktriage record`), not a bundle",
            f"compile it into a bundle on a machine with the toolchains: ktriage bench {given} -t OLD -t NEW "
            "--compile-only --bundle DIR; then measure that: ktriage bench --bundle DIR",
        )


def _spec_from_schema(s: KernelSpecSchema) -> KernelSpec:
    return KernelSpec(
        name=s.name,
        source=s.source,
        signature=dict(s.signature),
        constexprs=dict(s.constexprs),
        divisible_by_16=tuple(s.divisible_by_16),
        equal_to_1=tuple(s.equal_to_1),
        num_warps=s.num_warps,
        num_stages=s.num_stages,
        num_ctas=s.num_ctas,
        maxnreg=s.maxnreg,
        target=s.target,
        grid=tuple(s.grid) if s.grid is not None else None,
        package=s.package,
        meta=dict(s.meta),
    )


def _check_abi(spec: KernelSpec, abi: Sequence[Mapping[str, object]], *, where: str) -> None:
    """The visible ABI must be the spec's runtime parameters in order (what the replays pass). A tensor
    descriptor is several PTX parameters, ``a_desc``, ``a_desc[1]``, ... (``compile.abi``): its first names it."""
    visible = [p.get("name") for p in abi if not p.get("hidden") and not _DESCRIPTOR_PART.fullmatch(str(p.get("name")))]
    runtime = [n for n, t in spec.signature.items() if t != "constexpr"]
    if visible != runtime:
        raise CompileError(
            f"{where}: ABI parameters {visible} differ from the spec's runtime parameters {runtime}",
            "rebuild the bundle with this ktriage",
        )
