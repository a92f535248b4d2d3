"""ConfigManager's writes when the writer is cancelled: shutdown cancels the periodic flush wherever it is, then
flushes what changed. A CI run once lost delayOffset.json's last progress that way (the cancelled flush had
already cleared the changed flag), and the next broker on the store fired three delayed messages again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pocketmq.broker import BrokerConfig
from pocketmq.broker.config_file import ConfigManager, load_json_file
from pocketmq.broker.topic_config_manager import TopicConfigManager


class Table(ConfigManager):
    """A manager of one counter, persisted like the delay offsets: mark_changed, then the periodic flush."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.value = 0

    def encode(self) -> dict[str, Any]:
        return {"value": self.value, "padding": "x" * 100_000}  # a write that takes a few thread hops

    def decode(self, data: Any) -> None:
        self.value = data["value"]


async def _cancelled_mid_write(table: Table, hops: int) -> None:
    """Start the periodic flush and cancel it after ``hops`` turns of the loop (somewhere inside its write)."""
    flush = asyncio.ensure_future(table.persist_if_changed())
    for _ in range(hops):
        await asyncio.sleep(0)
    flush.cancel()
    await asyncio.gather(flush, return_exceptions=True)


async def test_a_flush_cancelled_mid_write_leaves_the_latest_state_on_disk_after_shutdowns_flush(
        tmp_path: Path) -> None:
    for hops in range(12):  # every point of the write: before it starts, in each of its thread hops, after it
        path = tmp_path / f"table{hops}.json"
        table = Table(path)
        table.value = 8
        table.mark_changed()
        await _cancelled_mid_write(table, hops)
        await table.persist_if_changed()  # shutdown's flush
        data = load_json_file(str(path))
        assert data is not None and data["value"] == 8, hops
        assert not Path(str(path) + ".tmp").exists(), hops


async def test_a_cancelled_write_is_never_cut_short(tmp_path: Path) -> None:
    # The file is always one whole version: the one before the cancelled flush or the one it was writing.
    path = tmp_path / "table.json"
    table = Table(path)
    table.value = 1
    await table.persist()
    for hops in range(12):
        table.value = 2 + hops
        table.mark_changed()
        await _cancelled_mid_write(table, hops)
        assert json.loads(path.read_text())["value"] in (1 + hops, 2 + hops), hops
        await table.persist_if_changed()
        assert json.loads(path.read_text())["value"] == 2 + hops


async def test_a_compaction_cancelled_mid_write_completes_and_a_restart_sees_every_topic(tmp_path: Path) -> None:
    # topics.json's compaction goes through the same shielded write: cancelled anywhere, the snapshot is written
    # whole and the journal finished, so a manager loading the folder afterwards has every topic.
    for hops in range(8):
        root = tmp_path / str(hops)
        m = TopicConfigManager(BrokerConfig(store_path_root_dir=str(root)))
        assert m.load()
        for i in range(20):
            assert m.create_topic_in_send_message_method(f"T{i}", "TBW102", "test", 4) is not None
        compaction = asyncio.ensure_future(m.persist())
        for _ in range(hops):
            await asyncio.sleep(0)
        compaction.cancel()
        await asyncio.gather(compaction, return_exceptions=True)
        await m.wait_persisted()
        await m.persist_if_changed()
        m.close()
        topics = json.loads((root / "config" / "topics.json").read_text())["topicConfigTable"]
        assert {f"T{i}" for i in range(20)} <= set(topics), hops
        again = TopicConfigManager(BrokerConfig(store_path_root_dir=str(root)))
        assert again.load()
        assert all(again.select_topic_config(f"T{i}") is not None for i in range(20)), hops
        again.close()
