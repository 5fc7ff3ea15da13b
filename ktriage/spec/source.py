"""Find a kernel's source file and read its parameter list with ``ast``, without importing anything.

Why ``ast``: the host has no Triton (and kernel libraries import torch at module level), yet a
spec whose signature does not match the function must be caught before a worker is started, with
a message that says which argument to add or remove.
"""

from __future__ import annotations

import ast
import difflib
import functools
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktriage.errors import SpecError
from ktriage.wording import plural

_INT_ANNOTATIONS = {
    "int1": "i1",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "u1",
}


class Unresolved:
    """A default value ``ast`` cannot evaluate (the JIT would, at import time)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"<unresolved {self.text}>"


@dataclass(frozen=True)
class ParamInfo:
    """One parameter of a @triton.jit function, as far as its source text tells."""

    name: str
    annotation: str = ""
    is_constexpr: bool = False
    has_default: bool = False
    default: Any = None
    annotation_type: str = ""
    do_not_specialize: bool = False
    do_not_specialize_on_alignment: bool = False


def split_source(source: str) -> tuple[str, str]:
    """``'a/b.py:fn'`` -> ``('a/b.py', 'fn')``; ``'pkg.mod:fn'`` -> ``('pkg.mod', 'fn')``."""
    where, sep, fn = source.rpartition(":")
    if not sep or not where or not fn or not fn.isidentifier():
        raise SpecError(
            f"kernel source {source!r} does not name a function",
            "write it as 'path/to/file.py:function' or 'package.module:function'",
        )
    return where, fn


def resolve_source_file(source: str, package: str | None = None) -> Path:
    """The file that defines the kernel. ``package`` is installed first (once) if it is given."""
    where, _ = split_source(source)
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise SpecError(
                f"kernel source file {where} does not exist",
                "fix the path (relative paths are taken from the spec file's folder)",
            )
        return path
    from ktriage.spec.packages import ensure_package, find_module_file

    if package:
        roots = [ensure_package(package)]
    else:
        roots = [Path(p) for p in sys.path if p and Path(p).is_dir()]
        if where.split(".")[0] == "ktriage":  # ktriage's own kernels (catalog show --format toml names them
            # by module) are where this ktriage is: an editable install (scripts/setup.sh) is on no sys.path root
            roots.append(Path(__file__).resolve().parents[2])
    found = find_module_file(where, roots)
    if found is None:
        hint = (
            f"check the module path inside {package}"
            if package
            else 'give the pip requirement that provides it as package (e.g. package = "liger-kernel==0.5.10"); '
            f'for a module of your own project, name its file: source = "path/to/{where.rpartition(".")[2]}.py:'
            f"{source.rpartition(':')[2]}\" (relative to the spec file; its package's relative imports work), "
            "or put the folder that holds its top package on PYTHONPATH"
        )
        raise SpecError(f"cannot find module {where!r} of kernel source {source!r}", hint)
    return found


_KTRIAGE_DIR = Path(__file__).resolve().parents[1]


def local_module_files(path: Path, limit: int = 256) -> list[Path]:
    """The files of the project's own modules that the kernel's file imports, transitively: its relative
    imports and the imports of its top package (for a file outside a package: of the modules beside
    it). The compile worker imports them from that folder (``insitu/worker.file_module``), so a
    @triton.jit helper there is compiled into the kernel: its text is part of the spec's key
    (``KernelSpec.key``), or an edited helper would be served the artifact of the old one."""
    start = path.resolve()
    directory, parts = start.parent, [start.stem]
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    top = parts[0] if len(parts) > 1 else None
    if top is None and directory.name.endswith("-packages"):
        return []  # an installed flat module: what it imports is installed too
    if start.is_relative_to(_KTRIAGE_DIR):
        # ktriage's own kernels (the catalog's, the workload bundles'): their modules import much of ktriage,
        # and every edit of ktriage would otherwise change their keys and compile them again
        return []
    seen, found, todo = {start}, list[Path](), [start]
    while todo and len(found) < limit:
        for name in _imported_modules(*_stat(todo.pop()), directory):
            if top is not None and name[0] != top:
                continue
            file = _module_file(directory, name)
            if file is not None and file not in seen:
                seen.add(file)
                found.append(file)
                todo.append(file)
    return sorted(found)


def _stat(path: Path) -> tuple[Path, int, int]:
    try:
        st = path.stat()
    except OSError:
        return path, -1, -1
    return path, st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=1024)
def _imported_modules(path: Path, mtime_ns: int, size: int, root: Path) -> tuple[tuple[str, ...], ...]:
    """Every module name ``path`` imports, as parts (``from .a import b``: ``pkg.a`` and ``pkg.a.b``)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        package = list(path.relative_to(root).parts[:-1])
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return ()
    return tuple(dict.fromkeys(_names(tree, package)))


def _names(tree: ast.Module, package: list[str]) -> Iterator[tuple[str, ...]]:
    """The module-level imports (an import in a function body is host code run at a call)."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            yield from (tuple(alias.name.split(".")) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level and node.level - 1 > len(package):
                continue
            base = package[: len(package) - (node.level - 1)] if node.level else []
            module = (*base, *(node.module.split(".") if node.module else []))
            if module:
                yield module
            yield from ((*module, alias.name) for alias in node.names if alias.name != "*")


def _module_file(root: Path, name: tuple[str, ...]) -> Path | None:
    base = root.joinpath(*name)
    for file in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if file.is_file():
            return file.resolve()
    return None


def _jit_options(fn: ast.FunctionDef) -> dict[str, list[Any]]:
    """do_not_specialize / do_not_specialize_on_alignment from ``@triton.jit(...)``."""
    out: dict[str, list[Any]] = {}
    for deco in fn.decorator_list:
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg in ("do_not_specialize", "do_not_specialize_on_alignment"):
                    try:
                        out[kw.arg] = list(ast.literal_eval(kw.value))
                    except ValueError:
                        pass
    return out


def _default(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        text = ast.unparse(node)
        if text.startswith("tl.") and text[3:].isidentifier():
            return text  # a Triton dtype default, in the spec's "tl.float32" convention
        return Unresolved(text)


def _parse(path: Path) -> ast.Module:
    from ktriage.schema.core import read_text

    text = read_text(path, what="kernel file", limit=16 << 20, error=SpecError)
    try:
        return ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte
        raise SpecError(f"cannot parse {path}: {exc}", "fix the syntax error in the kernel file") from exc
    except RecursionError:
        raise SpecError(
            f"cannot parse {path}: nested too deeply for Python's parser", "simplify the kernel file"
        ) from None


def jit_functions(path: Path) -> list[str]:
    """The top-level functions of ``path`` decorated with a ``jit`` (``@triton.jit``, ``@triton.jit(...)``,
    ``@jit``), in file order: the kernels a spec's ``source`` can name in it, for a fix that names them."""
    out = []
    for node in _parse(path).body:
        if isinstance(node, ast.FunctionDef):
            decorators = (d.func if isinstance(d, ast.Call) else d for d in node.decorator_list)
            if any(ast.unparse(d).split(".")[-1] == "jit" for d in decorators):
                out.append(node.name)
    return out


def read_params(path: Path, function: str) -> list[ParamInfo]:
    """Parameters of the top-level function ``function`` in ``path``, in order."""
    funcs = {n.name: n for n in _parse(path).body if isinstance(n, ast.FunctionDef)}
    fn = funcs.get(function)
    if fn is None:
        close = difflib.get_close_matches(function, list(funcs), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"functions in the file: {', '.join(funcs) or 'none'}"
        raise SpecError(f"{path} defines no function {function!r}", hint)
    a = fn.args
    if a.vararg or a.kwarg:
        raise SpecError(f"{function} takes *args/**kwargs", "Triton kernels need named parameters only")
    positional = [*a.posonlyargs, *a.args]
    defaults: dict[str, ast.expr] = {}
    for arg, d in zip(positional[len(positional) - len(a.defaults) :], a.defaults):
        defaults[arg.arg] = d
    for arg, kd in zip(a.kwonlyargs, a.kw_defaults):
        if kd is not None:
            defaults[arg.arg] = kd
    opts = _jit_options(fn)
    all_args = [*positional, *a.kwonlyargs]
    dns = {all_args[i].arg if isinstance(i, int) else i for i in opts.get("do_not_specialize", [])}
    dnsa = {all_args[i].arg if isinstance(i, int) else i for i in opts.get("do_not_specialize_on_alignment", [])}
    params: list[ParamInfo] = []
    for arg in all_args:
        ann = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        is_cx = "constexpr" in ann
        ann_type = "" if is_cx else _INT_ANNOTATIONS.get(ann.split(".")[-1], "")
        has_default = arg.arg in defaults
        params.append(
            ParamInfo(
                name=arg.arg,
                annotation=ann,
                is_constexpr=is_cx,
                has_default=has_default,
                default=_default(defaults[arg.arg]) if has_default else None,
                annotation_type=ann_type,
                do_not_specialize=arg.arg in dns,
                do_not_specialize_on_alignment=arg.arg in dnsa,
            )
        )
    return params


def guess_type(p: ParamInfo) -> str:
    """A plausible type for an error message ("add `n` (type i32)")."""
    if p.is_constexpr:
        return "constexpr"
    if p.annotation_type:
        return p.annotation_type
    low = p.name.lower()
    if "ptr" in low or low.endswith("_p"):
        return "*fp32"
    if low in ("eps", "scale", "alpha", "beta") or "eps" in low:
        return "fp32"
    return "i32"


def check_signature(
    signature: Mapping[str, str], params: list[ParamInfo], function: str, *, where: str = "spec"
) -> None:
    """Names and order of ``signature`` must equal the function's parameters; constexprs must agree."""
    names = [p.name for p in params]
    given = list(signature)
    if given != names:
        missing = [p for p in params if p.name not in signature]
        extra = [n for n in given if n not in names]
        parts: list[str] = []
        if missing:
            parts.append("add " + ", ".join(f"`{p.name}` (type {guess_type(p)})" for p in missing))
        if extra:
            parts.append("remove " + ", ".join(f"`{n}`" for n in extra))
        if not missing and not extra:
            parts.append(f"list them in source order: {', '.join(names)}")
        raise SpecError(
            f"{where}: signature lists {plural(len(given), 'argument')} "
            f"but {function} takes {len(names)}" + ("" if missing or extra else " in another order"),
            "; ".join(parts),
        )
    for p in params:
        ty = signature[p.name]
        if p.is_constexpr and ty != "constexpr":
            raise SpecError(
                f"{where}: {p.name} is declared `{p.annotation}` in {function} but the signature gives {ty!r}",
                f'set {p.name} = "constexpr" and give its value under constexprs',
            )
