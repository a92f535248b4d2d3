"""Atomic JSON config files with a ``.bak`` fallback (RocketMQ's MixAll.string2File / ConfigManager).

Write: the new text goes to ``<file>.tmp`` (fsynced), the current file is hard-linked to ``<file>.bak``, then
``<file>.tmp`` is renamed over ``<file>``. At every moment ``<file>`` is a complete version and ``.bak`` the one
before it. RocketMQ copies the old content to ``.bak`` and deletes the file before the rename, leaving a moment
with no main file; the link keeps the main file in place throughout.

Load: ``<file>``, else ``<file>.bak`` when the main file is missing or unparseable.

Writes run through aiofiles so the event loop never waits on the disk; loads happen at startup, off the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
from collections.abc import Awaitable
from typing import Any

from pocketmq.remoting.tasks import run_whole

log = logging.getLogger(__name__)

# A name a client sent may hold a lone surrogate (a JSON header's "\ud800"), which UTF-8 cannot encode: written as
# that escape again, it reads back as it was, and one group's odd name does not stop every group's file write.
_LONE_SURROGATES = "backslashreplace"
# fastjson writes Map<Integer, Long> keys unquoted ({0:12,1:5}); quote them so RocketMQ's files load too.
_BARE_INT_KEY = re.compile(r"([{,]\s*)(-?\d+)(\s*:)")


def parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(_BARE_INT_KEY.sub(r'\1"\2"\3', text))


def _read_text(path: str) -> str | None:
    """The file's text; None when it is missing or blank. OSError when it cannot be read, ValueError when it is
    not UTF-8."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    return text if text.strip() else None


def load_json_file(path: str) -> Any | None:
    """The parsed content of ``path``, else of ``path.bak``; None when neither holds valid JSON."""
    for candidate in (path, path + ".bak"):
        try:
            text = _read_text(candidate)
            if text is None:
                continue
            data = parse_json(text)
        except (OSError, ValueError) as e:
            log.warning("cannot read %s (%s); trying the backup", candidate, e)
            continue
        if candidate != path:
            log.warning("loaded %s from its backup %s", path, candidate)
        return data
    return None


def _link_backup(path: str, bak: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(bak)
    try:
        os.link(path, bak)
    except FileNotFoundError:
        pass  # first write: nothing to back up
    except OSError:
        shutil.copyfile(path, bak)  # file systems without hard links


def write_json_file_sync(path: str, data: Any) -> None:
    """write_json_file for callers already off the event loop (startup, a worker thread)."""
    text = json.dumps(data, indent=4, sort_keys=False, ensure_ascii=False)
    write_bytes_file_sync(path, text.encode("utf-8", _LONE_SURROGATES))


def write_bytes_file_sync(path: str, data: bytes, mode: int | None = None) -> None:
    """Atomically replace ``path`` with ``data`` (off the event loop), keeping the previous version in ``.bak``;
    ``mode``: the new file's permission bits (a file holding a key pair stays unreadable to others)."""
    tmp = path + ".tmp"
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
    with open(os.open(tmp, flags, 0o666 if mode is None else mode), "wb") as f:
        if mode is not None:
            os.chmod(tmp, mode)  # (a .tmp left by a crash keeps its own bits otherwise)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    _link_backup(path, path + ".bak")
    os.replace(tmp, path)


async def write_json_file(path: str, data: Any) -> None:
    """Atomically replace ``path`` with ``data`` as pretty JSON, keeping the previous version in ``.bak``."""
    import aiofiles  # (on the first write: a broker that starts and writes nothing never loads it)
    import aiofiles.os

    text = json.dumps(data, indent=4, sort_keys=False, ensure_ascii=False)
    tmp = path + ".tmp"
    await aiofiles.os.makedirs(os.path.dirname(path), exist_ok=True)
    async with aiofiles.open(tmp, "w", encoding="utf-8", errors=_LONE_SURROGATES) as f:
        await f.write(text)
        await f.flush()
        await aiofiles.os.wrap(os.fsync)(f.fileno())
    await aiofiles.os.wrap(_link_backup)(path, path + ".bak")
    await aiofiles.os.replace(tmp, path)


class ConfigManager:
    """Base of the managers persisted as JSON (topics, subscription groups, consumer offsets).

    Subclasses give ``config_file_path``, ``encode()`` (a JSON-able dict) and ``decode(data)``. Changes made
    from synchronous code call ``persist_soon()``: one writer task per file, so bursts of changes coalesce
    into few writes and writes of one file never interleave. Changes persisted on a timer instead (consumer
    offsets) call ``mark_changed()`` and the timer calls ``persist_if_changed()``.
    """

    def __init__(self, config_file_path: str) -> None:
        self.config_file_path = config_file_path
        self._lock = asyncio.Lock()
        self._dirty = False  # a persist_soon() write is due
        self._changed = False  # anything changed since the last write
        self._writer: asyncio.Task[None] | None = None
        # What load() read: the file, its .bak, or None (nothing there to read).
        self.loaded_from: str | None = None

    def encode(self) -> dict[str, Any]:
        raise NotImplementedError

    def decode(self, data: Any) -> None:
        raise NotImplementedError

    def load(self) -> bool:
        """Synchronous (called at startup, in a worker thread): the file, else its ``.bak`` when the file is
        missing, not JSON, or JSON the manager cannot use. False when there is content and none of it is usable:
        RocketMQ's broker does not start then, and one that started empty would lose every offset (or topic, or
        group) at its first write."""
        path = self.config_file_path
        found = False
        for candidate in (path, path + ".bak"):
            try:
                text = _read_text(candidate)
                if text is None:
                    continue
                self.decode(parse_json(text))
            except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
                found = True
                log.error("cannot use %s: %s", candidate, e)
                continue
            if candidate != path:
                log.warning("loaded %s from its backup %s", path, candidate)
            self.loaded_from = candidate
            return True
        return not found  # (nothing persisted yet)

    def mark_changed(self) -> None:
        self._changed = True

    async def persist(self) -> None:
        """Write the current state now (after any write already in progress)."""
        async with self._lock:
            self._dirty = self._changed = False
            await self._run_whole(write_json_file(self.config_file_path, self.encode()))

    async def _run_whole(self, write: Awaitable[None]) -> None:
        """``write`` run to its end under the caller's lock, even when the caller is cancelled.

        Shutdown cancels the periodic flush wherever it is, then flushes what changed. A write cut short would
        leave the state marked as written and the file without it (a CI run lost delayOffset.json's last progress
        that way, and the next broker fired three delayed messages again); one that failed or was cancelled
        marks the state changed again (at worst one more write).
        """
        try:
            await run_whole(write)
        except BaseException:
            self._changed = True
            raise

    async def persist_if_changed(self) -> bool:
        """The periodic flush (and shutdown): no write when nothing changed since the last one."""
        if not self._changed:
            return False
        await self.persist()
        return True

    def persist_soon(self) -> None:
        """Schedule a write of the current state; callable from synchronous code on the loop."""
        self._dirty = self._changed = True
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_while_dirty())

    async def _write_while_dirty(self) -> None:
        while self._dirty:
            try:
                await self.persist()
            except OSError:
                log.exception("cannot persist %s", self.config_file_path)
                return

    async def wait_persisted(self) -> None:
        """Wait for a scheduled write (tests and shutdown)."""
        writer = self._writer
        if writer is not None and not writer.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(writer)
