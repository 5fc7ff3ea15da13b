"""Toolchain spec strings (``triton==3.4.0,ptxas==12.8.93,ptxas-options=-O3``) and their canonical form.

A spec names *what* a toolchain is made of, not where it lives: a Triton frontend (a PyPI version or a
local wheel), a ptxas (the one Triton bundles, an ``nvidia-cuda-nvcc`` release, or a local binary) and
extra ptxas options. Parsing is pure apart from checking that named files exist, so that a typo is
reported before minutes of installing.

Grammar (see docs/toolchains.md)::

    spec    := item ("," item)*
    item    := "triton==" VERSION | "triton=" WHEEL_PATH | "triton=host"
             | "ptxas==" X.Y.Z   | "ptxas=" BINARY_PATH
             | "ptxas-options=" OPTIONS
    OPTIONS := shell words (shlex): "-O3 --register-usage-level=4"; quote a word that holds a comma.

``triton=host`` is the Triton that the interpreter running ktriage imports (no virtualenv is built:
a GPU host without network has its Python's Triton and nothing else); it is identified like the
others, by its exact version, a hash of its installed files' RECORD and the ptxas ``--version`` text.

Commas split items only outside quotes, so ``ptxas-options='-Xfoo=a,b' -O3`` keeps its comma.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version

from ktriage.errors import ToolchainError, worded

KNOWN_KEYS = ("triton", "ptxas", "ptxas-options")
_ITEM = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_-]*)\s*(==|=)\s*(.*?)\s*$", re.S)
_PTXAS_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")
_SAFE_WORD = re.compile(r"^[A-Za-z0-9_@%+=:./-]+$")

FrontendKind = Literal["pypi", "wheel", "host"]
HOST = "host"  # triton=host: the current interpreter's own Triton
PtxasKind = Literal["bundled", "release", "path"]


@dataclass(frozen=True)
class ToolchainSpec:
    """What a toolchain is made of. Exactly one of ``triton_version``/``triton_wheel``/``triton_host``
    is set; at most one of ``ptxas_version``/``ptxas_path`` (neither: Triton's bundled ptxas)."""

    triton_version: str | None = None
    triton_wheel: Path | None = None
    ptxas_version: str | None = None
    ptxas_path: Path | None = None
    ptxas_options: tuple[str, ...] = ()
    triton_host: bool = False
    """``triton=host``: the Triton of the interpreter that runs ktriage (``sys.executable``)."""

    @property
    def frontend_kind(self) -> FrontendKind:
        if self.triton_host:
            return "host"
        return "wheel" if self.triton_wheel is not None else "pypi"

    @property
    def is_release(self) -> bool:
        """A PyPI Triton with its bundled ptxas or a ptxas release: a bisect between two such
        toolchains has release candidates (a wheel, the host's Triton or a ptxas path has none)."""
        return self.frontend_kind == "pypi" and self.ptxas_path is None

    @property
    def ptxas_kind(self) -> PtxasKind:
        if self.ptxas_path is not None:
            return "path"
        return "release" if self.ptxas_version is not None else "bundled"

    def __str__(self) -> str:
        """The canonical form: fixed item order, absolute paths, options re-quoted. Two specs that
        mean the same toolchain print the same, so the string can be used as a lookup key."""
        items = []
        if self.triton_host:
            items.append(f"triton={HOST}")
        elif self.triton_wheel is not None:
            items.append(f"triton={_quote(str(self.triton_wheel))}")
        else:
            items.append(f"triton=={self.triton_version}")
        if self.ptxas_path is not None:
            items.append(f"ptxas={_quote(str(self.ptxas_path))}")
        elif self.ptxas_version is not None:
            items.append(f"ptxas=={self.ptxas_version}")
        if self.ptxas_options:
            items.append("ptxas-options=" + " ".join(_quote(o) for o in self.ptxas_options))
        return ",".join(items)


def parse_toolchain(text: str, *, check_files: bool = True) -> ToolchainSpec:
    """Parse a spec string. Relative paths are resolved against the current directory.

    ``check_files=False`` skips the existence checks (used when reloading a recorded toolchain whose
    wheel may have been deleted since it was installed).
    """
    if not text or not text.strip():
        raise ToolchainError("empty toolchain spec", "write e.g. triton==3.4.0 or triton==3.4.0,ptxas==12.8.93")
    items: list[tuple[str, str, str]] = []  # (key, "==" or "=", value) as written
    for raw in _split_items(text):
        if not raw.strip():
            continue
        m = _ITEM.match(raw)
        if m is None:
            raise ToolchainError(
                f"toolchain spec item {raw.strip()!r} is not KEY==VERSION or KEY=VALUE (in {text!r})",
                "write items like triton==3.4.0, ptxas==12.8.93, ptxas=/path/to/ptxas, ptxas-options=-O3",
            )
        key = m.group(1).lower().replace("_", "-")
        if key not in KNOWN_KEYS:
            close = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ToolchainError(
                f"unknown toolchain spec key {m.group(1)!r} in {text!r}",
                f"{hint}known keys: {', '.join(KNOWN_KEYS)}",
            )
        items.append((key, m.group(2), m.group(3)))
    values: dict[str, tuple[str, str]] = {}
    for key, op, value in items:
        if key in values and key in _ONE_PER_TOOLCHAIN and values[key] != (op, value):
            raise _several_toolchains(text, items, key)
        if key in values:
            raise ToolchainError(f"toolchain spec key {key!r} given twice in {text!r}", "give each key once")
        values[key] = (op, value)

    if "triton" not in values:
        raise ToolchainError(
            f"toolchain spec {text!r} names no Triton frontend",
            "add triton==VERSION (PyPI), triton=path/to/triton.whl or triton=host (this Python's Triton), e.g. triton==3.4.0,ptxas==12.8.93",
        )
    host = values["triton"] == ("=", HOST)
    triton_version, triton_wheel = (None, None) if host else _parse_triton(*values["triton"], check_files=check_files)
    ptxas_version: str | None = None
    ptxas_path: Path | None = None
    if "ptxas" in values:
        ptxas_version, ptxas_path = _parse_ptxas(*values["ptxas"], check_files=check_files)
    options: tuple[str, ...] = ()
    if "ptxas-options" in values:
        options = _parse_options(*values["ptxas-options"])
    return ToolchainSpec(triton_version, triton_wheel, ptxas_version, ptxas_path, options, triton_host=host)


# two different values of one of these name two toolchains, not a typo within one
_ONE_PER_TOOLCHAIN = ("triton", "ptxas")


def _several_toolchains(text: str, items: list[tuple[str, str, str]], key: str) -> ToolchainError:
    """``triton==3.3.1,triton==3.4.0`` (or two ptxas): the toolchains to compare written as one spec. Why
    its own message: "key 'triton' given twice, give each key once" sent the user to drop one of the two
    toolchains they meant, when the fix is to pass them as a list. The suggested split: each triton item
    starts a toolchain (the items before the first join it); with one Triton and several ptxas, each ptxas
    is a toolchain with the spec's other items."""
    joined = [f"{k}{op}{v}" for k, op, v in items]
    if len({(op, v) for k, op, v in items if k == "triton"}) > 1:
        key = "triton"  # several Tritons decide the split, whichever key repeated first
        specs: list[list[str]] = [[]]
        for (k, _op, _v), item in zip(items, joined, strict=True):
            if k == "triton" and any(i.startswith("triton=") for i in specs[-1]):
                specs.append([])
            specs[-1].append(item)
    else:
        shared = [item for (k, _op, _v), item in zip(items, joined, strict=True) if k != key]
        specs = [shared + [item] for (k, _op, _v), item in zip(items, joined, strict=True) if k == key]
    split = [",".join(spec) for spec in specs]
    return ToolchainError(
        f"toolchain spec {text!r} names {len(split)} toolchains ({key} twice): a spec is one toolchain",
        worded(lambda o: f"give several as a list: {o('toolchains', '-t', split)}"),
    )


def _parse_triton(op: str, value: str, *, check_files: bool) -> tuple[str | None, Path | None]:
    if op == "==":
        return _exact_version(value, "triton"), None
    path = _path_value(value)
    if _looks_like_version(value):
        raise ToolchainError(
            f"triton={value} reads as a file path, but looks like a version",
            f"use triton=={value} for a PyPI release, or give the path of a .whl file",
        )
    if path.suffix != ".whl":
        raise ToolchainError(
            f"triton={value}: a local Triton frontend must be a wheel file (.whl)",
            "build one with `pip wheel --no-deps ./triton -w dist/` (or python setup.py bdist_wheel) and pass its path, "
            "or write triton=host for the Triton this Python imports",
        )
    if check_files and not path.is_file():
        raise ToolchainError(
            f"Triton wheel {path} does not exist", "check the path (relative paths start at the current directory)"
        )
    return None, path


def _parse_ptxas(op: str, value: str, *, check_files: bool) -> tuple[str | None, Path | None]:
    if op == "==":
        if not _PTXAS_RELEASE.match(value):
            raise ToolchainError(
                f"ptxas=={value} is not a ptxas release number",
                "write the full CUDA release as the nvidia-cuda-nvcc wheels number it, e.g. ptxas==12.8.93 or ptxas==13.0.88",
            )
        return value, None
    path = _path_value(value)
    if _looks_like_version(value) and not path.exists():
        raise ToolchainError(
            f"ptxas={value} reads as a file path, but looks like a version",
            f"use ptxas=={value} for an nvidia-cuda-nvcc release, or give the path of a ptxas binary",
        )
    if check_files:
        _check_ptxas_binary(path)
    return None, path


_PTXAS_EXAMPLE = "e.g. ptxas=/usr/local/cuda/bin/ptxas, or ptxas==12.8.93 for an nvidia-cuda-nvcc release"


def _check_ptxas_binary(path: Path) -> None:
    """``ptxas=PATH`` must name the ptxas executable itself. A folder gets the binary inside it
    suggested; a file that cannot be executed is called not a ptxas (``chmod +x`` is advised only for a
    file named ptxas: making an arbitrary file executable is never the fix)."""
    if path.is_dir():
        inside = next((p for p in (path / "bin" / "ptxas", path / "ptxas") if p.is_file()), None)
        hint = f"give the binary: ptxas={inside}" if inside else f"give the ptxas binary itself, {_PTXAS_EXAMPLE}"
        raise ToolchainError(f"ptxas={path} is a directory, not a ptxas binary", hint)
    if not path.is_file():
        raise ToolchainError(f"ptxas binary {path} does not exist", f"check the path, {_PTXAS_EXAMPLE}")
    if not os.access(path, os.X_OK):
        if path.name.startswith("ptxas"):
            raise ToolchainError(f"ptxas binary {path} is not executable", f"chmod +x {path}")
        raise ToolchainError(
            f"ptxas={path} is not an executable ptxas",
            f"give the path of NVIDIA's ptxas assembler (CUDA's bin/ptxas), {_PTXAS_EXAMPLE}",
        )


def _parse_options(op: str, value: str) -> tuple[str, ...]:
    if op != "=":
        raise ToolchainError(
            f"write ptxas-options={value} (one '='), not ptxas-options=={value}", "use ptxas-options=-O3 ..."
        )
    try:
        words = tuple(shlex.split(value))
    except ValueError as exc:
        raise ToolchainError(
            f"ptxas-options={value}: {exc}", "close the quote; quote only words that hold a comma or space"
        ) from None
    if not words:
        raise ToolchainError(
            "ptxas-options= is empty", "drop the item or give options, e.g. ptxas-options=--register-usage-level=4"
        )
    return words


def _exact_version(value: str, what: str) -> str:
    """The release as one spelling: PEP 440's normal form, its release padded to three numbers
    (``3.6`` is ``3.6.0`` to pip, and every Triton release has three). Why: ``triton==3.6`` built a
    second virtualenv (``envs/triton-3.6``, hundreds of MB) for the toolchain of ``triton==3.6.0``,
    whose one record then pointed at whichever venv was used last."""
    try:
        version = Version(value)
    except InvalidVersion:
        raise ToolchainError(
            f"{what}=={value} is not a version",
            f"give one exact release, e.g. {what}==3.4.0 (see `pip index versions {what}`)",
        ) from None
    text = str(version)
    if len(version.release) < 3:
        release = ".".join(str(n) for n in version.release)
        padded = ".".join(str(n) for n in (*version.release, 0, 0)[:3])
        text = text.replace(release, padded, 1)  # the release is where the normal form starts (after an epoch)
    return text


def _looks_like_version(value: str) -> bool:
    return re.fullmatch(r"\d+(\.\d+)+([a-z]+\d*)?", value) is not None


def _path_value(value: str) -> Path:
    if value[:1] in "'\"":
        words = shlex.split(value)
        value = words[0] if len(words) == 1 else value
    return Path(os.path.abspath(Path(value).expanduser()))


def _split_items(text: str) -> list[str]:
    """Split on commas outside single/double quotes (options may quote a word holding a comma)."""
    items: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == ",":
            items.append("".join(current))
            current = []
            continue
        current.append(ch)
    items.append("".join(current))
    return items


def _quote(word: str) -> str:
    """Shell-quote a word unless it is plainly safe; unlike shlex.quote, commas are quoted too."""
    if _SAFE_WORD.match(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"
