"""Toolchains: build once, find again, list, remove.

A toolchain = a frontend venv (shared, see frontend.py) + a ptxas (bundled, a release, or a path) +
ptxas options. Its id is readable and stable: ``triton-3.4.0.ptxas-12.8.93.<hash8>`` where the hash
covers the Triton version and wheel sha256, where ptxas comes from (bundled or explicit), the full
ptxas ``--version`` text, the options Triton itself passes (when it passes any beyond ``-lineinfo -v``)
and the toolchain's extra options. Two specs that yield the same binaries and options get the same
id, and a local ptxas that was rebuilt in place gets a new one.

Which bundled ptxas: Triton picks it per arch (3.3 uses ``ptxas-blackwell`` for cc >= 100, 3.9 for
every cc >= 90). ktriage does not restate that rule; it asks the frontend (frontend_facts, one probe
compile per arch). A toolchain's headline ``ptxas``/``ptxas_version`` are the ones for sm_90 (H100/H200,
the default target); :meth:`Toolchain.assembler` gives the exact one for any arch.

Layout under ``<home>/toolchains/``::

    envs/<frontend-key>/           the virtualenv (frontend.json marks it complete)
    <id>/toolchain.json            the toolchain record, written last and atomically
    .<id>.lock, envs/.<key>.lock   file locks
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ktriage.errors import KtriageError, ToolchainError, joined
from ktriage.home import home_lock, home_subdir
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.schema.toolchain import ToolchainRecord
from ktriage.toolchain.frontend import (
    ArchFacts,
    FrontendFacts,
    ensure_frontend,
    envs_dir,
    frontend_facts,
    frontend_key,
    frontend_problem,
    load_frontend,
)
from ktriage.toolchain.installer import (
    Progress,
    no_progress,
    read_json,
    tree_size,
    wipe,
    write_json_atomic,
)
from ktriage.toolchain.ptxas import ptxas_version
from ktriage.toolchain.releases import ensure_ptxas_release, releases_dir
from ktriage.toolchain.spec import ToolchainSpec, parse_toolchain

MARKER = "toolchain.json"
FORMAT = 1
HEADLINE_CC = 90  # the arch whose assembler names a toolchain (H100/H200, ktriage's default target)
# Options every Triton 3.x passes; an id records Triton's options only when it passes more.
BASE_TRITON_OPTIONS = ("-lineinfo", "-v")


@dataclass(frozen=True)
class Assembler:
    """The ptxas that makes a toolchain's cubins for one arch, and how it is called.

    ``native``: the toolchain assembles as Triton does (its bundled ptxas, no extra options), so the
    cubin is Triton's own, made by Triton's pipeline. Otherwise ktriage re-assembles the PTX with
    Triton's recorded command line, the binary swapped and ``extra_options`` added.
    """

    ptxas: Path
    version: str
    version_text: str
    triton_options: tuple[str, ...]
    extra_options: tuple[str, ...]
    native: bool

    def label(self) -> str:
        """``ptxas 13.4.59 (ptxas-blackwell) --regAllocOptLevel=2`` (options beyond -lineinfo -v)."""
        name = f" ({self.ptxas.name})" if self.ptxas.name != "ptxas" else ""
        opts = [o for o in self.triton_options if o not in BASE_TRITON_OPTIONS] + list(self.extra_options)
        return f"ptxas {self.version}{name}" + (" " + " ".join(opts) if opts else "")


@dataclass(frozen=True)
class Toolchain:
    """A built toolchain: everything a compile worker and an assembler need, with exact versions."""

    spec: ToolchainSpec
    id: str
    root: Path
    python: Path
    triton_version: str
    ptxas: Path
    ptxas_version: str
    ptxas_version_text: str
    ptxas_options: tuple[str, ...]
    ptxas_is_bundled: bool
    cuobjdump: Path
    nvdisasm: Path | None
    bundled_ptxas: Path
    """The ptxas Triton itself uses when it compiles (it decides the PTX ISA version Triton emits)."""
    ptxas_blackwell: Path | None = None
    """Triton 3.3's separate bundled ptxas for cc >= 100 (only when ptxas is bundled)."""
    env_root: Path | None = None
    """The (shared) frontend virtualenv."""
    wheel_sha256: str | None = None
    ptxas_triton_options: tuple[str, ...] = ()
    """The options Triton passes to ptxas for sm_90 beyond ``-lineinfo -v`` (e.g. ``--regAllocOptLevel=2``)."""
    host_sha256: str | None = None
    """``triton=host``: the hash of the interpreter and its installed Triton's RECORD (frontend.host_frontend)."""

    @property
    def frontend_id(self) -> str:
        """What decides the PTX: the Triton build (version + wheel hash, or the host's Triton's
        hash), not ptxas or its options. Toolchains that share it share compiled frontend output."""
        if self.host_sha256:
            return f"triton-{self.triton_version}-host-{self.host_sha256[:12]}"
        return f"triton-{self.triton_version}" + (f"-wheel-{self.wheel_sha256[:12]}" if self.wheel_sha256 else "")

    def facts(self, ccs: tuple[int, ...] = ()) -> FrontendFacts:
        """What this toolchain's Triton does (ptxas per arch, its options, order sensitivity)."""
        frontend = load_frontend(self.env_root) if self.env_root is not None else None
        if frontend is None:
            raise ToolchainError(
                f"toolchain {self.id}: {self.frontend_problem() or 'has no frontend virtualenv'}",
                f"build it again: ktriage toolchain add '{self.spec}' (an incomplete or damaged virtualenv "
                "is removed first)",
            )
        return frontend_facts(frontend, ccs)

    def frontend_problem(self) -> str | None:
        """Why this toolchain's frontend virtualenv cannot be used (``its frontend virtualenv DIR is
        incomplete: ...``), None when it can: what ``toolchain list`` and ``show`` say of it."""
        if self.env_root is None:
            return None
        problem = frontend_problem(self.env_root)
        return None if problem is None else f"its frontend virtualenv {self.env_root} {problem}"

    def assembler(self, cc: int) -> Assembler:
        """The ptxas (and options) that assemble this toolchain's cubins for compute capability ``cc``."""
        arch: ArchFacts = self.facts((cc,)).arch(cc)
        if self.ptxas_is_bundled:
            return Assembler(
                arch.ptxas,
                arch.ptxas_version,
                arch.ptxas_version_text,
                arch.options,
                self.ptxas_options,
                native=not self.ptxas_options,
            )
        return Assembler(
            self.ptxas, self.ptxas_version, self.ptxas_version_text, arch.options, self.ptxas_options, native=False
        )

    def to_json_for(self, target: str) -> JSONObject:
        """:meth:`to_json` as a bundle (and the results file of its bench) carries it for cubins of
        ``target``: ``ptxas_version`` names the ptxas that assembled them, per arch (Triton 3.6
        assembles sm_100 with its ptxas-blackwell 12.9.86, not the sm_90 headline 12.8.93), with
        ``assembler`` its label; the headline stays as ``headline_ptxas_version``. Where the arch's
        facts cannot be had, the headline is kept and ``assembler`` says so."""
        from ktriage.arch import parse_arch

        data = self.to_json()
        data["headline_ptxas_version"] = self.ptxas_version
        data["target"] = target
        try:
            asm = self.assembler(parse_arch(target).cc)
        except (KtriageError, ValueError) as exc:
            data["assembler"] = f"ptxas {self.ptxas_version} (the ptxas for {target} is unknown: {exc})"
            return data
        data["ptxas_version"] = asm.version
        data["assembler"] = asm.label()
        return data

    def to_json(self) -> JSONObject:
        """A JSON-ready dict (paths as strings); ``Toolchain.from_json`` reads it back."""
        return {
            "format": FORMAT,
            "spec": str(self.spec),
            "id": self.id,
            "root": str(self.root),
            "python": str(self.python),
            "triton_version": self.triton_version,
            "wheel_sha256": self.wheel_sha256,
            "ptxas": str(self.ptxas),
            "ptxas_version": self.ptxas_version,
            "ptxas_version_text": self.ptxas_version_text,
            "ptxas_options": list(self.ptxas_options),
            "ptxas_is_bundled": self.ptxas_is_bundled,
            "ptxas_blackwell": _opt_str(self.ptxas_blackwell),
            "bundled_ptxas": str(self.bundled_ptxas),
            "cuobjdump": str(self.cuobjdump),
            "nvdisasm": _opt_str(self.nvdisasm),
            "env_root": _opt_str(self.env_root),
            "ptxas_triton_options": list(self.ptxas_triton_options),
            "host_sha256": self.host_sha256,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, JSONValue]) -> Toolchain:
        """Inverse of to_json. Does not re-check files (a recorded wheel may be gone since); a record
        that does not fit :class:`~ktriage.schema.toolchain.ToolchainRecord` is a msgspec.ValidationError."""
        rec = msgspec.convert(data, ToolchainRecord)
        return cls(
            spec=parse_toolchain(rec.spec, check_files=False),
            id=rec.id,
            root=Path(rec.root),
            python=Path(rec.python),
            triton_version=rec.triton_version,
            wheel_sha256=rec.wheel_sha256,
            ptxas=Path(rec.ptxas),
            ptxas_version=rec.ptxas_version,
            ptxas_version_text=rec.ptxas_version_text,
            ptxas_options=tuple(rec.ptxas_options),
            ptxas_is_bundled=rec.ptxas_is_bundled,
            ptxas_blackwell=_opt_path(rec.ptxas_blackwell),
            bundled_ptxas=Path(rec.bundled_ptxas),
            cuobjdump=Path(rec.cuobjdump),
            nvdisasm=_opt_path(rec.nvdisasm),
            env_root=_opt_path(rec.env_root),
            ptxas_triton_options=tuple(rec.ptxas_triton_options or ()),
            host_sha256=rec.host_sha256,
        )


def toolchains_dir() -> Path:
    return home_subdir("toolchains").resolve()  # records hold absolute paths even for a relative KTRIAGE_HOME


def ensure_toolchain(spec: str | ToolchainSpec, *, progress: Progress | None = None) -> Toolchain:
    """The toolchain for a spec, building what is missing (venv, ptxas release) under file locks.

    Cheap when built: no network, one ``ptxas --version`` run (cached in-process) to confirm the id.
    """
    say = progress or no_progress
    parsed = parse_toolchain(spec) if isinstance(spec, str) else spec
    frontend = ensure_frontend(parsed, say)
    headline = frontend_facts(frontend).arch(HEADLINE_CC)
    ptxas, bundled = _resolve_ptxas(parsed, headline, say)
    info = ptxas_version(ptxas)
    triton_options = tuple(o for o in headline.options if o not in BASE_TRITON_OPTIONS)
    tc_id = toolchain_id(
        frontend.triton_version,
        frontend.wheel_sha256,
        bundled,
        info.version,
        info.text,
        parsed.ptxas_options,
        triton_options,
        host_sha256=frontend.host_sha256,
    )
    root = toolchains_dir() / tc_id
    existing = _load(root)
    if existing is not None and existing.ptxas == ptxas and existing.python == frontend.python:
        return existing
    with home_lock(toolchains_dir() / f".{tc_id}.lock"):
        existing = _load(root)
        if existing is not None and existing.ptxas == ptxas and existing.python == frontend.python:
            return existing
        toolchain = Toolchain(
            spec=parsed,
            id=tc_id,
            root=root,
            python=frontend.python,
            triton_version=frontend.triton_version,
            wheel_sha256=frontend.wheel_sha256,
            ptxas=ptxas,
            ptxas_version=info.version,
            ptxas_version_text=info.text,
            ptxas_options=parsed.ptxas_options,
            ptxas_is_bundled=bundled,
            ptxas_blackwell=frontend.bundled_ptxas_blackwell if bundled else None,
            bundled_ptxas=frontend.bundled_ptxas,
            cuobjdump=frontend.cuobjdump,
            nvdisasm=frontend.nvdisasm,
            env_root=frontend.root,
            ptxas_triton_options=triton_options,
            host_sha256=frontend.host_sha256,
        )
        write_json_atomic(root / MARKER, toolchain.to_json())
        say(f"toolchain {tc_id} ready")
        return toolchain


def check_releases_exist(spec: ToolchainSpec, flag: str) -> None:
    """Refuse (exit 2) a spec whose release is not on the package index, without building anything.

    Why: a verb that builds a toolchain only when it needs one (``triage`` compiles flagged cells only)
    took ``--old-toolchain triton==9.9`` and exited 0 whenever nothing was flagged, the report naming a
    toolchain that cannot exist; with a flagged cell the same spec failed the compile step (exit 4). A
    release ktriage supports (``SUPPORTED_TRITON``) or one already built here needs no question; any other
    is looked up with ``pip index versions`` (the versions installable on this interpreter and platform,
    what the build's ``uv pip install`` resolves against; nothing is downloaded). Pre-releases, and an
    index that does not answer (offline), are let through: only a known "no" is refused.

    ``flag``: how the message names the option that gave ``spec``; a :class:`~ktriage.errors.Worded` keeps its
    two spellings (the command prints ``--old-toolchain``, a Python caller reads ``old_toolchain``)."""
    from packaging.version import Version

    from ktriage.toolchain import installer
    from ktriage.toolchain.releases import nvcc_package, release_ptxas
    from ktriage.toolchain.supported import SUPPORTED_TRITON

    wanted: list[tuple[str, str, str]] = []  # (spec key, version, package on the index)
    v = spec.triton_version
    if spec.frontend_kind == "pypi" and v is not None and v not in SUPPORTED_TRITON:
        if load_frontend(envs_dir() / f"triton-{v}") is None:
            wanted.append(("triton", v, "triton"))
    p = spec.ptxas_version
    if p is not None and release_ptxas(p) is None:
        wanted.append(("ptxas", p, nvcc_package(p)))
    for key, version, package in wanted:
        if Version(version).is_prerelease:
            continue
        listed = installer.available_versions(package, limit=1000)
        if listed and version not in listed:
            raise ToolchainError(
                joined(
                    flag,
                    f" {spec}: {key}=={version} is not on the package index ({package} has no such release "
                    f"for Python {sys.version_info.major}.{sys.version_info.minor} on this platform)",
                ),
                f"pick one that exists: {key}=={listed[0]}, or one of {', '.join(listed[1:12])}",
            )


def ensure_toolchains(
    texts: Sequence[str | ToolchainSpec],
    *,
    progress: Callable[[str], AbstractContextManager[Progress]] | None = None,
) -> list[Toolchain]:
    """:func:`ensure_toolchain` for each spec, in order; a toolchain given twice is an error.

    ``progress(text)`` opens the report of one toolchain's build: a context whose value is that
    build's message hook (the CLI shows one line per toolchain and removes it once built)."""
    toolchains: list[Toolchain] = []
    given: list[str] = []
    for spec in texts:
        text = str(spec)
        if progress is None:
            toolchain = ensure_toolchain(spec)
        else:
            with progress(text) as say:
                toolchain = ensure_toolchain(spec, progress=say)
        for earlier, other in zip(given, toolchains):
            if other.id == toolchain.id:
                raise _given_twice(earlier, text, toolchain.id)
        toolchains.append(toolchain)
        given.append(text)
    return toolchains


def _given_twice(earlier: str, later: str, tc_id: str) -> ToolchainError:
    """Two specs of one toolchain: the same text, or two spellings of it (``triton==3.4`` is the
    release 3.4.0 to pip, so it builds ``triton==3.4.0``'s toolchain); both are named, so the user
    sees why two different texts are one toolchain."""
    if earlier == later:
        return ToolchainError(f"toolchain {later} is given twice", "give each toolchain once")
    return ToolchainError(
        f"toolchains {earlier} and {later} resolve to the same toolchain, {tc_id}",
        "give it once; toolchains to compare must differ (another triton== release, ptxas== or ptxas-options=)",
    )


def toolchain_id(
    triton_version: str,
    wheel_sha256: str | None,
    ptxas_is_bundled: bool,
    ptxas_version: str,
    ptxas_version_text: str,
    ptxas_options: tuple[str, ...],
    triton_options: tuple[str, ...] = (),
    *,
    host_sha256: str | None = None,
) -> str:
    """``triton-<v>.ptxas-<v>.<hash8>``; the hash covers every input that changes the output.

    ``triton_options`` (what Triton passes beyond ``-lineinfo -v``) enter the hash only when there
    are some, so the ids of toolchains made before they were recorded stay the same; so does
    ``host_sha256`` (``triton=host``: the interpreter and its installed Triton), which keeps a host's
    Triton apart from the PyPI release of the same version (a local build may carry its number)."""
    fields: JSONObject = {
        "triton": triton_version,
        "wheel_sha256": wheel_sha256,
        "ptxas_bundled": ptxas_is_bundled,
        "ptxas_version_text": ptxas_version_text.strip(),
        "ptxas_options": list(ptxas_options),
    }
    if triton_options:
        fields["triton_ptxas_options"] = list(triton_options)
    if host_sha256:
        fields["host_sha256"] = host_sha256
    identity = json.dumps(fields, sort_keys=True)
    digest = hashlib.sha256(identity.encode()).hexdigest()[:8]
    return f"triton-{triton_version}.ptxas-{ptxas_version}.{digest}".replace("/", "_")


def list_toolchains() -> list[Toolchain]:
    """Every complete toolchain in the home, sorted by id."""
    found = []
    for child in sorted(toolchains_dir().iterdir()):
        if child.is_dir() and not child.name.startswith(".") and child.name != "envs":
            tc = _load(child)
            if tc is not None:
                found.append(tc)
    return found


def find_toolchain(id_or_spec: str) -> Toolchain | None:
    """A built toolchain by id (or unique id prefix) or by spec string, None when none is built; never
    builds anything.

    Raises a ToolchainError for an id prefix that several built ids start with (listing them: a
    longer prefix picks one) and for a spec (a text with ``=``) that does not parse (an unknown key...),
    so that the user is not told to build, with ``toolchain add``, what would fail the same way there.
    """
    text = id_or_spec.strip()
    all_tcs = list_toolchains()
    for tc in all_tcs:
        if tc.id == text:
            return tc
    by_prefix = [tc for tc in all_tcs if tc.id.startswith(text)]
    if len(by_prefix) == 1:
        return by_prefix[0]
    if "=" not in text:
        if by_prefix:
            raise ToolchainError(
                f"{text!r} is the start of {len(by_prefix)} built toolchain ids: {', '.join(t.id for t in by_prefix)}",
                "give a longer prefix that only one of them starts with, or the whole id (see `ktriage toolchain list`)",
            )
        return None
    canonical = str(parse_toolchain(text, check_files=False))
    matches = [tc for tc in all_tcs if str(tc.spec) == canonical]
    return matches[-1] if matches else None


def remove_toolchain(id_or_spec: str) -> None:
    """Remove a toolchain; its venv and ptxas release go too once no other toolchain uses them."""
    tc = find_toolchain(id_or_spec)
    if tc is None:
        raise ToolchainError(f"no toolchain {id_or_spec!r} is installed", "see `ktriage toolchain list` for ids")
    with home_lock(toolchains_dir() / f".{tc.id}.lock"):
        (tc.root / MARKER).unlink(missing_ok=True)
        wipe(tc.root)
    remaining = list_toolchains()
    if tc.env_root is not None and not any(o.env_root == tc.env_root for o in remaining):
        with home_lock(envs_dir() / f".{tc.env_root.name}.lock"):
            wipe(tc.env_root)
    if not tc.ptxas_is_bundled and _is_release(tc.ptxas) and not any(o.ptxas == tc.ptxas for o in remaining):
        release_root = tc.ptxas.parent.parent
        with home_lock(releases_dir() / f".{release_root.name}.lock"):
            wipe(release_root)


@dataclass(frozen=True)
class LeftoverEnv:
    """A virtualenv under ``toolchains/envs/`` that no toolchain record uses: what a build left when it
    failed after making it (a ``ptxas==`` release that could not be fetched, a probe that failed) or was
    killed. Why listed: it holds ~540 MB, and no command showed it or removed it."""

    root: Path
    size: int
    problem: str | None
    """None when the virtualenv is complete, else why not (``is incomplete: ...``)."""

    @property
    def name(self) -> str:
        """``envs/<key>``: what ``ktriage toolchain remove`` takes to remove it."""
        return f"envs/{self.root.name}"


def leftover_envs() -> list[LeftoverEnv]:
    """The virtualenvs under ``envs/`` that no complete toolchain record uses, sorted by name (a build
    running now in another process shows here until it writes its record)."""
    envs = toolchains_dir() / "envs"
    if not envs.is_dir():
        return []
    used = {tc.env_root.resolve() for tc in list_toolchains() if tc.env_root is not None}
    return [
        LeftoverEnv(child, tree_size(child), frontend_problem(child))
        for child in sorted(envs.iterdir())
        if child.is_dir() and not child.name.startswith(".") and child.resolve() not in used
    ]


def find_leftover_env(name_or_spec: str) -> LeftoverEnv | None:
    """The leftover virtualenv named ``envs/<key>`` (as ``toolchain list`` shows it), or the one of a
    spec's Triton (``triton==3.4.0``, the spec whose build failed); None when there is none."""
    text = name_or_spec.strip()
    if text.startswith("envs/"):
        key = text.removeprefix("envs/")
    elif "=" in text:
        spec = parse_toolchain(text, check_files=False)
        if spec.triton_host or (spec.triton_wheel is not None and not spec.triton_wheel.is_file()):
            return None  # a host frontend is keyed by its interpreter; a wheel by its bytes: name it envs/<key>
        key = frontend_key(spec)[0]
    else:
        return None
    return next((env for env in leftover_envs() if env.root.name == key), None)


def remove_leftover_env(env: LeftoverEnv) -> None:
    """Remove a leftover virtualenv under its build lock (a build of it running now finishes first);
    refused when a toolchain recorded meanwhile uses it."""
    with home_lock(envs_dir() / f".{env.root.name}.lock"):
        if any(tc.env_root is not None and tc.env_root.resolve() == env.root.resolve() for tc in list_toolchains()):
            raise ToolchainError(
                f"{env.name} is no longer a leftover: a toolchain built meanwhile uses it",
                "see `ktriage toolchain list`; remove that toolchain to remove its virtualenv",
            )
        wipe(env.root)


def toolchain_size(tc: Toolchain) -> int:
    """Bytes on disk of the venv plus a downloaded ptxas (shared parts are counted for each user)."""
    total = tree_size(tc.env_root) if tc.env_root is not None and tc.env_root.is_dir() else 0
    if _is_release(tc.ptxas) and tc.ptxas.is_file():
        total += tc.ptxas.stat().st_size
    return total


def _resolve_ptxas(spec: ToolchainSpec, headline: ArchFacts, say: Progress) -> tuple[Path, bool]:
    if spec.ptxas_path is not None:
        if not spec.ptxas_path.is_file():
            raise ToolchainError(
                f"ptxas binary {spec.ptxas_path} does not exist", "check the path in the toolchain spec"
            )
        return spec.ptxas_path, False
    if spec.ptxas_version is not None:
        return ensure_ptxas_release(spec.ptxas_version, say), False
    return headline.ptxas, True


def _is_release(path: Path) -> bool:
    try:
        path.relative_to(releases_dir())
    except ValueError:
        return False
    return True


def _load(root: Path) -> Toolchain | None:
    data = read_json(root / MARKER)
    if data is None or data.get("format") != FORMAT:
        return None
    try:
        tc = Toolchain.from_json(data)
    except (KeyError, TypeError, msgspec.ValidationError, KtriageError):
        return None
    return tc if tc.python.exists() else None


def _opt_str(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _opt_path(text: str | None) -> Path | None:
    return None if text is None else Path(text)
