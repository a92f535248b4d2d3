"""LocalFileOffsetStore: a BROADCASTING consumer's offsets, in a file of its own.

Every consumer of a broadcasting group reads every message, so the brokers keep no offsets for it; each
client keeps its own in ``<offset_store_dir>/<clientIP>@<instanceName>/<group>/offsets.json`` (RocketMQ's
layout, ``~/.rocketmq_offsets`` by default), in the Java client's form: OffsetSerializeWrapper as fastjson writes
it, ``{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}`` (a MessageQueue object as each key), so
that an application moved from one client to the other starts where it was. Writes are atomic: a temporary file
is written and fsynced, the previous file is kept as ``offsets.json.bak``, then the new one is renamed into place,
so a crash leaves either the old or the new table, never half of one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil

import aiofiles
import aiofiles.os

from pocketmq.remoting import fastjson
from pocketmq.remoting.admin_body import mq_from_key
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.tasks import run_whole

from .offset_store import ReadOffsetType

log = logging.getLogger(__name__)

DEFAULT_OFFSET_STORE_DIR = os.path.join("~", ".rocketmq_offsets")


def _key(mq: MessageQueue) -> str:
    return f"{mq.topic}@{mq.broker_name}@{mq.queue_id}"


class LocalFileOffsetStore:
    def __init__(self, store_dir: str, client_id: str, group: str) -> None:
        self.path = os.path.join(os.path.expanduser(store_dir), client_id, group, "offsets.json")
        self.group = group
        self.offset_table: dict[MessageQueue, int] = {}
        self._write_lock = asyncio.Lock()

    def load(self) -> None:
        """Read the file (or its .bak when the file is missing or torn) into memory."""
        self.offset_table.update(self._read_file())

    def _read_file(self) -> dict[MessageQueue, int]:
        for path in (self.path, self.path + ".bak"):
            try:
                with open(path, encoding="utf-8") as f:
                    table = fastjson.loads(f.read())["offsetTable"]
                if isinstance(table, list):  # (pocketmq's own form before it wrote Java's: still read)
                    return {MessageQueue(e["topic"], e["brokerName"], int(e["queueId"])): int(e["offset"])
                            for e in table}
                return {mq_from_key(key, path): int(offset) for key, offset in table.items()}
            except FileNotFoundError:
                continue
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                log.warning("offset file %s is unreadable (%s); trying its backup", path, e)
        return {}

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool = False) -> None:
        old = self.offset_table.get(mq)
        if increase_only and old is not None and offset <= old:
            return
        self.offset_table[mq] = offset

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        if kind is not ReadOffsetType.READ_FROM_STORE:
            offset = self.offset_table.get(mq)
            if offset is not None or kind is ReadOffsetType.READ_FROM_MEMORY:
                return -1 if offset is None else offset
        stored = (await asyncio.to_thread(self._read_file)).get(mq)
        if stored is None:
            return -1
        self.offset_table[mq] = stored
        return stored

    def remove_offset(self, mq: MessageQueue) -> None:
        # RocketMQ keeps a broadcasting consumer's offsets: the queue may come back and start where it was.
        pass

    async def persist(self, mq: MessageQueue) -> None:
        await self.persist_all()

    async def persist_all(self) -> None:
        table = dict(sorted(self.offset_table.items(), key=lambda kv: _key(kv[0])))
        if not table:
            return
        text = fastjson.dumps({"offsetTable": table})
        async with self._write_lock:  # one writer at a time: the periodic persist and shutdown may overlap
            # Whole, even when the caller is cancelled (a shutdown under a timeout): the table reaches the file, and
            # the next writer never meets a thread of this write still at work on the temporary file.
            await run_whole(self._write_atomically(text))

    async def _write_atomically(self, text: str) -> None:
        """RocketMQ's MixAll.string2File, each blocking step on aiofiles' thread pool so the loop never waits
        on the disk: ``offsets.json.tmp`` written and fsynced, the current file copied to ``.bak``, then the
        temporary file renamed over it. (The broker's config_file does the same; the client cannot import it.)
        """
        tmp = self.path + ".tmp"
        await aiofiles.os.makedirs(os.path.dirname(self.path), exist_ok=True)
        async with aiofiles.open(tmp, "w", encoding="utf-8") as f:
            await f.write(text)
            await f.flush()
            await aiofiles.os.wrap(os.fsync)(f.fileno())
        await aiofiles.os.wrap(_copy_to_backup)(self.path, self.path + ".bak")
        await aiofiles.os.replace(tmp, self.path)


def _copy_to_backup(path: str, bak: str) -> None:
    with contextlib.suppress(FileNotFoundError):  # the first write has nothing to back up
        shutil.copyfile(path, bak)
