"""The learner's code in a process of its own, speaking only data back to the check.

A check (minigrad/learn/course/checks/NN_slug.py) decides its verdict in minigrad's process.
The learner's file, or a notebook's definitions sent as source, runs in a child process; the
check reaches it only through `Answers`, which stands in for the learner's module:

    fn = answers.table_grad_from_one_hot     # a RemoteFunction: calling it sends the arguments
    grad = fn(one_hot, upstream)             # as data and gets the returned value back as data

and through probes: functions of a check module that run in the learner's process, call the
learner's code there on the inputs they are given, and return what it gave, as data:

    @probe
    def lookup_forward(answers, key, weight, ids):     # runs where the learner's code runs
        ...
    out = run(answers, lookup_forward, "a", weight, ids)  # in the check: data in, data out

What comes back is numbers, arrays, text and the names of types (minigrad.learn.course.wire),
never an object of the learner's, so nothing in the learner's file can reach the verdict: not
by replacing minigrad's classes (they are replaced in the child only), not by walking up the
stack to the check's frames (they are in another process), not by writing a report (the parent
writes none) or printing one (the child's output is shown, marked, above the verdict, and every
process it started is ended before the verdict is printed: `_Orphans`). An error
the learner's code raises there comes back as `LearnerRaised` (its type's name, message, line
and traceback as text); a NotImplementedError as `LearnerNotImplemented`; a child that ends,
hangs past its time or sends what is not data ends the check with `LearnerStopped`.

`Answers` over `Here` runs the same probes in this process (through the same data format): the
tests of each check's diagnoses use it. The checks and the lessons never do.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import functools
import importlib
import importlib.util
import inspect
import linecache
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minigrad.learn.course import wire

STARTUP_LIMIT = 300.0  # seconds the child may take to import minigrad, before the learner's code runs
TRACEBACK_LENGTH = 20_000  # characters of a learner's traceback kept
OUTPUT_KEPT = 20_000  # characters of the learner's printed output shown with the verdict
PROBE_MODULES = "minigrad.learn.course."  # probes live in the course's modules (and a folder's own check)
ORPHAN_ROUNDS = 100  # times the ending of processes the learner's code left behind is repeated
CHECK_ALIAS = "<check>"  # the lesson's check module, whatever name each process loaded it under


# ---- what the check sees when the learner's code fails --------------------------------------

class LearnerRaised(Exception):
    """An exception the learner's code raised in its process, as data: `kind` (its type's
    name), `message`, `where` (' (in mine.py, line 12)' or ''), `traceback` (text), `args`
    (reprs of its arguments, for SystemExit)."""

    def __init__(self, kind: str, message: str, where: str = "", traceback: str = "",
                 args: tuple[str, ...] = ()):
        super().__init__(message)
        self.kind, self.message, self.where, self.traceback_text = kind, message, where, traceback
        self.exit_args = tuple(args)


class LearnerNotImplemented(LearnerRaised, NotImplementedError):
    """The learner's code raised NotImplementedError: the stub is not filled in (not attempted)."""


class LearnerStopped(BaseException):
    """The learner's process ended, ran out of time or sent what is not data: the check cannot go
    on. A BaseException, so that no `except Exception` in a check can take it for an answer."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _raised_from(data: dict) -> LearnerRaised:
    try:
        kind, message = str(data["kind"])[:200], str(data["message"])
        where, text = str(data.get("where", ""))[:300], str(data.get("traceback", ""))[:TRACEBACK_LENGTH]
        args = tuple(str(a)[:200] for a in data.get("args", ()))[:8]
    except (KeyError, TypeError, AttributeError) as exc:
        raise LearnerStopped(f"your code's process sent an error report that is not one ({exc})") from None
    cls = LearnerNotImplemented if kind == "NotImplementedError" else LearnerRaised
    return cls(kind, message, where, text, args)


# ---- the check's side: Answers, RemoteFunction, RemoteClass --------------------------------------

def probe(function: Callable) -> Callable:
    """Mark a check module's function as a probe: it runs in the learner's process, takes the
    learner's module first, and returns data. Only marked functions are run there."""
    function.is_probe = True  # type: ignore[attr-defined]  # a mark read back with getattr
    return function


class RemoteFunction:
    """A function of the learner's: calling it sends the arguments as data and returns the
    value as data, or raises LearnerRaised (LearnerNotImplemented for the stub)."""

    def __init__(self, answers: Answers, name: str, own_name: str = ""):
        self.answers, self.name = answers, name
        self.__name__ = own_name or name  # what the function calls itself (def own_name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.answers.run(call_function, self.name, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<your function {self.__name__}>"


class RemoteClass:
    """A class defined in the learner's file: its name, and whether it subclasses
    minigrad.Function (its methods are reached through probes)."""

    def __init__(self, name: str, is_function: bool):
        self.__name__, self.is_function = name, is_function

    def __repr__(self) -> str:
        return f"<your class {self.__name__}>"


class RemoteValue:
    """Another name the learner's file defines (a module, a number...): only its kind is known."""

    def __init__(self, name: str, kind: str):
        self.__name__, self.kind = name, kind

    def __repr__(self) -> str:
        return f"<your {self.kind} {self.__name__}>"


class Answers:
    """The learner's module as the check sees it: the names it defines (from an inventory the
    learner's process sends once it has run the file), functions to call with data, and `run`
    for probes. `transport` is a LearnerProcess or `Here`."""

    def __init__(self, transport: Any, check_module: str = ""):
        self._transport = transport
        self._check_module = check_module
        self._names: dict[str, tuple[str, str, str]] = dict(transport.inventory)

    def __getattr__(self, name: str) -> Any:
        kind, own_name, _ = self.__dict__.get("_names", {}).get(name, (None, name, ""))
        if kind is None or name.startswith("__"):
            raise AttributeError(f"your code defines no {name!r}")
        if kind in ("function", "callable"):
            return RemoteFunction(self, name, own_name)
        if kind in ("Function", "class"):
            return RemoteClass(name, kind == "Function")
        return RemoteValue(name, kind)

    def __dir__(self) -> list[str]:
        return sorted(self._names)

    def origin(self, name: str) -> tuple[str, str]:
        """(the module the learner's `name` was defined in, the name it has there); ('', name)
        when unknown or not defined."""
        _, own_name, module = self._names.get(name, ("", name, ""))
        return module, own_name

    def run(self, probe_function: Callable, *args: Any, **kwargs: Any) -> Any:
        """probe_function(the learner's module, *args, **kwargs), run where the learner's code
        runs; what it returns comes back as data."""
        if not getattr(probe_function, "is_probe", False):
            raise TypeError(f"{probe_function.__name__} is not a probe (mark it with @probe)")
        module = probe_function.__module__
        if module == self._check_module:
            module = CHECK_ALIAS
        return self._transport.call(module, probe_function, args, kwargs)


def run(answers: Any, probe_function: Callable, *args: Any, **kwargs: Any) -> Any:
    """A probe on `answers`: an Answers (the learner's process, or Here), or any module or
    namespace of functions, which is then run here through the same data format."""
    if not isinstance(answers, Answers):
        answers = Answers(Here(answers))
    return answers.run(probe_function, *args, **kwargs)


@probe
def call_function(answers: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """The learner's function `name` on the arguments (a probe: it runs in their process)."""
    return getattr(answers, name)(*args, **kwargs)


def inventory(module: Any) -> dict[str, tuple[str, str, str]]:
    """What each name of the learner's module is: (kind, the name it gives itself, the module
    it was defined in). The kind is 'Function' (a subclass of minigrad.Function), 'class',
    'function', 'callable', 'module' or 'value'."""
    from minigrad.engine import Function

    kinds = {}
    for name, value in list(vars(module).items()):
        if name.startswith("__"):
            continue
        if isinstance(value, type):
            kind = "Function" if issubclass(value, Function) else "class"
        elif isinstance(value, types.ModuleType):
            kind = "module"
        elif isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            kind = "function"
        else:
            kind = "callable" if callable(value) else "value"
        own_name = getattr(value, "__name__", name) if kind != "value" else name
        defined_in = getattr(value, "__module__", "") if kind != "value" else ""
        kinds[name] = (kind, own_name if isinstance(own_name, str) else name,
                       defined_in if isinstance(defined_in, str) else "")
    return kinds


class Here:
    """A transport that runs probes in this process on a module or namespace of answers, with
    the same data format and the same errors as the learner's process (for the checks' tests)."""

    def __init__(self, answers: Any):
        if isinstance(answers, dict):
            answers = types.SimpleNamespace(**answers)
        self.answers = answers
        self.inventory = inventory(answers)

    def call(self, module: str, probe_function: Callable, args: tuple, kwargs: dict) -> Any:
        args, kwargs = wire.decode(wire.encode([list(args), kwargs]))
        try:
            value = probe_function(self.answers, *args, **kwargs)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            raised = _raised_from(describe_raised(exc, _where_here))
            raise raised from exc
        return wire.decode(wire.encode(value))


def _where_here(frame_file: str, line: int, function: str) -> str | None:
    return None  # in this process the exception itself is kept as the cause: its traceback says where


def _probe_named(module: str, name: str, check: types.ModuleType | None) -> Callable:
    if module == CHECK_ALIAS:
        if check is None:
            raise LookupError("no check module is loaded here")
        owner = check
    elif module.startswith(PROBE_MODULES):
        owner = importlib.import_module(module)
    else:
        raise LookupError(f"probes live in the course's modules, not in {module!r}")
    function = getattr(owner, name, None)
    if function is None or not getattr(function, "is_probe", False):
        raise LookupError(f"{module}.{name} is not a probe")
    return function


def describe_raised(exc: BaseException, where_of: Callable[[str, int, str], str | None]) -> dict:
    """An exception as data: its type's name, message, where (the deepest frame `where_of`
    recognises as the learner's), the traceback as text, and its arguments' reprs."""
    def text(make: Callable[[], str], limit: int) -> str:
        try:
            return make()[:limit]
        except Exception:  # a learner's __str__ that raises
            return "(could not be shown)"

    where = ""
    for link in _exception_chain(exc):
        places = [where_of(frame.f_code.co_filename, line, frame.f_code.co_name)
                  for frame, line in traceback.walk_tb(link.__traceback__)]
        found = [w for w in places if w]
        if found:
            where = found[-1]
            break
    return {"kind": type(exc).__name__, "message": text(lambda: str(exc), 4000), "where": where,
            "traceback": text(lambda: "".join(traceback.format_exception(exc)), TRACEBACK_LENGTH),
            "args": [text(functools.partial(repr, a), 200) for a in getattr(exc, "args", ())[:8]]}


def _exception_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    return chain


# ---- what the learner's process runs: a file, or a notebook's definitions as source -----------

@dataclass
class Program:
    """The learner's code to run in the child: a file, or pieces of source (each with the file
    name and first line it had in the notebook) plus named data values."""

    file: Path | None = None
    sources: list[tuple[str, int, str]] = field(default_factory=list)  # (filename, first line, code)
    values: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # names that could not be sent, and why

    def as_data(self) -> dict:
        return {"sources": [list(s) for s in self.sources], "values": wire.encode(self.values)}


def notebook_program(answers: Any, wanted: list[str] | None = None) -> Program:
    """A notebook's definitions (a dict such as globals(), a namespace or a module) as a
    Program: a module with a file is run as that file. Otherwise the names in `wanted` (every
    public name when None) go, each function and class as its source (a lambda as its
    expression), each imported module or function as its import, each number, string or array
    as data, together with the globals those definitions read. What they need that cannot be
    sent is listed in `skipped`."""
    file = getattr(answers, "__file__", None) if isinstance(answers, types.ModuleType) else None
    if file:
        return Program(file=Path(file))
    namespace = dict(answers if isinstance(answers, dict) else vars(answers))
    if wanted is None:
        wanted = [name for name in namespace if not name.startswith("_") and name not in _NOTEBOOK_NAMES]
    program = Program()
    imports: list[tuple[str, int, str]] = []
    definitions: list[tuple[str, int, str]] = []
    queue = [(name, namespace[name]) for name in wanted if name in namespace]
    sent: set[str] = set()
    while queue:
        name, value = queue.pop(0)
        if name in sent:
            continue
        sent.add(name)
        _add_to_program(program, name, value, imports, definitions)
        queue += list(_globals_read_by(value).items())  # the helpers and values the definition reads
    program.sources = imports + definitions
    return program


_NOTEBOOK_NAMES = {"In", "Out", "exit", "quit", "get_ipython"}


def _add_to_program(program: Program, name: str, value: Any, imports: list, definitions: list) -> None:
    if isinstance(value, types.ModuleType):
        imports.append(("<imports>", 1, f"import {value.__name__} as {name}"))
        return
    if isinstance(value, (type, types.FunctionType)):
        imported = _import_line(name, value)
        if imported:
            imports.append(("<imports>", 1, imported))
            return
        found = _source_of(value)
        if found is None:
            program.skipped.append(f"{name} (its source could not be found)")
            return
        filename, first, source = found
        if value.__name__ == "<lambda>":
            source = f"{name} = {source}"
        elif value.__name__ != name:
            source += f"\n{name} = {value.__name__}\n"
        definitions.append((filename, first, source))
        return
    encoded = wire.encode(value)
    if isinstance(encoded, dict) and "object" in encoded:
        program.skipped.append(f"{name} (a {type(value).__name__}: not data, not a definition)")
        return
    program.values[name] = value


def _source_of(value: Any) -> tuple[str, int, str] | None:
    """(file name, first line, source) of a function or class, at the left margin; of a lambda,
    its expression. A class defined in a notebook cell has no file inspect can find: its source
    is then read from the cell of one of its methods."""
    try:
        lines, first = inspect.getsourcelines(value)
    except (OSError, TypeError):
        return _class_source_from_a_method(value) if isinstance(value, type) else None
    filename = value.__code__.co_filename if isinstance(value, types.FunctionType) else inspect.getfile(value)
    source = textwrap.dedent("".join(lines))
    if isinstance(value, types.FunctionType) and value.__name__ == "<lambda>":
        expression = _lambda_expression(source, value.__code__)
        if expression is None:
            return None
        source = expression
    return filename, max(first, 1), source


def _lambda_expression(source: str, code: types.CodeType) -> str | None:
    """The text of the lambda in `source` (the lines around it) that compiles to `code`."""
    for text in (source, f"(\n{source}\n)"):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Lambda):
                continue
            segment = ast.get_source_segment(text, node) or ""
            with contextlib.suppress(SyntaxError):
                compiled = compile(segment, "<lambda>", "eval")
                inner = [c for c in compiled.co_consts if isinstance(c, types.CodeType)]
                if inner and inner[0].co_code == code.co_code and inner[0].co_names == code.co_names:
                    return segment
    return None


def _class_source_from_a_method(cls: type) -> tuple[str, int, str] | None:
    for member in vars(cls).values():
        code = getattr(getattr(member, "__func__", member), "__code__", None)
        if code is None:
            continue
        cell = "".join(linecache.getlines(code.co_filename))
        with contextlib.suppress(SyntaxError):
            for node in ast.walk(ast.parse(cell)):
                if (isinstance(node, ast.ClassDef) and node.name == cls.__name__
                        and node.lineno <= code.co_firstlineno <= (node.end_lineno or 0)):
                    start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                    source = "".join(cell.splitlines(keepends=True)[start - 1:node.end_lineno])
                    return code.co_filename, start, textwrap.dedent(source)
    return None


def _globals_read_by(value: Any) -> dict[str, Any]:
    """The module-level names a function (or each method of a class) reads, with their values."""
    functions = [value] if isinstance(value, types.FunctionType) else []
    if isinstance(value, type):
        functions = [getattr(m, "__func__", m) for m in vars(value).values()]
        functions = [f for f in functions if isinstance(f, types.FunctionType)]
    found: dict[str, Any] = {}
    for function in functions:
        codes = [function.__code__]
        while codes:
            code = codes.pop()
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            for name in code.co_names:
                if name in function.__globals__:
                    found[name] = function.__globals__[name]
    return found


def _import_line(name: str, value: Any) -> str | None:
    """`from module import thing as name` when `value` comes from an importable module (not
    the notebook's own __main__, nor a learner's file loaded as answers), else None."""
    module = getattr(value, "__module__", None)
    if not module or module in ("__main__", "builtins") or module.startswith("minigrad_answers_"):
        return None
    owner = sys.modules.get(module)
    if owner is None:
        return None
    qualname = value.__qualname__
    if getattr(owner, qualname, None) is not value:
        return None
    return f"from {module} import {qualname} as {name}"


# ---- loading files as modules: the learner's answers, a lessons folder's own check --------------

def load_module(path: Path | str, name: str | None = None) -> types.ModuleType:
    """Execute a file as a fresh module (names may start with digits: no import statement needed).

    Learners' answers and the checks of a lessons folder of one's own are loaded with this.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"load_module: no file at {path}")
    name = name or f"minigrad_answers_{path.stem}_{time.perf_counter_ns()}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_check_module(lesson: Any) -> types.ModuleType:
    """The lesson's check module: a module of minigrad.learn.course.checks, or for a lessons
    folder of one's own, its `checks/NN_slug.py` run as a file (never imported as a package)."""
    path = lesson.check_path
    if not path.is_file():
        raise FileNotFoundError(f"lesson {lesson.number} has no check (looked for {path})")
    if lesson.check_is_packaged:
        return importlib.import_module(f"minigrad.learn.course.checks.{lesson.stem}")
    return load_module(path, f"minigrad_check_{lesson.stem}_{time.perf_counter_ns()}")


# ---- the learner's process, seen from the check ---------------------------------------------------

# The child: the minigrad package that runs this process first on its path (not the learner's
# folder, where a file named numpy.py would shadow numpy), then serve.
_CHILD_CODE = ("import sys; sys.path[0] = sys.argv[1]; from minigrad.learn.course.learner import "
               "serve; serve(*sys.argv[2:])")


class LearnerProcess:
    """The child process that runs the learner's program for one check.

    `inventory` holds the names the program defined once it ran; `call` runs a probe there.
    Every wait for the child counts against `timeout` seconds in all; past it, or when the child
    ends or sends what is not data, `call` raises LearnerStopped. `close()` ends the child and
    everything it started, and returns what it printed.
    """

    def __init__(self, lesson: Any, program: Program, timeout: float):
        self.timeout, self.left = timeout, timeout
        self.inventory: dict[str, tuple[str, str, str]] = {}
        self.load_error: LearnerRaised | None = None
        self.program, self.number = program, lesson.number
        self.starting = False
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        package_parent = str(Path(__file__).resolve().parents[3])  # the folder holding minigrad/
        target = str(program.file.resolve()) if program.file is not None else "-"
        command = [sys.executable, "-c", _CHILD_CODE, package_parent, str(lesson.root),
                   str(lesson.number), str(to_child), str(from_child), target]
        try:
            with _Orphans.starting() as started:
                self.child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                              stderr=subprocess.STDOUT, start_new_session=True,
                                              pass_fds=(to_child, from_child))
                started(self.child.pid)
        except BaseException:
            for fd in (from_parent, to_parent):
                os.close(fd)
            raise
        finally:
            os.close(to_child)
            os.close(from_child)
        self.requests, self.replies = from_parent, to_parent
        self.output = _OutputReader(self.child.stdout)

    def start(self) -> None:
        """Wait until the child has imported minigrad (not counted in the learner's time), send
        the program (a notebook's) and wait until it has run: then `inventory` holds the names
        it defines, or `load_error` what it raised."""
        left, self.left, self.starting = self.left, STARTUP_LIMIT, True
        reply = self._receive()
        self.left, self.starting = left, False
        if "broken" in reply:
            raise LearnerStopped(f"the check of lesson {self.number} could not run: {reply['broken']}")
        if reply != {"started": True}:
            raise LearnerStopped("your code's process did not start as the check's does")
        if self.program.file is None:
            self._send({"program": self.program.as_data()})
        reply = self._receive()
        if "raised" in reply:
            self.load_error = _raised_from(reply["raised"])
        elif "ready" in reply:
            self.inventory = _read_inventory(reply["ready"])
        else:
            raise LearnerStopped("your code's process sent something other than the names it defines")

    def call(self, module: str, probe_function: Callable, args: tuple, kwargs: dict) -> Any:
        self._send({"probe": [module, probe_function.__name__], "args": wire.encode([list(args), kwargs])})
        reply = self._receive()
        if "raised" in reply:
            raise _raised_from(reply["raised"])
        if "value" not in reply:
            raise LearnerStopped("your code's process answered with something other than a value")
        try:
            return wire.decode(reply["value"])
        except wire.WireError as exc:
            raise LearnerStopped(f"what your code's process sent back is not data: {exc}") from None

    def _send(self, message: dict) -> None:
        start = time.monotonic()
        try:
            wire.write_message(self.requests, message, deadline=start + self.left)
        except TimeoutError:
            raise LearnerStopped(self._timed_out()) from None
        except OSError:  # the child is gone: its pipe is closed
            raise LearnerStopped(self._ended()) from None
        finally:
            self.left -= time.monotonic() - start

    def _receive(self) -> dict:
        start = time.monotonic()
        try:
            reply = wire.read_message(self.replies, deadline=start + self.left)
        except TimeoutError:
            raise LearnerStopped(self._timed_out()) from None
        except wire.WireError as exc:
            raise LearnerStopped("what came back from your code's process is not the check's data "
                                 f"({exc}): did your code write into the check's channel?") from None
        finally:
            self.left -= time.monotonic() - start
        if reply is None:
            raise LearnerStopped(self._ended())
        if not isinstance(reply, dict):
            raise LearnerStopped("your code's process answered with something that is not a reply")
        return reply

    def _timed_out(self) -> str:
        if self.starting:
            return (f"the check's process did not get minigrad imported within {STARTUP_LIMIT:g} s, before "
                    "your code ran (is the machine very busy?)")
        return (f"your code did not finish within {self.timeout:g} s, so the check was stopped "
                "(an endless loop? a loop waiting for something that never comes?)")

    def _ended(self) -> str:
        try:
            status = self.child.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return ("your code closed the check's channel to its process: the check cannot go on. "
                    "The check decides the verdict: leave the process's files alone")
        how = f"signal {signal.Signals(-status).name}" if status < 0 else f"exit status {status}"
        return (f"your code ended Python before the check could finish ({how}): os._exit, or a crash "
                "of the interpreter. The check decides the verdict: remove the call")

    def close(self) -> str:
        """End the child and what it started; what it printed (cut to OUTPUT_KEPT characters)."""
        with contextlib.suppress(OSError):
            os.close(self.requests)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if hasattr(os, "killpg"):
                os.killpg(self.child.pid, signal.SIGKILL)  # its own session: it and what it started
            else:
                self.child.kill()
        self.child.wait()
        _Orphans.end(self.child.pid)  # what it started and hid in a session of its own
        with contextlib.suppress(OSError):
            os.close(self.replies)
        return self.output.text()


def _read_inventory(data: Any) -> dict[str, tuple[str, str, str]]:
    try:
        return {str(name): (str(kind)[:40], str(own)[:200], str(module)[:200])
                for name, (kind, own, module) in data.items()}
    except (TypeError, ValueError, AttributeError):
        raise LearnerStopped("your code's process sent a list of names that is not one") from None


class _OutputReader:
    """Reads a child's output on a thread, keeping the first OUTPUT_KEPT characters, so that a
    learner's endless print loop neither fills memory nor blocks the child on a full pipe."""

    def __init__(self, stream: Any):
        self.stream, self.kept, self.dropped = stream, bytearray(), 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for chunk in iter(lambda: self.stream.read1(65536), b""):
            room = max(0, OUTPUT_KEPT - len(self.kept))
            self.kept += chunk[:room]
            self.dropped += len(chunk) - min(room, len(chunk))

    def text(self) -> str:
        self.thread.join(timeout=5)  # the process group is gone: the pipe has closed
        self.stream.close()
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n... ({self.dropped} more bytes of output not shown)\n"
        return text


# ---- what the learner's code leaves running -------------------------------------------------------


class _Orphans:
    """Processes the learner's code started and hid from the end of its session.

    `close()` kills the child's whole session, but a process it started can leave that session
    (a double fork and `os.setsid()`) and outlive the check, to print a verdict of its own after
    the real one. On Linux, while any learner process runs, this process is a "child subreaper":
    orphaned descendants are re-parented to it instead of to init, so `close()` can find them
    (children of this process that are neither the learner processes still being checked nor
    children it had before) and end them. Elsewhere only the child's session is ended.
    """

    SET, GET = 36, 37  # prctl's PR_SET_CHILD_SUBREAPER and PR_GET_CHILD_SUBREAPER
    lock = threading.Lock()
    users = 0  # learner processes running (`minigrad lessons` checks several at once)
    previous = 0  # this process's own setting, restored when the last learner process ends
    kept: set[int] = set()  # children this process had before, and learner processes still running

    @classmethod
    @contextlib.contextmanager
    def starting(cls) -> Iterator[Callable[[int], None]]:
        """Around the start of a learner process: `with _Orphans.starting() as started:` ...
        `started(pid)`. Holds the lock meanwhile, so that another check ending at that moment
        does not take the new process for an orphan."""
        prctl = _prctl()
        with cls.lock:
            if cls.users == 0 and prctl is not None:
                setting = ctypes.c_int(0)
                prctl(cls.GET, ctypes.byref(setting), 0, 0, 0)
                cls.previous = setting.value
                prctl(cls.SET, 1, 0, 0, 0)
                cls.kept = set(_children())
            cls.users += 1
            try:
                yield cls.kept.add
            except BaseException:
                cls._leave(prctl)
                raise

    @classmethod
    def end(cls, pid: int) -> None:
        """Call once the learner process `pid` has ended and been waited for."""
        prctl = _prctl()
        with cls.lock:
            cls.kept.discard(pid)
            if prctl is not None:
                _end_all_but(cls.kept)
            cls._leave(prctl)

    @classmethod
    def _leave(cls, prctl: Callable | None) -> None:
        cls.users -= 1
        if cls.users == 0 and prctl is not None:
            prctl(cls.SET, cls.previous, 0, 0, 0)


def _prctl() -> Callable | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _children() -> list[int]:
    """The ids of this process's children (Linux: read from /proc)."""
    me, found = os.getpid(), []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(os.path.join(entry.path, "stat"), encoding="utf-8", errors="replace") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()  # the name in brackets may hold spaces
            except (OSError, IndexError):
                continue
            if len(fields) > 1 and fields[1] == str(me):
                found.append(int(entry.name))
    return found


def _end_all_but(kept: set[int]) -> None:
    """Kill and reap this process's children outside `kept`, again until none is left: a killed
    orphan's own children are re-parented here in their turn."""
    for _ in range(ORPHAN_ROUNDS):
        orphans = [pid for pid in _children() if pid not in kept]
        if not orphans:
            return
        for pid in orphans:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in orphans:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


# ---- the learner's process itself ---------------------------------------------------------------

def serve(root: str, number: str, requests: str, replies: str, target: str) -> None:
    """In the child: run the learner's program, send the names it defines, then run each probe
    asked for and send back what it returns, until the check closes the channel. Ends the
    process at once, so no exit handler or thread of the learner's code runs afterwards."""
    requests_fd, replies_fd = int(requests), int(replies)
    from minigrad.learn.course import catalog

    try:
        check = load_check_module(catalog.get_lesson(int(number), Path(root)))
    except Exception as exc:  # the lesson's check could not be read: not the learner's doing
        _reply(replies_fd, {"broken": f"{type(exc).__name__}: {exc}"})
        os._exit(0)
    _reply(replies_fd, {"started": True})  # minigrad is imported: the learner's time starts now
    try:
        answers, where_of = _load_program(requests_fd, target)
    except BaseException as exc:  # the learner's file raised (SystemExit too) or did not compile
        _reply(replies_fd, {"raised": describe_raised(exc, _where_in_file(target))})
        os._exit(0)
    _reply(replies_fd, {"ready": inventory(answers)})
    while True:
        request = wire.read_message(requests_fd)
        if request is None:
            break
        _reply(replies_fd, _answer(request, check, answers, where_of))
    os._exit(0)


def _load_program(requests_fd: int, target: str) -> tuple[Any, Callable]:
    """The learner's module, from their file or from the notebook's program the check sends."""
    if target != "-":
        sys.argv[:] = [target]  # as `python file` would see it
        return load_module(Path(target)), _where_in_file(target)
    sys.path.append(os.getcwd())  # a notebook's imports of its own folder's modules
    program = wire.read_message(requests_fd)["program"]
    module = types.ModuleType("minigrad_answers_notebook")
    module.__dict__.update(wire.decode(program["values"]))
    filenames = set()
    for filename, first, source in program["sources"]:
        tree = ast.parse(source, filename=filename)
        ast.increment_lineno(tree, int(first) - 1)
        filenames.add(filename)
        exec(compile(tree, filename, "exec"), module.__dict__)
    return module, _where_in_cells(filenames)


def _where_in_file(target: str) -> Callable[[str, int, str], str | None]:
    resolved = Path(target).resolve() if target != "-" else None

    def where(filename: str, line: int, function: str) -> str | None:
        if resolved is not None and Path(filename).resolve() == resolved:
            return f" (in {resolved.name}, line {line})"
        return None

    return where


def _where_in_cells(filenames: set[str]) -> Callable[[str, int, str], str | None]:
    def where(filename: str, line: int, function: str) -> str | None:
        return f" (in {function}, line {line} of its cell)" if filename in filenames else None

    return where


def _answer(request: Any, check: Any, answers: Any, where_of: Callable) -> dict:
    try:
        module, name = request["probe"]
        probe_function = _probe_named(str(module), str(name), check)
        args, kwargs = wire.decode(request["args"])
    except Exception as exc:  # not a request of the check's: say so, as data
        return {"raised": {"kind": "LookupError", "message": f"not a probe request: {exc}"}}
    try:
        value = probe_function(answers, *args, **kwargs)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: they are the learner's
        return {"raised": describe_raised(exc, where_of)}
    return {"value": wire.encode(value)}


def _reply(fd: int, message: dict) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        wire.write_message(fd, message)
    except OSError:  # the check has gone: nothing to tell
        os._exit(0)
