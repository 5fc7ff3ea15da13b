"""The case table and runner of the hardening corpus of issue 27 (record, workload import/show,
runs, history, cache, --db, --cluster, profile, environment), shared by its test files.

A :class:`Case` is a bad input (files written into the case's folder, environment values, an optional
setup that builds a store or a cache there) given to the real ``ktriage.cli.app.main(argv)``. It must
end as a user error (exit 2, an ``error:`` and a ``fix:`` line, no traceback) unless the case names
another outcome it must have (``check``: e.g. ``cache verify`` exits 1 and lists the entry). Every
case is bounded at :data:`CASE_LIMIT_S` by SIGALRM: a hang fails as a hang, never waits for ever.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import pytest

from ktriage.cli import exit_codes
from ktriage.cli.app import main

CASE_LIMIT_S = 30

Check = Callable[[int, str, str, Path], None]


@dataclass(frozen=True)
class Case:
    id: str
    argv: Callable[[Path], list[str]]  # from the case's folder (files written there) to the arguments
    files: dict[str, bytes] = field(default_factory=dict)
    env: tuple[tuple[str, str], ...] = ()  # values may name the folder as {d}
    setup: Callable[[Path], None] | None = None  # builds what the case needs (a store, a cache)
    check: Check | None = None  # the outcome when it is not a user error


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so that no ``except Exception`` in ktriage swallows it."""


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise Hang(f"the case did not end within {CASE_LIMIT_S} s")


def assert_user_error(code: int, out: str, err: str, case_id: str) -> None:
    assert "Traceback" not in err + out, f"{case_id}: traceback\n{err}"
    assert "internal error" not in err, f"{case_id}: internal error\n{err}"
    assert code == exit_codes.USAGE, f"{case_id}: exit {code}, expected 2\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
    lines = err.splitlines()
    assert any(line.startswith("error:") for line in lines), f"{case_id}: no error: line\n{err}"
    assert any(line.startswith("fix:") for line in lines), f"{case_id}: no fix: line\n{err}"


def run_case(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name, data in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not name.endswith("/keep"):
            path.write_bytes(data)
    for key, value in case.env:
        monkeypatch.setenv(key, value.format(d=tmp_path))
    monkeypatch.chdir(tmp_path)
    if case.setup is not None:
        case.setup(tmp_path)
    capsys.readouterr()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_LIMIT_S)
    try:
        code = main(case.argv(tmp_path))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    captured = capsys.readouterr()
    if case.check is not None:
        assert "Traceback" not in captured.err + captured.out, f"{case.id}: traceback\n{captured.err}"
        case.check(code, captured.out, captured.err, tmp_path)
    else:
        assert_user_error(code, captured.out, captured.err, case.id)


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No environment of the caller leaks into a case (a KTRIAGE_DB, --debug, a CI summary file)."""
    for key in (
        "KTRIAGE_DEBUG",
        "KTRIAGE_DB",
        "GITHUB_STEP_SUMMARY",
        "KTRIAGE_COLUMNS",
        "KTRIAGE_MAX_INPUT_MB",
        "KTRIAGE_CLUSTER",
        "RAY_ADDRESS",
    ):
        monkeypatch.delenv(key, raising=False)
    _ = os, tmp_path


def distinct(cases: list[Case]) -> list[Case]:
    ids = [c.id for c in cases]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    assert not dup, dup
    return cases


class SilentServer:
    """A TCP port on 127.0.0.1 that accepts connections and never says a word (a firewall's tarpit, a
    wrong service): database connects and Ray's must fail fast on it, not wait for minutes."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)


class HandshakeOnlyPostgres(SilentServer):
    """A PostgreSQL server that completes the startup (no SSL, no password, ReadyForQuery) and then
    reads queries and never answers them: a hung server, a proxy that lost its backend. Opening the
    store must end within its first-query timeout, not wait for ever."""

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    @staticmethod
    def _client(conn: socket.socket) -> None:
        def read(n: int) -> bytes:
            data = b""
            while len(data) < n:
                part = conn.recv(n - len(data))
                if not part:
                    raise EOFError
                data += part
            return data

        try:
            while True:
                (length,) = struct.unpack("!I", read(4))
                body = read(length - 4)
                if struct.unpack("!I", body[:4])[0] in (80877103, 80877104):  # SSLRequest, GSSENCRequest: no
                    conn.sendall(b"N")
                    continue
                break
            reply = b"R" + struct.pack("!II", 8, 0)  # AuthenticationOk
            for key, value in (
                (b"server_version", b"16.0"),
                (b"client_encoding", b"UTF8"),
                (b"standard_conforming_strings", b"on"),
                (b"integer_datetimes", b"on"),
            ):
                payload = key + b"\0" + value + b"\0"
                reply += b"S" + struct.pack("!I", 4 + len(payload)) + payload
            reply += b"K" + struct.pack("!III", 12, 1, 2) + b"Z" + struct.pack("!I", 5) + b"I"
            conn.sendall(reply)
            while conn.recv(65536):
                pass  # every query is read and left unanswered
        except (EOFError, OSError):
            pass
