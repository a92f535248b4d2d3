"""Apache RocketMQ's mqadmin, many commands in one JVM (tests/apache/java/MqadminRunner.java, built by `make
apache-rocketmq` into .apache-rocketmq/mqadmin-runner): a JVM per command cost a second or two of CPU in start-up
and class loading, for some 150 commands in the suite.

``run`` answers as ``subprocess.run(..., capture_output=True, text=True)`` of a fresh mqadmin would: the command's
stdout and stderr, decoded as text mode decodes them, and its exit code (0, or 1 for an uncaught throwable, or the
code of a System.exit, which ends the runner as it ends mqadmin's own JVM).
"""

from __future__ import annotations

import locale
import os
import select
import subprocess
import time
from pathlib import Path

MAIN = "io.pocketmq.tests.MqadminRunner"


class MqadminRunner:
    """One runner JVM; ``run`` one command at a time (callers hold it alone)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        self.argv = argv
        self.log = log
        with open(log, "ab") as sink:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink, env=env,
                                         cwd=cwd, bufsize=0)
        self._buffer = bytearray()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        cmd = [*self.argv, *args]
        if any("\n" in arg for arg in args):
            raise ValueError(f"an mqadmin argument with a line break: {args}")
        assert self.proc.stdin is not None
        request = f"{len(args)}\n".encode() + b"".join(os.fsencode(arg) + b"\n" for arg in args)
        deadline = time.monotonic() + timeout
        try:
            self.proc.stdin.write(request)
            self.proc.stdin.flush()
            head = self._read_line(deadline)
            if head is None:  # the JVM died without answering
                return subprocess.CompletedProcess(cmd, self.proc.wait(), "", self._log_tail())
            kind, code, out_len, err_len = head.split()
            out, err = self._read(int(out_len), deadline), self._read(int(err_len), deadline)
        except BrokenPipeError:
            return subprocess.CompletedProcess(cmd, self.proc.wait(), "", self._log_tail())
        except subprocess.TimeoutExpired:
            self.kill()
            raise subprocess.TimeoutExpired(cmd, timeout) from None
        returncode = int(code) if kind == b"DONE" else self.proc.wait(timeout=30)
        return subprocess.CompletedProcess(cmd, returncode, _text(out), _text(err))

    def kill(self) -> None:
        self.proc.kill()
        self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.close()  # EOF: the runner exits
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        elif self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def _fill(self, deadline: float) -> bool:
        assert self.proc.stdout is not None
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
            raise subprocess.TimeoutExpired(self.argv, 0)
        chunk = os.read(self.proc.stdout.fileno(), 65536)
        self._buffer += chunk
        return bool(chunk)

    def _read_line(self, deadline: float) -> bytes | None:
        while b"\n" not in self._buffer:
            if not self._fill(deadline):
                return None
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        return line

    def _read(self, size: int, deadline: float) -> bytes:
        while len(self._buffer) < size:
            if not self._fill(deadline):
                raise EOFError("the mqadmin runner ended mid-answer")
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def _log_tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:] if self.log.exists() else ""


def _text(data: bytes) -> str:
    """Bytes as subprocess's text mode reads them: the locale's encoding, universal newlines."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")
