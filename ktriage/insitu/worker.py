"""The compile worker: runs INSIDE a toolchain's virtualenv and compiles one kernel spec as the JIT does.

Why a separate process: each toolchain has its own Triton, which cannot share an interpreter with
another Triton or with the host. This file is therefore self-contained (stdlib + the toolchain's
``triton`` + its sibling modules in this folder); it must never import ``ktriage``. The host starts
``server.py`` (the JSON-lines protocol, one request, one reply), which compiles through this module.
``compile_in_process`` is the same compile for the *current* interpreter's Triton, used on GPU hosts
and by the JIT-equivalence harness.

The whole of Triton's pipeline runs here, cubin included: the cubin is Triton's own (its ptxas choice
for the arch, its options, its PTX ``.version``), and the ptxas command line and ``-v`` log of that run
are recorded (ptxas_capture), so that the host can re-assemble the PTX with another ptxas exactly as
this Triton would have called it.

Environment: ``KTRIAGE_TARGET_CC`` sets the fake driver's arch (default 90); the protocol's own
(``KTRIAGE_PRIME_COMPILE``) is in server.py.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any, TypedDict

if __package__:  # imported as ktriage.insitu.worker (GPU host, tests, the harness)
    from ktriage.insitu import fakedriver, kernel_source, placeholders, ptxas_capture, reexports
else:  # started as a script inside a toolchain's virtualenv: this folder is sys.path[0]
    import fakedriver  # type: ignore[import-not-found,no-redef]
    import kernel_source  # type: ignore[import-not-found,no-redef]
    import placeholders  # type: ignore[import-not-found,no-redef]
    import ptxas_capture  # type: ignore[import-not-found,no-redef]
    import reexports  # type: ignore[import-not-found,no-redef]

PROTOCOL_VERSION = 2


class SpecFields(TypedDict, total=False):
    """The fields of a spec that say what the JIT compiles (``launch_spec.spec_fields`` gives them back)."""

    signature: dict[str, str]
    constexprs: dict[str, object]  # a constexpr's value is any JSON value (a dtype as "tl.float32")
    equal_to_1: list[str]
    divisible_by_16: list[str]
    num_warps: int
    num_stages: int
    num_ctas: int
    maxnreg: int | None
    enable_fp_fusion: bool  # absent: Triton's default (on)


class SpecJSON(SpecFields, total=False):
    """What this worker reads of a spec (the host's ``KernelSpec.to_json()``; other keys are ignored)."""

    source: str  # "path/to/file.py:fn" or "package.module:fn"
    target: str  # "sm_90"


class CompileResult(TypedDict, total=False):
    """What :func:`compile_in_process` gives back (the host's frontend reply is this, with bytes as base64)."""

    ttir: str
    ttgir: str
    llir: str
    ptx: str
    cubin: bytes
    metadata: object  # Triton's metadata, made JSON-able (_jsonable)
    triton_version: str
    placeholder_imports: list[str]
    triton_reexports: list[str]
    ptxas_runs: list[ptxas_capture.PtxasRun]
    ast_source: dict[str, object]


PRIMING_KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "priming_kernel.py")


def write_atomic(path: str, data: str) -> None:
    """Replace ``path`` with ``data`` so that a reader never sees half of it: a local copy of
    ``ktriage.atomic.write_atomic`` (a temp file beside it, fsync, ``os.replace``, fsync of the folder; the
    temp file removed on any failure), because this folder may not import ktriage (see the module doc).
    tests/test_atomic.py holds both copies to the same behaviour."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


class WorkerError(Exception):
    """A failure with a kind the host can report (import, signature, compile)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def unknown_options(options: Any, known: Any, version: str) -> WorkerError | None:
    """The refusal of compile options this Triton's backend does not have (``known``: the field names of
    its ``CUDAOptions``), or None. Why: Triton's ``parse_options`` keeps only the fields it knows, so an
    option it lacks (``enable_fp_fusion`` in a Triton without it) was dropped in silence and the cell
    compiled other code than the spec says; this names the option and the version instead."""
    missing = sorted(str(k) for k in options if k not in set(known))
    if not missing:
        return None
    return WorkerError(
        "spec",
        f"Triton {version} has no compile option {', '.join(missing)} (its options: {', '.join(sorted(known))})"
        f"\nfix: remove {', '.join(missing)} from [kernel.options], or compare with a Triton that has it",
    )


def backend_option_names() -> list[str]:
    """The compile options of this toolchain's CUDA backend (``CUDAOptions``' fields)."""
    from triton.backends.nvidia.compiler import CUDAOptions

    return list(CUDAOptions.__dataclass_fields__)


def no_host_descriptors(name: str) -> WorkerError:
    """The refusal of a host-side ``TensorDescriptor`` argument by a Triton that has none (before 3.4,
    no ``triton.tools.tensor_descriptor``): a spec by values (insitu/jitrun.descriptor) and one by types
    (``tensordesc<...>`` in its signature, a recorded workload's) are refused alike, naming the version."""
    import triton

    return WorkerError(
        "spec",
        f"argument {name} is a host-side TensorDescriptor, which Triton {triton.__version__} does not have "
        "(it came in 3.4)\nfix: compare this kernel across Triton 3.4 and later (e.g. -t triton==3.4.0)",
    )


def no_descriptor_padding(name: str, padding: str, version: str) -> WorkerError:
    """The refusal of a host-side ``TensorDescriptor`` with ``padding`` (NaN fill, 3.5+) by a Triton whose
    descriptor has no such field (3.4 pads with zeros only: ``TensorDescriptor(..., padding="nan")`` is a
    TypeError there, so no program makes that launch): a spec by values (insitu/jitrun.descriptor) and a
    recorded one (compile.compiler, from the launch's ``descriptor_padding``) are refused alike."""
    return WorkerError(
        "spec",
        f'argument {name} is a TensorDescriptor with padding = "{padding}", which Triton {version} does not have '
        "(descriptors pad with zeros only; padding came in 3.5)\nfix: compare this kernel across Triton 3.5 and "
        "later (e.g. -t triton==3.5.0), or drop padding (zero padding, what Triton 3.4 does)",
    )


def load_kernel(source: str, sys_path: list[str]) -> Any:
    """Import ``path/to/file.py:fn`` or ``package.module:fn`` and return the JIT function (unwrapped
    from ``@triton.heuristics``/``@triton.autotune``, which compile the same function)."""
    return jit_function_of(load_launchable(source, sys_path), source)


def load_launchable(source: str, sys_path: list[str]) -> Any:
    """Import ``source`` and return the module attribute as the library launches it (decorators kept).

    The kernel compiles from its own source, not from everything its module imports: a top-level
    module that is not installed (numpy, tabulate, transformers ...) gets a placeholder and the import
    is tried again; a module that still fails to import, or a kernel that is no module attribute
    (defined in a function), is compiled from the kernel's own source cut out of the module's file
    (``kernel_source``). Only when that fails too is the import an error, naming both causes."""
    for entry in sys_path:
        if entry not in sys.path:
            sys.path.insert(0, entry)
    placeholders.install()
    if ":" not in source:
        raise WorkerError("import", f"kernel source {source!r} must look like 'module:function' or 'file.py:function'")
    module_part, _, fn_name = source.rpartition(":")
    _PROJECT.enter(file_module(module_part)[0] if module_part.endswith(".py") else None)
    recorded = recorded_globals(module_part)
    finder = _RecordedModules(recorded) if recorded else None
    if finder is not None:
        sys.meta_path.insert(0, finder)
    try:
        with _PROJECT.loading(), _needs_of(source, sys_path):
            return _load(module_part, fn_name, recorded)
    finally:
        if finder is not None:
            sys.meta_path.remove(finder)


class _Needs:
    """What loading one kernel source needed: the placeholders its module (and the modules that load
    imported) imported, and the library names bound to this toolchain's Triton (``lib.tl`` ->
    ``triton.language``)."""

    def __init__(self) -> None:
        self.placeholders: set[str] = set()
        self.reexports: dict[str, str] = {}


# (kernel source "file.py:fn" or "pkg.mod:fn", the sys.path entries it was loaded with: a snapshot's folder) ->
# what its loads needed, kept for the worker's life
_NEEDS: dict[tuple[str, tuple[str, ...]], _Needs] = {}
_LOADING: list[_Needs] = []  # the load under way (load_launchable), at most one


@contextlib.contextmanager
def _needs_of(source: str, sys_path: list[str]) -> Iterator[None]:
    """Note what this load of ``source`` needs (:func:`needed_by`), kept per source.

    Why per source: one worker compiles many kernels, and a placeholder module stays in ``sys.modules``
    once made, so a worker-wide list named an earlier kernel's stand-ins for every later kernel (a
    kernel that never imports torch said it needed a torch stand-in). A module's import is cached, so
    a second compile of the same source imports nothing: what its first load noted is kept. An import
    of a placeholder that is already in ``sys.modules`` asks no finder, so the load's ``import``
    statements are watched (``builtins.__import__``, restored after the load) besides the finder's
    new placeholders (:func:`placeholders.used`)."""
    import builtins

    needs = _NEEDS.setdefault((source, tuple(sys_path)), _Needs())
    made_before = set(placeholders.used())
    original = builtins.__import__

    def watched(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        module = original(name, globals, locals, fromlist, level)
        top = name.partition(".")[0]
        if level == 0 and top and placeholders.is_placeholder(sys.modules.get(top)):
            needs.placeholders.add(top)
        return module

    builtins.__import__ = watched
    _LOADING.append(needs)
    try:
        yield
    finally:
        _LOADING.remove(needs)
        if builtins.__import__ is watched:  # a module that replaced it meanwhile keeps its own
            builtins.__import__ = original
        needs.placeholders.update(set(placeholders.used()) - made_before)


def needed_by(source: str, sys_path: list[str]) -> tuple[list[str], list[str]]:
    """The placeholders ``source``'s loads (with ``sys_path``) imported and its ``lib.tl -> triton.language`` bindings, as a
    compile's ``placeholder_imports`` and ``triton_reexports`` (empty for a source not loaded here)."""
    needs = _NEEDS.get((source, tuple(sys_path)), _Needs())
    return sorted(needs.placeholders), [f"{name} -> {target}" for name, target in sorted(needs.reexports.items())]


class _ProjectFolder:
    """The folder the current kernel's file imports its project's modules from (:func:`file_module`: its
    own folder, or the one above its top package), put on ``sys.path`` for the kernel's load, and the
    modules its loads imported from there.

    Why: one worker serves many kernels, and Python caches a module by its name. Two projects, each with
    its own ``helpers.py`` beside its kernel, would otherwise share the first one's ``helpers`` for as
    long as the worker lives: the first project's folder stayed on ``sys.path`` and its ``helpers`` in
    ``sys.modules``, and the second kernel compiled with the first one's BLOCK, silently. Importing
    under unique names cannot help: the kernel's own ``from helpers import BLOCK`` names the module (the
    kernel's file itself is imported under a name unique to its path, ``_import``). So when a kernel of
    another folder (or a ``package.module`` kernel) comes, the previous folder leaves ``sys.path`` and
    the modules its loads imported from it leave ``sys.modules``; the next kernel imports its own. A
    module already imported keeps the modules it holds, so a loaded kernel is unaffected.

    They leave when the next kernel of another folder comes, not right after a load: the kernel's host
    code (its heuristics, the launch by values) runs after the load and may import from its folder, and
    consecutive kernels of one project (a sweep's inputs) import it once. Only a folder this worker put
    on ``sys.path`` is managed, and only modules whose file is that folder's file of their name (never
    an installed module, nor one that was imported before the load)."""

    def __init__(self) -> None:
        self.root: str | None = None
        self.added = False  # this worker put root on sys.path (a folder on it already is left alone)
        self.modules: set[str] = set()

    def enter(self, root: str | None) -> None:
        """Make ``root`` the current project folder (None: a kernel named by module, no folder)."""
        if root == self.root:
            return
        self.leave()
        self.root, self.added = root, root is not None and root not in sys.path
        if root is not None and self.added:
            sys.path.insert(0, root)

    def leave(self) -> None:
        """Forget the current folder: off ``sys.path``, and its modules out of ``sys.modules``."""
        root, modules = self.root, self.modules
        if root is not None and self.added:
            for name in modules:
                module = sys.modules.get(name)
                if module is not None and _imported_from(root, name, module):
                    del sys.modules[name]
            sys.path[:] = [entry for entry in sys.path if entry != root]
        self.root, self.added, self.modules = None, False, set()

    @contextlib.contextmanager
    def loading(self) -> Iterator[None]:
        """Note the modules a load imports (those of the project folder leave with it)."""
        before = set(sys.modules)
        try:
            yield
        finally:
            self.modules |= set(sys.modules) - before


def _imported_from(root: str, name: str, module: Any) -> bool:
    """Whether ``module`` is ``root``'s module ``name``: ``root/a/b.py`` or ``root/a/b/__init__.py`` for
    ``a.b`` (a namespace package: its only folder ``root/a/b``)."""
    base = os.path.join(root, *name.split("."))
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        file = os.path.abspath(file)
        return file == base + ".py" or file == os.path.join(base, "__init__.py")
    paths = [os.path.abspath(str(p)) for p in getattr(module, "__path__", None) or []]
    return paths == [base]


_PROJECT = _ProjectFolder()


def _load(module_part: str, fn_name: str, recorded: dict[str, object]) -> Any:
    import_error: BaseException | None = None
    try:
        module = _import_with_placeholders(module_part)
    except Exception as exc:  # the user's module failed to import: try the kernel's own source
        import_error, module = exc, None
    _stage("imported")  # the host's import timeout ends here (serve)
    if module is not None:
        fn = _attribute(module, fn_name)
        if fn is not None:
            apply_recorded(recorded)
            return fn
    try:
        fn = _load_extracted(module_part, fn_name, recorded.get(module_part))
        apply_recorded(recorded)
        return fn
    except _ExtractFailed as exc:
        made = exc.__cause__
        if import_error is not None and isinstance(made, kernel_source.MadeAtImport):
            raise WorkerError(
                "import",
                f"importing {module_part} failed: {root_cause(import_error)}; {fn_name} is made when the module "
                f"runs ({made.statement}), not written as a def, so it cannot be compiled from its own source\n"
                f"fix: {fn_name} exists only in the imported module: make the module import without a GPU, or "
                "write the kernel as a module-level @triton.jit def",
            ) from import_error
        if import_error is not None:
            raise WorkerError(
                "import",
                f"importing {module_part} failed: {root_cause(import_error)}; compiling "
                f"{fn_name} from its own source failed too: {exc}",
            ) from import_error
        raise WorkerError(
            "import", f"{module_part} has no attribute {fn_name!r}, and compiling it from its own source failed: {exc}"
        ) from exc


_STAGE: list[Any] = []  # the server's writer of a progress line, armed once per request (arm_stage)


def arm_stage(writer: Any = None) -> None:
    """The server's writer of this request's progress lines (``writer(name)``); None disarms it."""
    _STAGE[:] = [writer] if writer is not None else []


def _stage(name: str) -> None:
    """Tell the host that a request reached ``name`` (once per request): the host bounds the kernel
    module's import by a shorter timeout than the compile, so a module that hangs at import (a sleep,
    a network call) fails fast with its own error."""
    if _STAGE:
        _STAGE.pop()(name)


def _attribute(module: Any, path: str) -> Any:
    """``module.A.b`` for ``A.b`` (a kernel in a class body), or None."""
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _import_with_placeholders(module_part: str) -> Any:
    """Import a module (or a ``.py`` file by path), giving each top-level module that it imports and
    that is not installed a placeholder, one at a time, until it imports or fails for another reason."""
    added: list[str] = []
    try:
        for _ in range(32):
            try:
                return _import(module_part)
            except ModuleNotFoundError as exc:
                top = (exc.name or "").split(".")[0]
                if not top or top == "triton" or placeholders.stands_for(top) or _installed(top):
                    raise
                placeholders.add(top)
                added.append(top)
        return _import(module_part)
    finally:  # this module keeps its placeholders; the next kernel's module sees them missing again
        placeholders.forget(added)


def _installed(top: str) -> bool:
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def file_module(path: str) -> tuple[str, str | None]:
    """The folder a ``.py`` file is imported from, as Python would, and its module name: for a file in
    a package (its folder has ``__init__.py``), the folder above the top package and the dotted name
    (``root/pkg/ops/norm.py`` -> ``(root, "pkg.ops.norm")``), so that its relative imports resolve;
    for any other file, its own folder (``python file.py`` puts it on sys.path: sibling imports) and
    None. Mirrored on the host by ``ktriage.spec.source.local_module_files`` (the spec's key)."""
    directory, file = os.path.split(os.path.abspath(path))
    parts = [os.path.splitext(file)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
    if len(parts) == 1 or not all(p.isidentifier() for p in parts):
        return os.path.dirname(os.path.abspath(path)), None
    return directory, ".".join(parts)


def _relative_imports(path: str) -> bool:
    """Whether the file has a relative import (``from .helpers import x``) anywhere."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))


def _import(module_part: str) -> Any:
    if not module_part.endswith(".py"):
        return importlib.import_module(module_part)
    # its folder is on sys.path (_PROJECT): its package's other modules, or the files beside it, import as
    # they do in the program
    _, dotted = file_module(module_part)
    if dotted is not None and _relative_imports(module_part):  # as its package's module: `from .x import` resolves
        package_module = importlib.import_module(dotted)
        if os.path.abspath(getattr(package_module, "__file__", "") or "") == os.path.abspath(module_part):
            return package_module
        # another module of that name came first on sys.path: this file, by its path (as before)
    module_name = "ktriage_src_" + str(abs(hash(os.path.abspath(module_part))))
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, module_part)
        if spec is None or spec.loader is None:
            raise WorkerError("import", f"cannot load {module_part}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
    return module


class _ExtractFailed(Exception):
    pass


def _module_path(module_part: str) -> tuple[str, str | None]:
    """The file of ``module_part`` (found on sys.path without importing its packages) and its package."""
    if module_part.endswith(".py"):
        root, dotted = file_module(module_part)
        package = dotted.rpartition(".")[0] if dotted else None
        return module_part, (package if os.path.basename(module_part) != "__init__.py" else dotted)
    rel = module_part.replace(".", os.sep)
    for entry in sys.path:
        base = os.path.join(entry or ".", rel)
        if os.path.isfile(base + ".py"):
            return base + ".py", module_part.rpartition(".")[0] or None
        if os.path.isfile(os.path.join(base, "__init__.py")):
            return os.path.join(base, "__init__.py"), module_part
    raise _ExtractFailed(f"no file for module {module_part} on the compile worker's sys.path")


def recorded_globals(module_part: str) -> dict[str, object]:
    """The module-level values ``ktriage record`` kept in the snapshot that holds ``module_part``
    (kernel_source.GLOBALS_FILE beside its top package: module -> {"values", "defaults"}), or {} (a
    workload recorded before they were kept, a spec file: the module's own statements run, as before)."""
    if module_part.endswith(".py"):
        return {}
    rel = module_part.replace(".", os.sep)
    for entry in sys.path:
        base = os.path.join(entry or ".", rel)
        if os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py")):
            try:
                with open(os.path.join(entry or ".", kernel_source.GLOBALS_FILE), encoding="utf-8") as fh:
                    return kernel_source.read_globals(fh.read())
            except (OSError, UnicodeDecodeError):
                return {}
    return {}


class _RecordedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """While a recorded kernel loads: each snapshot module with recorded values runs with its
    statements that computed them replaced by the values (``kernel_source.with_recorded``), so that
    the module a kernel's module imports for its @triton.jit helpers needs no host helper either.
    The file on disk is the snapshot's own (Triton reads the kernel's source there; lines unchanged)."""

    def __init__(self, recorded: dict[str, object]) -> None:
        self.values = {str(name): kernel_source.recorded_sources(entry)[0] for name, entry in recorded.items()}

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not self.values.get(fullname):
            return None
        rel = fullname.replace(".", os.sep)
        for entry in sys.path:
            base = os.path.join(entry or ".", rel)
            if os.path.isfile(base + ".py"):
                return importlib.util.spec_from_file_location(fullname, base + ".py", loader=self)
            init = os.path.join(base, "__init__.py")
            if os.path.isfile(init):
                return importlib.util.spec_from_file_location(
                    fullname, init, loader=self, submodule_search_locations=[base]
                )
        return None

    def create_module(self, spec: Any) -> Any:
        return None

    def exec_module(self, module: Any) -> None:
        origin = module.__spec__.origin
        with open(origin, encoding="utf-8") as fh:
            text = kernel_source.with_recorded(fh.read(), self.values[module.__name__])
        exec(compile(text, origin, "exec"), module.__dict__)


def apply_recorded(recorded: dict[str, object]) -> None:
    """Give each imported module of the snapshot the values the recorded program had: its host code
    ran here on another machine (no GPU, placeholders for missing modules) and may have computed
    others, which the kernel would then be compiled with. A module or function the kernel reads is
    replaced only where a placeholder stands for it."""
    missing = object()
    for module_name, entry in recorded.items():
        module = sys.modules.get(str(module_name))
        if module is None:
            continue
        values, _ = kernel_source.recorded_sources(entry)
        encoded = entry.get("values") if isinstance(entry, dict) else None
        for name, source in values.items():
            current = getattr(module, name, missing)
            if (
                kernel_source.is_reference(encoded.get(name) if isinstance(encoded, dict) else None)
                and current is not missing
                and not placeholders.is_placeholder(current)
            ):
                continue
            try:
                value = eval(source, {"__builtins__": __builtins__})  # built by value_source from checked parts
                if current is missing or type(current) is not type(value) or current != value:
                    setattr(module, name, value)
            except Exception:  # a module or function not importable here: the kernel says so when it compiles
                continue


def _load_extracted(module_part: str, qualname: str, recorded: Any = None) -> Any:
    """Compile from the kernel's own source: its ``def`` and what it needs of its module, as a module
    of its own (a real file: Triton reads a kernel's source with ``inspect``). ``recorded``: the
    module's values from the recording (:func:`recorded_globals`), used in place of the statements
    that computed them."""
    import hashlib

    path, package = _module_path(module_part)
    values, defaults = kernel_source.recorded_sources(recorded)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        extracted, _ = kernel_source.extract(
            text,
            qualname,
            package=package,
            values=values,
            defaults=defaults.get(qualname),
            triton_module=_triton_reexport,
        )
    except (OSError, UnicodeDecodeError, kernel_source.ExtractError) as exc:
        raise _ExtractFailed(str(exc)) from exc
    original = os.path.abspath(path)
    digest = hashlib.sha256(f"{original}\0{qualname}\0{extracted}".encode()).hexdigest()[:16]
    name = f"ktriage_extracted_{digest}"
    module = sys.modules.get(name)
    if module is None:
        # <temp>/ktriage-extracted-<uid>/<digest>/<the original's absolute path>: the extracted text keeps the
        # original's line numbers, so the line table Triton writes (this file's path) maps back to the
        # user's file by dropping the prefix (ktriage.analyze.lines.original_path: the same layout)
        file = os.path.join(tempfile.gettempdir(), f"ktriage-extracted-{os.getuid()}", digest, original.lstrip(os.sep))
        os.makedirs(os.path.dirname(file), exist_ok=True)
        if not os.path.isfile(file):
            write_atomic(file, extracted)
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise _ExtractFailed(f"cannot load {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        added: list[str] = []
        try:
            for _ in range(32):  # a missing top-level import the kernel keeps gets a placeholder, as above
                try:
                    spec.loader.exec_module(module)
                    break
                except ModuleNotFoundError as exc:
                    top = (exc.name or "").split(".")[0]
                    if not top or top == "triton" or placeholders.stands_for(top) or _installed(top):
                        raise
                    placeholders.add(top)
                    added.append(top)
        except Exception as exc:
            sys.modules.pop(name, None)
            line = _failing_line(exc, file)
            raise _ExtractFailed(f"{line}{root_cause(exc)}") from exc
        finally:
            placeholders.forget(added)
    fn = _attribute(module, qualname.split(".")[-1])
    if fn is None:
        raise _ExtractFailed(f"the extracted source defines no {qualname}")
    if isinstance(fn, (staticmethod, classmethod)):  # a kernel of a class body, `@staticmethod @triton.jit`
        fn = fn.__func__
    return fn


def _triton_reexport(module: str, name: str) -> str | None:
    """``reexports.triton_module`` for the extraction, reading modules' files on ``sys.path`` without
    importing them; what it answers is kept with the kernel source being loaded (:func:`needed_by`): the
    compile's result says which library names were bound to this toolchain's Triton."""
    target = reexports.triton_module(module, name, _module_source)
    if target is not None and _LOADING:
        _LOADING[-1].reexports[f"{module}.{name}"] = target
    return target


def _module_source(module: str) -> tuple[str, str | None] | None:
    """The text of ``module``'s file on ``sys.path`` and its package, or None."""
    try:
        path, package = _module_path(module)
        with open(path, encoding="utf-8") as fh:
            return fh.read(), package
    except (_ExtractFailed, OSError, UnicodeDecodeError):
        return None


def _failing_line(exc: BaseException, file: str) -> str:
    """``line N `text`: `` of the extracted module's statement that raised, or ''."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == file:
            found = tb.tb_lineno
        tb = tb.tb_next
    if found is None:
        return ""
    try:
        with open(file, encoding="utf-8") as fh:
            text = fh.read().splitlines()[found - 1].strip()
    except (OSError, IndexError):
        return f"line {found}: "
    return f"line {found} `{text}`: "


def root_cause(exc: BaseException) -> str:
    """``Type: message`` of the innermost exception of a chain (``raise ... from e`` or raised while
    handling another): where Triton wraps a callee's error in a CompilationError that says only where,
    the innermost one says what (``gdc_wait() got an unexpected keyword argument '_semantic'``)."""
    inner = innermost(exc)
    message = str(inner).strip()
    if type(inner).__name__ in ("CompilationError", "CompileTimeAssertionFailure") and "\n" in message:
        message = message.splitlines()[-1].strip()
    return f"{type(inner).__name__}: {message}" if message else f"{type(inner).__name__}{raised_at(inner)}"


def innermost(exc: BaseException) -> BaseException:
    """The innermost exception of a chain (``raise ... from e`` or raised while handling another), short
    of a StopIteration that one was raised while handling: that is a loop's end the code translated
    (importlib.metadata's ``next(cls.discover(...))`` becomes PackageNotFoundError: unsloth's import asks
    for torch's version), and the translation says what went wrong."""
    seen: set[int] = set()
    inner = exc
    while id(inner) not in seen:
        seen.add(id(inner))
        nxt = inner.__cause__ or (None if inner.__suppress_context__ else inner.__context__)
        if nxt is None or (nxt is not inner.__cause__ and isinstance(nxt, (StopIteration, StopAsyncIteration))):
            break
        inner = nxt
    return inner


def closure_hint(fn: Any, exc: BaseException) -> tuple[str, str] | None:
    """What a failure means and its fix when the name Triton could not read is one the kernel closes
    over (a kernel a factory made: ``scale2 = make_scale_kernel(2.0)``), or None. Why: Triton's NameError
    says only that it did not find the value: releases before 3.4 read a kernel's module globals only,
    later ones its closed-over values too but only ``tl.constexpr`` ones. No spec can give such a value;
    the kernel must be written so that Triton sees it (the real JIT of that release fails the same way)."""
    inner = innermost(exc)
    code = getattr(getattr(fn, "fn", None), "__code__", None)
    # Triton raises the NameError inside the CompilationError or appends its repr as the last line
    text = str(inner) if isinstance(inner, NameError) else (str(inner).strip().splitlines() or [""])[-1]
    if code is None or not (isinstance(inner, NameError) or text.startswith("NameError(")):
        return None
    words = set(text.replace("'", " ").replace('"', " ").replace("`", " ").split())
    names = [n for n in code.co_freevars if n in words]
    if not names:
        return None
    name = names[0]
    if "constexpr" in text:
        return (
            f"the kernel reads {name}, a value it closes over (its factory's) that is not a tl.constexpr, and "
            "Triton compiles only constexpr ones",
            f"make it one where the factory defines it (`{name} = tl.constexpr({name})`), or pass it to the kernel "
            "as a parameter",
        )
    return (
        f"the kernel reads {name}, a value it closes over (its factory's), and this Triton reads only the "
        "kernel's module globals (Triton 3.4 and later read closed-over tl.constexpr values)",
        f"make {name} a module-level tl.constexpr, or a tl.constexpr parameter of the kernel",
    )


def raised_at(exc: BaseException) -> str:
    """`` at triton/language/semantic.py:1591 `assert acc.type.element_ty == out_dtype` ``: where an
    exception without a message was raised (its traceback's last frame, the statement's text when the
    file is readable), or ''. Why: a bare ``assert`` in Triton's semantic layer (``tl.dot`` of int8 with
    an int32 accumulator on 3.6) reaches the user as ``AssertionError`` alone; the asserted condition
    is what says what to change. A file of an installed package is named from its package folder."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if not frames:
        return ""
    last = frames[-1]
    path = last.filename.replace(os.sep, "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            path = path.rpartition(marker)[2]
            break
    else:
        path = os.path.basename(path)
    text = " ".join((last.line or "").split())
    return f" at {path}:{last.lineno}" + (f" `{text}`" if text else "")


def with_root_cause(exc: BaseException) -> str:
    """The exception's own text plus a ``root cause:`` line when the innermost exception is another one."""
    text = f"{type(exc).__name__}: {exc}"
    cause = root_cause(exc)
    if exc.__cause__ is not None or (exc.__context__ is not None and not exc.__suppress_context__):
        text += f"\nroot cause: {cause}"
    return text


def placeholder_reads(fn: Any, depth: int = 0) -> list[str]:
    """The globals a kernel (and its jit callees) reads whose value is a placeholder: a module that is
    not installed in this toolchain (``np (numpy)``)."""
    found: list[str] = []
    inner = getattr(fn, "fn", None)
    code = getattr(inner, "__code__", None)
    globs = getattr(inner, "__globals__", None) or {}
    if code is None or depth > 4:
        return found
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    for name in sorted(names):
        value = globs.get(name)
        if value is None:
            continue
        if placeholders.is_placeholder(value):
            module = getattr(value, "__name__", None) if isinstance(value, type(sys)) else None
            found.append(f"{name} ({module})" if module and module != name else name)
        elif type(value).__name__ in ("JITFunction", "JITCallable") and value is not fn:
            found += placeholder_reads(value, depth + 1)
    return sorted(set(found))


def jit_function_of(obj: Any, source: str) -> Any:
    """The ``JITFunction`` inside ``@triton.heuristics``/``@triton.autotune`` wrappers (each has ``.fn``)."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction):
        inner = getattr(obj, "fn", None)
        if inner is None or seen > 8:
            raise WorkerError(
                "import",
                f"{source} is not a @triton.jit function (found {type(obj).__name__})\nfix: name the "
                "@triton.jit function (or the @triton.autotune/@triton.heuristics that wraps it) in `source`",
            )
        obj, seen = inner, seen + 1
    return obj


def heuristics_of(obj: Any) -> dict[str, object]:
    """The ``@triton.heuristics`` rules of a launchable, by parameter name (outermost first)."""
    from triton.runtime.autotuner import Heuristics
    from triton.runtime.jit import JITFunction

    found: dict[str, object] = {}
    while obj is not None and not isinstance(obj, JITFunction):
        values = getattr(obj, "values", None)
        if isinstance(obj, Heuristics) and isinstance(values, dict):
            for name, rule in values.items():
                found.setdefault(name, rule)
        obj = getattr(obj, "fn", None)
    return found


def _triton_version() -> tuple[int, int]:
    import triton

    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


def _constexpr_value(value: Any) -> Any:
    """Spec files are JSON/TOML: a Triton dtype constexpr is written as the string "tl.float32"."""
    if isinstance(value, str) and value.startswith("tl."):
        import triton.language as tl

        resolved = getattr(tl, value[3:], None)
        if resolved is None:
            raise WorkerError("signature", f"constexpr value {value!r} is not an attribute of triton.language")
        return resolved
    return value


def build_source(fn: Any, spec: SpecFields, heuristics: dict[str, object] | None = None) -> Any:
    """Make the ASTSource the JIT would make for this launch (Triton 3.3+ conventions)."""
    heuristics = heuristics or {}
    from triton.compiler import ASTSource

    signature: dict[str, str] = dict(spec["signature"])
    names = list(fn.arg_names)
    if list(signature) != names:
        raise WorkerError(
            "signature",
            f"the spec's signature lists {list(signature)} but {fn.__name__} takes {names}",
        )
    if _triton_version() < (3, 4):  # a recorded descriptor's type: Triton 3.3 failed on it with a KeyError
        described = [n for n, t in signature.items() if t.startswith("tensordesc")]
        if described:
            raise no_host_descriptors(described[0])
    constexprs: dict[str, object] = dict(spec.get("constexprs") or {})
    for name in spec.get("equal_to_1") or ():
        signature[name] = "constexpr"
        constexprs[name] = 1
    missing = [n for n, t in signature.items() if t == "constexpr" and n not in constexprs]
    if missing:
        decided = [n for n in missing if n in heuristics]
        # Worded as lists, not counts: this folder may not import ktriage.wording (the module doc).
        hint = (
            (
                f"; computed by the kernel's @triton.heuristics from the launch's arguments: {', '.join(decided)} "
                "(record the launch with ktriage's JIT harness or `record`, or give the values)"
            )
            if decided
            else ""
        )
        raise WorkerError("signature", f"constexpr parameters without a value: {', '.join(missing)}{hint}")
    divisible = set(spec.get("divisible_by_16") or ())
    if _triton_version() < (3, 2):
        raise WorkerError("version", "ktriage compiles with Triton 3.2 and newer")
    if _triton_version() < (3, 3):
        return _build_source_3_2(fn, spec, signature, constexprs, divisible)
    consts = {(names.index(k),): _constexpr_value(v) for k, v in constexprs.items()}
    attrs = {
        (i,): ([["tt.divisibility", 16]] if name in divisible else [])
        for i, name in enumerate(names)
        if signature[name] != "constexpr"
    }
    return ASTSource(fn, signature, consts, attrs)


def _build_source_3_2(
    fn: Any, spec: SpecFields, signature: dict[str, str], constexprs: dict[str, object], divisible: set[str]
) -> Any:
    """Triton 3.2's JIT: the signature lists the non-constexpr parameters (ints equal to 1 included,
    typed i32), constants are keyed by name, and an AttrsDescriptor carries the divisibility and
    equal-to-1 parameter indices."""
    from triton.backends.compiler import AttrsDescriptor
    from triton.compiler import ASTSource

    names = list(fn.arg_names)
    equal_to_1 = set(spec.get("equal_to_1") or ())
    # A None passed to a parameter that is not tl.constexpr stays in 3.2's signature as a null '*i8'
    # pointer (and is a constant None too); specs write it as a constexpr None, like 3.3+ do.
    declared = {p.name for p in fn.params if p.is_constexpr}
    null_ptrs = {
        n for n, t in signature.items() if t == "constexpr" and constexprs.get(n, 0) is None and n not in declared
    }
    constexpr_params = {
        n for n, t in signature.items() if t == "constexpr" and n not in equal_to_1 and n not in null_ptrs
    }
    sig = {
        n: ("i32" if n in equal_to_1 else "*i8" if n in null_ptrs else t)
        for n, t in signature.items()
        if n not in constexpr_params
    }
    constants = {n: _constexpr_value(v) for n, v in constexprs.items()}

    # 3.2's JIT puts every parameter through AttrsDescriptor's rules, tl.constexpr ones included: an int
    # (a bool too: False % 16 == 0) that is a multiple of 16, or None, is "divisible"; a non-bool int 1
    # is "equal to 1". For constexprs this changes no code, but it is what the JIT passes to compile.
    def divisible_constexpr(value: Any) -> bool:
        return value is None or (isinstance(value, int) and value % 16 == 0)

    def one_constexpr(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value == 1

    attrs = AttrsDescriptor.from_dict(
        {
            "cls": "AttrsDescriptor",
            "arg_properties": {
                "tt.divisibility": [
                    i
                    for i, n in enumerate(names)
                    if n in divisible
                    or n in null_ptrs
                    or (n in constexpr_params and divisible_constexpr(constexprs.get(n)))
                ],
                "tt.equal_to": [
                    i
                    for i, n in enumerate(names)
                    if n in equal_to_1 or (n in constexpr_params and one_constexpr(constexprs.get(n)))
                ],
            },
        }
    )
    return ASTSource(fn, sig, constants, attrs)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if hasattr(value, "_asdict"):
            return _jsonable(value._asdict())
        return [_jsonable(v) for v in value]
    return str(value)


def ast_source_view(src: Any) -> dict[str, object]:
    """What an ASTSource carries into the compile, as comparable JSON (signature, constants, attrs)."""

    def keyed(mapping: Any) -> dict[str, str]:
        return {repr(k): repr(v) for k, v in sorted((mapping or {}).items(), key=lambda kv: repr(kv[0]))}

    attrs: Any = getattr(src, "attrs", None)
    if attrs is not None and hasattr(attrs, "to_dict"):  # Triton 3.2's AttrsDescriptor
        attrs_view: Any = {"AttrsDescriptor": _jsonable(attrs.to_dict())}
    else:
        attrs_view = keyed(attrs)
    return {
        "function": getattr(getattr(src, "fn", None), "__name__", None),
        "signature": {str(k): str(v) for k, v in (getattr(src, "signature", None) or {}).items()},
        "constants": keyed(getattr(src, "constants", None) or getattr(src, "constexprs", None)),
        "attrs": attrs_view,
    }


def compile_options(spec: SpecJSON) -> dict[str, int | bool]:
    """The launch options a spec carries, as the JIT passes them to ``compile``. ``enable_fp_fusion``
    only when off: on is Triton's default (3.9 warns when a launch leaves it unset, as Triton did)."""
    options: dict[str, int | bool] = {
        "num_warps": int(spec.get("num_warps", 4)),
        "num_stages": int(spec.get("num_stages", 3)),
        "num_ctas": int(spec.get("num_ctas", 1)),
    }
    maxnreg = spec.get("maxnreg")
    if maxnreg:
        options["maxnreg"] = int(maxnreg)
    if spec.get("enable_fp_fusion", True) is False:
        options["enable_fp_fusion"] = False
    return options


def compile_in_process(spec: SpecJSON, sys_path: list[str] | None = None) -> CompileResult:
    """Compile one spec with this interpreter's Triton, cubin included, as the JIT would.

    Returns the IR texts, Triton's own cubin, its metadata, the ptxas run(s) Triton made (argv and
    ``-v`` log) and the ASTSource view. The fake driver is installed first unless a real one is active
    (a GPU host), so that library modules that touch ``driver.active`` import without a GPU.
    """
    import triton
    from triton.backends.compiler import GPUTarget

    target = spec["target"]
    cc = int(target.replace("sm_", "").rstrip("a"))
    ensure_driver(cc)
    ptxas_capture.install()
    launchable = load_launchable(spec["source"], sys_path or [])
    fn = jit_function_of(launchable, spec["source"])
    src = build_source(fn, spec, heuristics_of(launchable))
    options = compile_options(spec)
    refusal = unknown_options(options, backend_option_names(), triton.__version__)
    if refusal is not None:
        raise refusal
    ptxas_capture.take()
    try:
        kernel = triton.compile(src, target=GPUTarget("cuda", cc, 32), options=options)
    except Exception as exc:
        runs = ptxas_capture.take()
        kind = "assemble" if runs and runs[-1].get("returncode") not in (0, None) else "compile"
        message = with_root_cause(exc)
        missing = placeholder_reads(fn)
        closure = closure_hint(fn, exc)
        if missing:  # the cause a person needs first: the kernel truly needs a module that is missing
            message = (
                f"the kernel reads {', '.join(missing)}, which is not installed in this toolchain (a "
                f"placeholder stood for it): {root_cause(exc)}\n{message}\nfix: install what the kernel "
                f"reads into the toolchain, or give the kernel the value it needs as a tl.constexpr"
            )
        elif closure is not None:
            message = f"{closure[0]}\n{message}\nfix: {closure[1]}"
        raise WorkerError(kind, message) from exc
    asm = dict(kernel.asm)
    result = CompileResult()
    for k in ("ttir", "ttgir", "llir", "ptx"):
        if k in asm:
            result[k] = asm[k]
    result["cubin"] = asm.get("cubin", b"")
    result["metadata"] = _jsonable(kernel.metadata._asdict())
    result["triton_version"] = triton.__version__
    result["placeholder_imports"], result["triton_reexports"] = needed_by(spec["source"], sys_path or [])
    result["ptxas_runs"] = ptxas_capture.take()
    result["ast_source"] = ast_source_view(src)
    return result


def ensure_driver(cc: int) -> None:
    """Install the fake driver unless a real GPU driver is usable (then the JIT probe runs on it)."""
    if fakedriver.installed() is not None:
        return
    if os.environ.get("KTRIAGE_REAL_DRIVER") == "1":
        return
    fakedriver.install(cc)


def prime() -> None:
    """Compile a tiny kernel once, so that every real compile of this process sees the LLVM options
    a previous compile leaves set (Triton 3.2/3.3 set ``nvptx-short-ptr`` only in their PTX step)."""
    spec: SpecJSON = {
        "source": f"{PRIMING_KERNEL}:priming_kernel",
        "signature": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        "constexprs": {"BLOCK": 128},
        "divisible_by_16": ["x_ptr"],
        "target": "sm_" + os.environ.get("KTRIAGE_TARGET_CC", "90"),
    }
    compile_in_process(spec)
