"""Kernel libraries from PyPI (e.g. ``liger-kernel==0.5.10``), installed once as plain directories.

Why a directory and not the toolchain's venv: one kernel library version must work with every
toolchain, and the toolchain's Triton must stay the toolchain's. So the package is installed with
``--no-deps`` into ``<home>/packages/<name>-<version>`` and the compile worker puts that directory on
``sys.path``. Installs are serialized with a file lock and published by an atomic rename, so two
processes asking at once neither corrupt nor duplicate it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from filelock import FileLock

from ktriage.errors import SpecError
from ktriage.home import home_subdir

_PINNED = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9][A-Za-z0-9.+!_-]*)\s*$")
_DONE = ".ktriage-complete"
# A recorded workload's source snapshot (ktriage.record.snapshot writes it): "snapshot:<sha256>".
SNAPSHOT_PREFIX = "snapshot:"


def snapshot_dir(requirement: str) -> Path:
    """Where the source snapshot named ``snapshot:<sha256>`` is materialized (nothing is written)."""
    digest = requirement[len(SNAPSHOT_PREFIX) :]
    if not re.fullmatch(r"[0-9a-f]{16,64}", digest):
        raise SpecError(f"source snapshot name {requirement!r} is malformed", "write it as snapshot:<sha256 hex>")
    return home_subdir("snapshots") / digest


def parse_requirement(requirement: str) -> tuple[str, str]:
    """``'liger-kernel==0.5.10'`` -> ``('liger-kernel', '0.5.10')``; only exact pins are allowed."""
    m = _PINNED.match(requirement)
    if not m:
        raise SpecError(
            f"package requirement {requirement!r} is not pinned to one version",
            "write it as name==version, e.g. liger-kernel==0.5.10 (a spec must name one exact kernel source)",
        )
    name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
    return name, m.group(2)


def package_dir(requirement: str) -> Path:
    """Where ``requirement`` is (or would be) installed; nothing is installed."""
    if requirement.startswith(SNAPSHOT_PREFIX):
        return snapshot_dir(requirement)
    name, version = parse_requirement(requirement)
    return home_subdir("packages") / f"{name}-{version}"


def is_installed(requirement: str) -> bool:
    return (package_dir(requirement) / _DONE).is_file()


ALLOW_SOURCE_BUILDS = "KTRIAGE_ALLOW_SOURCE_BUILDS"


def install_policy() -> list[str]:
    """Wheels only (``--only-binary :all:``): a source distribution runs its build script (arbitrary
    code) at install time, a wheel is unpacked. ``KTRIAGE_ALLOW_SOURCE_BUILDS=1`` lets a package
    that ships no wheel build from source (docs/security.md)."""
    if os.environ.get(ALLOW_SOURCE_BUILDS, "").strip().lower() in ("1", "true", "yes", "on"):
        return []
    return ["--only-binary", ":all:"]


def provided_by(requirement: str, installed: Mapping[str, str]) -> bool:
    """Whether ``installed`` (normalized name -> version, e.g. a ``triton=host`` interpreter's
    distributions) already has ``requirement`` at its pinned version. A source snapshot is never
    provided: it is the recorded kernel source itself."""
    if requirement.startswith(SNAPSHOT_PREFIX):
        return False
    name, version = parse_requirement(requirement)
    return installed.get(name) == version


# uv's words when the package index cannot be reached (no DNS, refused, offline mode, no route).
_NO_NETWORK = re.compile(
    r"dns error|failed to lookup address|connection refused|client error \(connect\)|"
    r"network (?:connectivity )?(?:is|was) disabled|offline|network is unreachable|"
    r"timed out|error sending request|tcp connect error",
    re.IGNORECASE,
)
# One failed install per process and target folder: every kernel input and toolchain asks again, and
# an offline index makes each ask wait for the resolver's retries.
_FAILED: dict[str, SpecError] = {}


def _install_error(requirement: str, target: Path, output: str) -> SpecError:
    tail = [line.strip() for line in output.strip().splitlines() if line.strip()][-3:]
    if _NO_NETWORK.search(output):
        return SpecError(
            f"could not install {requirement}: this machine cannot reach the package index ({' / '.join(tail)})",
            f"install it once on a machine with network (ktriage installs it to {target}) and copy that folder "
            f"to the same path here (under KTRIAGE_HOME), or compile with triton=host run by a Python that "
            f"already has {requirement.split('==')[0]}",
        )
    return SpecError(
        f"could not install {requirement}: {' / '.join(tail)}",
        f"check the version exists on PyPI (as a wheel: source builds need {ALLOW_SOURCE_BUILDS}=1); "
        f"on an offline machine copy {target} from one that has it",
    )


def ensure_package(requirement: str) -> Path:
    """Install ``requirement`` (pure Python, no dependencies) once; return the directory for sys.path.

    A ``snapshot:<sha256>`` requirement is a recorded workload's source snapshot: never installed,
    only found (reading the workload materializes it)."""
    target = package_dir(requirement)
    if requirement.startswith(SNAPSHOT_PREFIX):
        if not (target / _DONE).is_file():
            raise SpecError(
                f"the source snapshot {requirement} is not on this machine",
                "load the workload file that carries it (ktriage workload show W.json restores it)",
            )
        return target
    if (target / _DONE).is_file():
        return target
    failed = _FAILED.get(str(target))
    if failed is not None:
        raise SpecError(failed.problem, failed.fix)
    lock = FileLock(str(target) + ".lock")
    with lock:
        if (target / _DONE).is_file():
            return target
        staging = target.with_name(target.name + f".tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        cmd = [
            _uv(),
            "pip",
            "install",
            "--no-deps",
            "--quiet",
            *install_policy(),
            "--python",
            sys.executable,
            "--target",
            str(staging),
            requirement,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            failed = _FAILED[str(target)] = _install_error(requirement, target, proc.stderr or proc.stdout)
            raise SpecError(failed.problem, failed.fix)
        (staging / _DONE).write_text(requirement + "\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    return target


def find_module_file(module: str, roots: list[Path]) -> Path | None:
    """The ``.py`` file of a dotted module under one of ``roots`` (no import, no parent package run)."""
    parts = module.split(".")
    for root in roots:
        base = Path(root).joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def package_module_file(requirement: str, module: str) -> Path:
    """The file of ``module`` (dotted) inside the installed ``requirement``; installs it if needed."""
    root = ensure_package(requirement)
    found = find_module_file(module, [root])
    if found is None:
        raise SpecError(f"{requirement} has no module {module!r}", f"look inside {root} for the right module path")
    return found


def _uv() -> str:
    found = shutil.which("uv")
    if found:
        return found
    try:  # the `uv` wheel ships its binary
        from uv import find_uv_bin

        return find_uv_bin()
    except Exception as exc:  # pragma: no cover - depends on the machine
        raise SpecError("cannot find the `uv` executable", "pip install uv") from exc
