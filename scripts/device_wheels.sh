#!/usr/bin/env bash
# The wheels a GPU device run carries in .whl/: ktriage's dependencies that the device image lacks, for its
# Python (cp312, manylinux x86_64), with their own dependencies. The image has torch, Triton, numpy and scipy,
# and nothing installs there from a registry, so a missing one fails the whole call at import (typer 0.29 began
# to need pydantic, and a device call that carried the older list died on "No module named 'pydantic'"; ktriage
# now keeps typer below 0.29, pyproject.toml says why).
# The benchmarks' device scripts install them with: pip install --no-index --no-deps --target DIR .whl/*.whl
#   bash scripts/device_wheels.sh            # -> .whl/ (about 10 MB; git-ignored), then carry ".whl"
# PYVER (default 3.12) picks another image Python; OUT another folder.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
PYVER=${PYVER:-3.12} OUT=${OUT:-.whl}
abi="cp${PYVER/./}"
# [project] dependencies, less what the image has (numpy, scipy) and what a device run never imports (uv builds
# toolchains; tomli is for Python < 3.11); pyproject.toml stays the one list
mapfile -t deps < <("$PY" - <<'PY'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
skip = {"numpy", "scipy", "uv", "tomli"}
for d in deps:
    name = re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].strip().lower()
    if name not in skip:
        print(d.split(";")[0].strip())
PY
)
mkdir -p "$OUT"
platform=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
"$PY" -m pip download -q --only-binary=:all: --python-version "$PYVER" --implementation cp --abi "$abi" \
  "${platform[@]}" -d "$OUT" "${deps[@]}"
# the no-deps dependencies ([tool.ktriage] no_deps_dependencies: their metadata pins would pull in numpy)
mapfile -t nodeps < <("$PY" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["tool"]["ktriage"]["no_deps_dependencies"]))')
"$PY" -m pip download -q --only-binary=:all: --no-deps --python-version "$PYVER" --implementation cp --abi "$abi" \
  "${platform[@]}" -d "$OUT" "${nodeps[@]}"
# two versions of one distribution (an older download left here) would both be installed, the last one winning;
# a wheel the image has would only use up the carry's 64 MiB
"$PY" - "$OUT" <<'PY'
import collections, pathlib, sys
seen = collections.defaultdict(set)
for w in pathlib.Path(sys.argv[1]).glob("*.whl"):
    name, version = w.name.split("-")[:2]
    seen[name.lower().replace("_", "-")].add(version)
dup = {n: sorted(v) for n, v in seen.items() if len(v) > 1}
if dup:
    sys.exit(f"error: {sys.argv[1]} holds two versions of {dup}: delete the older wheels and run this again")
image = sorted(set(seen) & {"numpy", "scipy", "torch", "triton"})
if image:
    sys.exit(f"error: {sys.argv[1]} holds {image}, which the device image has: delete them (the carry limit is 64 MiB)")
PY
ls "$OUT"
du -sh "$OUT"
