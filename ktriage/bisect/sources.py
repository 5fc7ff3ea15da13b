"""Candidate sources: the ordered list first-known-good .. last-known-bad that a bisect walks.

Three kinds, one shape (a list of ``Candidate``): PyPI releases of a package (each a toolchain, or a
kernel package version with the toolchain fixed), ptxas releases with the frontend fixed, and
commits of a local git repository. Listing is separate from testing so that a user sees (and a
test checks) the exact range before anything is built.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version

from ktriage.bisect import gitrepo
from ktriage.bisect.candidate import Candidate
from ktriage.errors import KtriageError, joined, option, spelled, worded
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.toolchain.releases import nvcc_package
from ktriage.toolchain.spec import parse_toolchain

SourceKind = Literal["pypi", "ptxas", "git"]


@dataclass(frozen=True)
class Source:
    """What ``--source`` named: ``pypi:<package>``, ``ptxas`` or ``git:<path>``."""

    kind: SourceKind
    package: str | None = None
    repo: Path | None = None

    def __str__(self) -> str:
        if self.kind == "pypi":
            return f"pypi:{self.package}"
        if self.kind == "git":
            return f"git:{self.repo}"
        return "ptxas"


def parse_source(text: str) -> Source:
    """Parse ``--source``; a typo is reported with the three accepted forms."""
    forms = "pypi:triton (or pypi:<package>), ptxas, git:PATH"
    t = text.strip()
    if t == "ptxas":
        return Source("ptxas")
    kind, sep, rest = t.partition(":")
    if not sep or not rest:
        raise KtriageError(
            worded(lambda o: f"{o('source', '--source', text)} is not one of the known forms"), f"write one of: {forms}"
        )
    if kind == "pypi":
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", rest):
            raise KtriageError(
                worded(lambda o: f"{o('source', '--source', text)}: {rest!r} is not a package name"),
                worded(
                    lambda o: (
                        f"e.g. {o('source', '--source', 'pypi:triton')} or {o('source', '--source', 'pypi:liger-kernel')}"
                    )
                ),
            )
        return Source("pypi", package=rest.lower())
    if kind == "git":
        return Source("git", repo=gitrepo.repo_root(Path(rest).expanduser().resolve()))
    raise KtriageError(
        worded(lambda o: f"{o('source', '--source', text)}: unknown kind {kind!r}"), f"write one of: {forms}"
    )


# --------------------------------------------------------------------------- PyPI versions


def list_pypi_versions(package: str, *, pre: bool = False) -> list[str]:
    """Every version of ``package`` that ``pip index versions`` lists (the configured index only).

    pip is the ordinary client: it honours the user's index settings and lists only releases that
    have a distribution for this interpreter and platform, which is what can be installed here.
    """
    pips = [[sys.executable, "-m", "pip"]]
    if shutil.which("pip"):
        pips.append([str(shutil.which("pip"))])
    last_error = ""
    for pip in pips:
        try:
            proc = subprocess.run(
                [*pip, "index", "versions", package, *(["--pre"] if pre else [])],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            last_error = str(exc)
            continue
        m = re.search(r"Available versions:\s*(.+)", proc.stdout)
        if m:
            return [v.strip() for v in m.group(1).split(",") if v.strip()]
        last_error = (
            (proc.stderr or proc.stdout).strip().splitlines()[-1:]
            and (proc.stderr or proc.stdout).strip().splitlines()[-1]
            or ""
        )
    raise KtriageError(
        f"cannot list the versions of {package} on the package index ({last_error or 'no answer'})",
        f"check the package name and index access: `pip index versions {package}` must work",
    )


def versions_between(
    versions: list[str],
    good: str,
    bad: str,
    *,
    pre: bool = False,
    what: str = "package",
    where: str = "on the index",
) -> list[str]:
    """The versions from ``good`` to ``bad`` inclusive, ascending by PEP 440 order.

    Pre-releases are left out unless ``pre`` (or unless they are an endpoint). Both endpoints must be
    in the list: a bisect over a range whose ends do not exist would test something else. ``where``
    names the list in the messages (a timed bisect's comes from its bundle, not from the index).
    """
    parsed: dict[Version, str] = {}
    for v in versions:
        try:
            parsed[Version(v)] = v
        except InvalidVersion:
            continue
    near = ", ".join(str(v) for v in sorted(parsed)[-12:])
    ends: list[Version] = []
    for text, name in ((good, "good"), (bad, "bad")):
        try:
            ends.append(Version(text))
        except InvalidVersion:
            # packaging's own words ("Invalid version: 'latest'") named neither the flag nor a version to give
            raise KtriageError(
                joined(option(name, f"--{name}", text), " is not a version number"),
                f"give a release of the {what} {where}: {near}",
            ) from None
    g, b = ends
    # Existence before order: a --good that is no release (9.9.9) is that, not "newer than --bad".
    for end, name in ((g, "good"), (b, "bad")):
        if end not in parsed:
            raise KtriageError(
                joined(option(name, f"--{name}", str(end)), f" is not a release of the {what} {where}"),
                f"pick one that exists: {near}",
            )
    given_good, given_bad = option("good", "--good", good), option("bad", "--bad", bad)
    if g == b:
        # "not older than --bad ... swap them" sent the user to swap two equal ends
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(given_good, o)} and {spelled(given_bad, o)} are the same release: there is nothing between them to bisect"
                )
            ),
            worded(
                lambda o: (
                    f"give the last release known good as {o('good', '--good')} and the first known bad as "
                    f"{o('bad', '--bad')}"
                )
            ),
        )
    if g > b:
        raise KtriageError(
            worded(lambda o: f"{spelled(given_good, o)} is not older than {spelled(given_bad, o)}"),
            "the good version must come first; swap them if they are reversed",
        )
    keep = [
        v for v in sorted(parsed) if g <= v <= b and (pre or not (v.is_prerelease or v.is_devrelease) or v in (g, b))
    ]
    return [str(v) for v in keep]


def pypi_candidates(
    package: str,
    good: str,
    bad: str,
    *,
    toolchain: str | None = None,
    pre: bool = False,
    versions: list[str] | None = None,
) -> list[Candidate]:
    """Releases of a PyPI package as candidates.

    ``triton``: each candidate is the toolchain ``triton==V`` (keeping the ptxas and options of
    ``toolchain`` when one is given). Any other package (``liger-kernel``): the kernels' package
    pin becomes ``package==V`` and the toolchain stays ``toolchain`` (required).
    """
    listed = versions if versions is not None else list_pypi_versions(package, pre=pre)
    chosen = versions_between(listed, good, bad, pre=pre, what=package)
    out: list[Candidate] = []
    if package == "triton":
        base = parse_toolchain(toolchain) if toolchain else None
        for i, v in enumerate(chosen):
            tc = (
                str(dataclasses.replace(base, triton_version=v, triton_wheel=None, triton_host=False))
                if base
                else f"triton=={v}"
            )
            out.append(Candidate(i, v, tc, {"kind": "pypi", "package": package, "version": v, "toolchain": tc}))
        return out
    if not toolchain:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('source', '--source', f'pypi:{package}')} needs {o('toolchain', '--toolchain')} "
                    "(the compiler stays fixed while the package moves)"
                )
            ),
            worded(lambda o: f"add e.g. {o('toolchain', '--toolchain', 'triton==3.4.0')}"),
        )
    tc = str(parse_toolchain(toolchain))
    for i, v in enumerate(chosen):
        out.append(
            Candidate(
                i,
                v,
                f"{package}=={v}",
                {"kind": "pypi", "package": package, "version": v, "requirement": f"{package}=={v}", "toolchain": tc},
            )
        )
    return out


def ptxas_versions(good: str, bad: str, *, pre: bool = False) -> list[str]:
    """ptxas releases from ``good`` to ``bad``, across the per-CUDA-major wheels (cu12 -> cu13...)."""
    majors = range(_major(good), _major(bad) + 1)
    packages: list[str] = []
    for major in majors:
        pkg = nvcc_package(f"{major}.0.0")
        if pkg not in packages:
            packages.append(pkg)
    listed: list[str] = []
    for pkg in packages:
        listed += [v for v in list_pypi_versions(pkg, pre=pre) if _major(v) in majors]
    return versions_between(listed, good, bad, pre=pre, what=f"ptxas ({' / '.join(packages)})")


def ptxas_candidates(
    good: str, bad: str, *, toolchain: str, pre: bool = False, versions: list[str] | None = None
) -> list[Candidate]:
    """ptxas releases as candidates with the frontend (and ptxas options) of ``toolchain`` fixed."""
    base = parse_toolchain(toolchain)
    chosen = (
        versions_between(versions, good, bad, pre=pre, what="ptxas")
        if versions is not None
        else ptxas_versions(good, bad, pre=pre)
    )
    out = []
    for i, v in enumerate(chosen):
        tc = str(dataclasses.replace(base, ptxas_version=v, ptxas_path=None))
        out.append(
            Candidate(i, v, f"ptxas {v}", {"kind": "ptxas", "package": nvcc_package(v), "version": v, "toolchain": tc})
        )
    return out


def _major(version: str) -> int:
    try:
        return Version(version).release[0]
    except (InvalidVersion, IndexError):
        raise KtriageError(f"{version!r} is not a ptxas release number", "write e.g. 12.4.131 or 13.0.88") from None


# --------------------------------------------------------------------------- git commits


def git_candidates(
    repo: Path, good: str, bad: str, *, first_parent: bool = False, extra_meta: Mapping[str, JSONValue] | None = None
) -> list[Candidate]:
    """Commits good .. bad of a local repository (``good`` first), labelled ``<sha12> <subject>``."""
    shas = gitrepo.commit_range(repo, good, bad, first_parent=first_parent)
    subj = gitrepo.subjects(repo, shas)
    out = []
    for i, sha in enumerate(shas):
        meta: JSONObject = {"kind": "git", "repo": str(repo), "commit": sha}
        meta.update(extra_meta or {})
        out.append(Candidate(i, sha, f"{sha[:12]} {subj.get(sha, '')}".rstrip(), meta))
    return out


# --------------------------------------------------------------------------- pins (nested bisect)

_SHA = re.compile(r"\b[0-9a-fA-F]{7,40}\b")


def read_pin(text: str | None) -> str | None:
    """The pinned commit in a pin file's text: the first hex word of 7-40 digits (llvm-hash.txt style)."""
    if text is None:
        return None
    m = _SHA.search(text)
    return m.group(0) if m else None


def pin_change(repo: Path, old: str, new: str, pin_file: str) -> tuple[str, str] | None:
    """(old pin, new pin) when the pin file differs between two commits, else None."""
    a = read_pin(gitrepo.file_at(repo, old, pin_file))
    b = read_pin(gitrepo.file_at(repo, new, pin_file))
    if a is None or b is None or a == b:
        return None
    return a, b
