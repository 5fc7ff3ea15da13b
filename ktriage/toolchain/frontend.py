"""The Triton frontend of a toolchain: one virtualenv per Triton version (or wheel), shared by every
toolchain that differs only in ptxas or ptxas options, so trying five ptxas releases costs one venv.

Layout: ``<home>/toolchains/envs/<key>/`` is a uv virtualenv; ``frontend.json`` inside it is written
last and atomically, so its presence means "complete".

``triton=host`` builds no virtualenv: its folder ``envs/host-triton-<version>-<hash>/`` holds only
``frontend.json`` (naming the interpreter and its Triton's tool folder) and the probed facts. The
hash covers the interpreter's path and the RECORD of its installed Triton (every file's sha256), so
a Triton upgraded in place is another frontend, and nothing is written into the interpreter's
site-packages.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import msgspec
from packaging.version import InvalidVersion, Version

from ktriage.errors import ToolchainError
from ktriage.home import home_lock, home_subdir
from ktriage.insitu.environment import compile_environment
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.schema.toolchain import FactsFile, FrontendMarker
from ktriage.toolchain.installer import (
    Progress,
    is_missing_version,
    no_progress,
    read_json,
    release_not_installed,
    run_uv,
    sha256_file,
    uv_failure,
    wipe,
    write_json_atomic,
)
from ktriage.toolchain.ptxas import version_from_text
from ktriage.toolchain.spec import ToolchainSpec
from ktriage.toolchain.supported import SUPPORTED_TRITON

MARKER = "frontend.json"
FACTS = "ktriage-facts.json"
FACTS_FORMAT = 1
PROBE_SCRIPT = Path(__file__).resolve().parent.parent / "insitu" / "probe.py"
# Always known: sm_80 (every Triton 3.x builds it; its process also measures order sensitivity) and
# sm_90 (the headline arch that names a toolchain). Other archs are probed when first asked for.
PROBED_ARCHS = (80, 90)
# Where Triton wheels keep their CUDA tools: 3.x under backends/nvidia/bin, 2.x under third_party/cuda/bin.
_TOOL_DIRS = ("triton/backends/nvidia/bin", "triton/third_party/cuda/bin")


@dataclass(frozen=True)
class Frontend:
    """A built frontend virtualenv and the CUDA tools its Triton wheel bundles."""

    key: str
    root: Path
    python: Path
    triton_version: str
    wheel_sha256: str | None
    bundled_ptxas: Path
    bundled_ptxas_blackwell: Path | None
    cuobjdump: Path
    nvdisasm: Path | None
    host_sha256: str | None = None
    """``triton=host``: the hash of the interpreter and its installed Triton (None for a virtualenv)."""


def envs_dir() -> Path:
    path = home_subdir("toolchains").resolve() / "envs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def frontend_key(spec: ToolchainSpec) -> tuple[str, str | None]:
    """The venv folder name for a spec's frontend, and the wheel's sha256 (None for PyPI)."""
    if spec.triton_wheel is None:
        return f"triton-{spec.triton_version}", None
    sha = _wheel_sha256(spec.triton_wheel)
    version = _wheel_version(spec.triton_wheel)
    return f"triton-{_safe(version)}-wheel-{sha[:12]}", sha


def ensure_frontend(spec: ToolchainSpec, progress: Progress = no_progress) -> Frontend:
    """Return the spec's frontend venv, building it (once, under a lock) if needed."""
    if spec.triton_host:
        return host_frontend(Path(sys.executable), progress)
    if spec.triton_wheel is None and spec.triton_version is not None and not _supported_version(spec.triton_version):
        raise _too_old_error(spec.triton_version)  # before a virtualenv is built (Triton 2.0 brings torch: 4 GB)
    key, sha = frontend_key(spec)
    root = envs_dir() / key
    built = _load(root)
    if built is not None:
        return built
    with home_lock(envs_dir() / f".{key}.lock"):
        built = _load(root)  # another process may have finished it while we waited
        if built is not None:
            return built
        return _build(spec, key, sha, root, progress)


def _supported_version(version: str) -> bool:
    """A Triton release ktriage can compile with: 3.2 or newer (insitu/worker.py refuses older ones).
    A version that is no version number is left to the index to refuse."""
    try:
        return Version(version) >= Version("3.2")
    except InvalidVersion:
        return True


def load_frontend(root: Path) -> Frontend | None:
    """A complete frontend at ``root`` or None."""
    return _load(root)


def frontend_problem(root: Path) -> str | None:
    """What keeps the frontend at ``root`` from loading, as the end of a sentence about it, or None
    when it loads. Why: a toolchain whose virtualenv is there but incomplete (a build killed before
    its ``frontend.json``, files removed) was reported as "gone", and listed as if it worked."""
    found = _inspect(root)
    return found if isinstance(found, str) else None


def _build(spec: ToolchainSpec, key: str, sha: str | None, root: Path, progress: Progress) -> Frontend:
    wipe(root)  # leftovers of a killed build
    label = f"triton=={spec.triton_version}" if spec.triton_wheel is None else str(spec.triton_wheel)
    progress(f"creating virtualenv for {label}")
    proc = run_uv(["venv", "--quiet", "--python", sys.executable, str(root)], what="create a virtualenv")
    if proc.returncode != 0:
        wipe(root)
        raise uv_failure(
            proc, what=f"create a virtualenv at {root}", fix="check that uv can create virtualenvs: uv venv /tmp/x"
        )
    python = root / "bin" / "python"
    progress(f"installing {label}")
    requirement = f"triton=={spec.triton_version}" if spec.triton_wheel is None else str(spec.triton_wheel)
    # setuptools: Triton <= 3.2 imports it at run time (bare uv virtualenvs do not have it)
    proc = run_uv(
        ["pip", "install", "--quiet", "--python", str(python), requirement, "setuptools"], what=f"install {label}"
    )
    if proc.returncode != 0:
        wipe(root)
        if spec.triton_wheel is None and is_missing_version(proc):
            raise release_not_installed(
                proc,
                key="triton",
                version=str(spec.triton_version),
                package="triton",
                example="triton==3.4.0",
                suggest=_supported_version,
            )
        raise uv_failure(proc, what=f"install {label}", fix="check the network / index access, or the wheel file")
    progress(f"checking {label}")
    version = _installed_triton_version(python)
    tools = _tool_dir(root)
    if tools is None or not (tools / "ptxas").is_file():
        wipe(root)
        raise ToolchainError(
            f"{label} installed, but it bundles no ptxas (looked for {', '.join(_TOOL_DIRS)})",
            "use a Triton wheel built with its NVIDIA backend (PyPI wheels are), or give ptxas=... and a wheel that has cuobjdump",
        )
    data = {
        "key": key,
        "triton_version": version,
        "wheel_sha256": sha,
        "requirement": requirement,
        "tools_dir": str(tools.relative_to(root)),
        "python_version": f"{sys.version_info.major}.{sys.version_info.minor}",
    }
    write_json_atomic(root / MARKER, data)
    loaded = _load(root)
    assert loaded is not None
    return loaded


# Run in the host interpreter: where its Triton is and what it is, without importing it (an import
# of Triton on a GPU host may take seconds and touch the driver). Stdlib only.
_HOST_PROBE = """
import hashlib, importlib.metadata as m, importlib.util, json, os, sys
spec = importlib.util.find_spec("triton")
if spec is None or not spec.submodule_search_locations:
    print(json.dumps({"error": "no module named triton"})); sys.exit()
pkg = os.path.realpath(list(spec.submodule_search_locations)[0])
out = {"package_dir": pkg, "python_version": "%d.%d" % sys.version_info[:2]}
for name in ("triton", "pytorch-triton", "triton-nightly"):
    try:
        dist = m.distribution(name)
    except m.PackageNotFoundError:
        continue
    out["version"] = dist.version
    record = dist.read_text("RECORD")
    if record:
        out["record_sha256"] = hashlib.sha256(record.encode()).hexdigest()
    break
if "record_sha256" not in out:  # a source install without RECORD: its files' names, sizes and times
    h = hashlib.sha256()
    for root, dirs, files in os.walk(pkg):
        dirs.sort()
        for f in sorted(files):
            st = os.stat(os.path.join(root, f))
            h.update(("%s %d %d\\n" % (os.path.relpath(os.path.join(root, f), pkg), st.st_size, st.st_mtime_ns)).encode())
    out["record_sha256"] = h.hexdigest()
print(json.dumps(out))
"""


def host_frontend(python: Path, progress: Progress = no_progress) -> Frontend:
    """``triton=host``: the Triton that ``python`` imports, as a frontend (no virtualenv is built).

    Cheap after the first call for the same installed Triton: one short probe of the interpreter (no
    Triton import), then the recorded folder. ``python`` is kept as given, not resolved: a venv's
    python is a link to the base interpreter, and only the link's path sees the venv's packages."""
    python = Path(os.path.abspath(python))
    info = _probe_host(python)
    version = str(info.get("version") or "")
    package_dir = str(info["package_dir"])
    tools = next(
        (Path(package_dir).parent / rel for rel in _TOOL_DIRS if (Path(package_dir).parent / rel / "ptxas").is_file()),
        None,
    )
    if not version or tools is None:
        what = "has no installed distribution (no version)" if not version else f"bundles no ptxas under {package_dir}"
        raise ToolchainError(
            f"triton=host: the Triton of {python} {what}",
            "install Triton as a package (pip install triton), or name a toolchain with triton==VERSION",
        )
    sha = hashlib.sha256("\0".join((str(python), package_dir, str(info["record_sha256"]))).encode()).hexdigest()
    key = f"host-triton-{_safe(version)}-{sha[:12]}"
    root = envs_dir() / key
    built = _load(root)
    if built is not None:
        return built
    with home_lock(envs_dir() / f".{key}.lock"):
        built = _load(root)
        if built is not None:
            return built
        progress(f"using the Triton {version} of {python} (triton=host)")
        write_json_atomic(
            root / MARKER,
            {
                "key": key,
                "kind": "host",
                "python": str(python),
                "triton_version": version,
                "host_sha256": sha,
                "wheel_sha256": None,
                "tools_dir": str(tools),
                "package_dir": info["package_dir"],
                "python_version": info.get("python_version"),
            },
        )
        loaded = _load(root)
        assert loaded is not None
        return loaded


# Run in the host interpreter: every installed distribution, as normalized name -> version. Stdlib only.
_PACKAGES_PROBE = """
import importlib.metadata as m, json, re
out = {}
for dist in m.distributions():
    name = dist.metadata["Name"]
    if name:
        out.setdefault(re.sub(r"[-_.]+", "-", name).lower(), dist.version)
print(json.dumps(out))
"""


@functools.lru_cache(maxsize=8)
def host_packages(python: Path) -> dict[str, str]:
    """The distributions ``python`` has installed (normalized name -> version), as its compile worker
    sees them (same environment). Why: a ``triton=host`` interpreter IS the environment the recorded
    program ran in, so the kernel modules' imports (``packaging``...) are already there, and a GPU host
    often has no network to install them again. Probed once per interpreter and process; an
    interpreter that cannot be asked has none (the compile then names what is missing)."""
    try:
        proc = subprocess.run(
            [str(python), "-c", _PACKAGES_PROBE],
            capture_output=True,
            text=True,
            timeout=120,
            env=compile_environment(os.environ),
        )
        found = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        found = {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _probe_host(python: Path) -> JSONObject:
    """What :data:`_HOST_PROBE` says of ``python``'s Triton; a ToolchainError when it has none."""
    try:
        proc = subprocess.run(
            [str(python), "-c", _HOST_PROBE],
            capture_output=True,
            text=True,
            timeout=120,
            env=compile_environment(os.environ),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(
            f"triton=host: cannot run {python}: {exc}", "run ktriage with a Python that has Triton"
        ) from None
    try:
        data: JSONObject = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    except (json.JSONDecodeError, IndexError):
        data = {}
    if "package_dir" not in data:
        why = data.get("error") or (proc.stderr or proc.stdout).strip()[-300:] or f"exit {proc.returncode}"
        raise ToolchainError(
            f"triton=host: {python} cannot import Triton ({why})",
            "run ktriage with the Python that has Triton (python3 -m ktriage ...), or name a "
            "toolchain ktriage installs: triton==VERSION",
        )
    return data


def _load(root: Path) -> Frontend | None:
    found = _inspect(root)
    return found if isinstance(found, Frontend) else None  # damaged or incomplete: treat as not built


def _inspect(root: Path) -> Frontend | str:
    """The frontend at ``root``, or what keeps it from loading (:func:`frontend_problem`): one chain of
    checks for loading and for saying why not."""
    try:
        st = (root / MARKER).stat()
    except OSError:
        return "is gone" if not root.is_dir() else f"is incomplete: it has no {MARKER} (its build was interrupted)"
    data = _parse_marker(str(root), st.st_mtime_ns, st.st_size)
    if data is None:
        return f"is damaged: its {MARKER} cannot be read"
    host = data.kind == "host"
    tools = root / data.tools_dir  # absolute for a host frontend (the join keeps it)
    python = Path(data.python) if host and data.python is not None else root / "bin" / "python"
    if not python.exists():
        return f"is damaged: its interpreter {python} is missing"
    if not (tools / "ptxas").is_file():
        return f"is damaged: its Triton's bundled ptxas {tools / 'ptxas'} is missing"
    blackwell = tools / "ptxas-blackwell"
    nvdisasm = tools / "nvdisasm"
    return Frontend(
        key=data.key,
        root=root,
        python=python,
        triton_version=data.triton_version,
        wheel_sha256=data.wheel_sha256,
        bundled_ptxas=tools / "ptxas",
        bundled_ptxas_blackwell=blackwell if blackwell.is_file() else None,
        cuobjdump=tools / "cuobjdump",
        nvdisasm=nvdisasm if nvdisasm.is_file() else None,
        host_sha256=data.host_sha256 if host else None,
    )


@functools.lru_cache(maxsize=64)
def _parse_marker(root_text: str, _mtime: int, _size: int) -> FrontendMarker | None:
    """A venv's marker, parsed once per file state, as its facts are (every compile and analysis
    asks for the toolchain's assembler: 60 reads of the same file in a warm explain)."""
    raw = read_json(Path(root_text) / MARKER)
    if raw is None:
        return None
    try:
        return msgspec.convert(raw, FrontendMarker)
    except msgspec.ValidationError:
        return None  # damaged: treat as not built


def _installed_triton_version(python: Path) -> str:
    # PyPI wheels are "triton"; PyTorch's nightly builds ship the same package as "pytorch-triton".
    code = (
        "import importlib.metadata as m\n"
        "for d in ('triton', 'pytorch-triton', 'triton-nightly'):\n"
        "    try:\n        print(m.version(d)); break\n"
        "    except m.PackageNotFoundError:\n        pass\n"
    )
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ToolchainError(
            f"triton is not importable in {python}: {proc.stderr.strip()[-500:]}",
            "remove the toolchain and add it again",
        )
    return proc.stdout.strip()


def _tool_dir(root: Path) -> Path | None:
    for site in sorted((root / "lib").glob("python*/site-packages")):
        for rel in _TOOL_DIRS:
            if (site / rel).is_dir():
                return site / rel
    return None


def _wheel_sha256(path: Path) -> str:
    """sha256 of a wheel, hashed once per process and file state (a Triton wheel is ~150 MB)."""
    st = path.stat()
    return _sha_cached(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _sha_cached(path: str, _size: int, _mtime: int) -> str:
    return sha256_file(Path(path))


def _wheel_version(path: Path) -> str:
    """Version from a wheel file name (``triton-3.4.0+gitabc-cp311-...whl``)."""
    parts = path.name.split("-")
    if len(parts) < 5 or parts[0].lower() not in ("triton", "pytorch_triton", "triton_nightly"):
        raise ToolchainError(
            f"{path.name} is not a Triton wheel file name (expected triton-VERSION-PYTAG-ABITAG-PLATFORM.whl)",
            "pass the wheel as built, without renaming it",
        )
    return parts[1]


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]", "_", text)


# ----------------------------------------------------------------------------- what Triton does
@dataclass(frozen=True)
class ArchFacts:
    """How this frontend's Triton assembles for one arch, read from a real compile (insitu/probe.py):
    the ptxas binary it picks, that binary's version, and the options it passes to it."""

    ptxas: Path
    ptxas_version: str
    ptxas_version_text: str
    options: tuple[str, ...]
    ptx_version: str | None

    @property
    def ptxas_name(self) -> str:
        return self.ptxas.name


@dataclass(frozen=True)
class FrontendFacts:
    """Facts of a frontend that no table of ktriage's holds, measured once per virtualenv.

    ``order_sensitive``: the same kernel compiles differently as the process's first compile than
    later (Triton 3.2/3.3 set ``nvptx-short-ptr`` only in their PTX step); compile workers of such a
    frontend compile a priming kernel first, so every kernel gets the steady-state result.
    ``archs``: per compute capability, the ArchFacts or the one-line reason it cannot build for it.
    """

    order_sensitive: bool
    archs: dict[int, ArchFacts | str]

    def arch(self, cc: int) -> ArchFacts:
        facts = self.archs.get(cc)
        if isinstance(facts, ArchFacts):
            return facts
        raise ToolchainError(
            f"this Triton cannot build for sm_{cc}: {facts or 'not probed'}",
            "pick a Triton release that supports the arch (see the supported-versions table in docs/toolchains.md)",
        )


def triton_options(argv: Iterable[str]) -> tuple[str, ...]:
    """The options of a recorded ptxas command line: everything but the binary, ``--gpu-name``, the
    input and ``-o OUTPUT`` (Triton's make_cubin puts input, ``-o`` and output last)."""
    words = list(argv)[1:]
    if len(words) >= 3 and words[-2] == "-o":
        words = words[:-3]
    return tuple(w for w in words if not w.startswith("--gpu-name"))


def frontend_facts(frontend: Frontend, ccs: Iterable[int] = PROBED_ARCHS) -> FrontendFacts:
    """The frontend's facts for ``ccs``, probing (once, under the venv's lock) what is not known yet.

    Each arch is probed in its own process (~1.5 s, in parallel): an LLVM that cannot target an arch
    may abort the whole process (Triton 3.2 on sm_120), and that must cost only that arch."""
    wanted = sorted(set(ccs) | set(PROBED_ARCHS))
    known = _read_facts(frontend.root)
    if known is not None and all(cc in known.archs for cc in wanted):
        return known
    with home_lock(envs_dir() / f".{frontend.key}.facts.lock"):
        known = _read_facts(frontend.root)
        raw = read_json(frontend.root / FACTS) if known is not None else None
        data: JSONObject = raw if raw is not None else {"format": FACTS_FORMAT, "archs": {}}
        found = data.get("archs")
        archs: JSONObject = dict(found) if isinstance(found, Mapping) else {}
        data["archs"] = archs
        missing = [cc for cc in wanted if str(cc) not in archs]
        with ThreadPoolExecutor(max_workers=len(missing) or 1) as pool:
            for cc, (probed, order_sensitive) in zip(missing, pool.map(lambda cc: _probe(frontend, cc), missing)):
                archs[str(cc)] = probed
                if cc == 80:
                    data["order_sensitive"] = order_sensitive
        write_json_atomic(frontend.root / FACTS, data)
    facts = _read_facts(frontend.root)
    assert facts is not None
    return facts


def _too_old_error(version: str) -> ToolchainError:
    """The probe's worker refused this Triton as older than 3.2 (insitu/worker.py: its JIT differs). The fix
    said to remove and re-add the toolchain, which builds the same too-old Triton again: it names the
    releases that work now."""
    return ToolchainError(
        f"Triton {version} is older than ktriage supports: ktriage compiles with Triton 3.2 and newer",
        f"pick Triton 3.2 or newer: a supported release ({', '.join(f'triton=={v}' for v in SUPPORTED_TRITON)}; "
        "docs/toolchains.md)",
    )


def _probe(frontend: Frontend, cc: int) -> tuple[JSONValue, JSONValue]:
    """Run insitu/probe.py for one arch: the arch's entry of the facts file and the probe's
    ``order_sensitive``; a crash of the process is that arch's error, not ours."""
    env = compile_environment(os.environ)
    try:
        proc = subprocess.run(
            [str(frontend.python), str(PROBE_SCRIPT), str(cc)], capture_output=True, text=True, env=env, timeout=600
        )
    except subprocess.TimeoutExpired:
        raise ToolchainError(
            f"probing Triton {frontend.triton_version} for sm_{cc} took over 600 s",
            "check the machine's load and retry",
        ) from None
    try:
        data: JSONValue = json.loads(proc.stdout) if proc.returncode == 0 else {}
    except json.JSONDecodeError:
        data = {}
    archs = data.get("archs") if isinstance(data, Mapping) else None
    entry = archs.get(str(cc)) if isinstance(archs, Mapping) else None
    order_sensitive = data.get("order_sensitive") if isinstance(data, Mapping) else None
    if entry is None:
        tail = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()][-2:]
        entry = {"error": f"the probe compile crashed (exit {proc.returncode}): {' / '.join(tail)}"}
        order_sensitive = None
    if cc == 80 and isinstance(entry, Mapping) and "error" in entry:
        if str(entry["error"]).startswith("version:") or not _supported_version(
            frontend.triton_version
        ):  # the worker's WorkerError("version", ...): too old
            raise _too_old_error(frontend.triton_version)
        raise ToolchainError(
            f"Triton {frontend.triton_version} could not compile ktriage's probe kernel for sm_80: {entry['error']}",
            f"remove and re-add the toolchain (ktriage toolchain remove triton=={frontend.triton_version}); "
            "if it persists, this Triton build cannot compile for NVIDIA targets",
        )
    return entry, order_sensitive


def _read_facts(root: Path) -> FrontendFacts | None:
    """The facts file of a venv, parsed once per file state (every compile asks for them)."""
    try:
        st = (root / FACTS).stat()
    except OSError:
        return None
    return _parse_facts(str(root), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _parse_facts(root_text: str, _mtime: int, _size: int) -> FrontendFacts | None:
    root = Path(root_text)
    raw = read_json(root / FACTS)
    if raw is None or raw.get("format") != FACTS_FORMAT:
        return None
    try:
        data = msgspec.convert(raw, FactsFile)
    except msgspec.ValidationError:
        return None  # damaged: probed again
    archs: dict[int, ArchFacts | str] = {}
    for cc, facts in data.archs.items():
        if facts.error is not None:
            archs[int(cc)] = facts.error
            continue
        archs[int(cc)] = ArchFacts(
            ptxas=Path(facts.ptxas_argv[0]),
            ptxas_version=version_from_text(facts.ptxas_version_text) or "unknown",
            ptxas_version_text=facts.ptxas_version_text,
            options=triton_options(facts.ptxas_argv),
            ptx_version=facts.ptx_version,
        )
    return FrontendFacts(order_sensitive=bool(data.order_sensitive), archs=archs)
