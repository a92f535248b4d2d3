"""TopicConfigManager: the broker's topic table, its data version, ``topics.json`` and its journal.

A change is appended to the journal (topic_config_journal.py) before it is acknowledged: O(1) per topic where
RocketMQ rewrites the whole file. The manager also remembers which topics changed at which data version, so
the controller can send the name servers only what changed since the version each one holds.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Collection
from typing import Any

from pocketmq.common import topic_validator as tv
from pocketmq.common.pop_ack_constants import build_cluster_revive_topic
from pocketmq.common.validators import store_topic_error
from pocketmq.remoting.body import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from pocketmq.remoting.codes import PermName

from .config import BrokerConfig
from .config_file import ConfigManager, write_json_file_sync
from .topic_config_journal import TopicConfigJournal

log = logging.getLogger(__name__)

_RW = PermName.PERM_READ | PermName.PERM_WRITE


class TopicConfigManager(ConfigManager):
    def __init__(self, broker_config: BrokerConfig, on_change: Callable[[], None] | None = None) -> None:
        super().__init__(os.path.join(broker_config.config_dir, "topics.json"))
        self.broker_config = broker_config
        self.topic_config_table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()
        # Called after every change (the controller re-registers with the name servers).
        self.on_change = on_change
        self.system_topics = set(tv.SYSTEM_TOPICS)
        self.journal = TopicConfigJournal(self.config_file_path)
        # Compaction rewrites topics.json once the journal holds this many lines and at least half as many as
        # the table has topics: a rewrite of n topics follows n / 2 changes or more (amortised O(1) each).
        self.compact_min_entries = 1000
        # topic -> data version counter of its last change (creation, update or deletion), oldest first;
        # changes_since() reads it from the newest end. It covers the changes of this process only.
        self._changed_at: dict[str, int] = {}
        self._history_floor = 0
        # Every topic ever created and deleted leaves its name here: past this many, the oldest are forgotten
        # and a name server that asks for changes from before them gets the whole table instead.
        self.history_max = 100_000
        self._maintainer: asyncio.Task[None] | None = None
        self._create_builtin_topics()

    def _create_builtin_topics(self) -> None:
        # TopicConfigManager's constructor in RocketMQ 4.9.8.
        bc = self.broker_config
        put = self._put_builtin
        put(TopicConfig(tv.RMQ_SYS_SELF_TEST_TOPIC, 1, 1))
        if bc.auto_create_topic_enable:
            put(
                TopicConfig(
                    tv.AUTO_CREATE_TOPIC_KEY_TOPIC,
                    bc.default_topic_queue_nums,
                    bc.default_topic_queue_nums,
                    PermName.PERM_INHERIT | _RW,
                )
            )
        put(TopicConfig(tv.RMQ_SYS_BENCHMARK_TOPIC, 1024, 1024))
        cluster_perm = PermName.PERM_INHERIT | (_RW if bc.cluster_topic_enable else 0)
        put(TopicConfig(bc.broker_cluster_name, perm=cluster_perm))
        self.system_topics.add(bc.broker_cluster_name)
        broker_perm = PermName.PERM_INHERIT | (_RW if bc.broker_topic_enable else 0)
        put(TopicConfig(bc.broker_name, 1, 1, broker_perm))
        self.system_topics.add(bc.broker_name)
        put(TopicConfig(tv.RMQ_SYS_OFFSET_MOVED_EVENT, 1, 1))
        put(TopicConfig(tv.RMQ_SYS_SCHEDULE_TOPIC, 18, 18))
        if bc.trace_topic_enable:
            put(TopicConfig(bc.msg_trace_topic_name, 1, 1))
            self.system_topics.add(bc.msg_trace_topic_name)
        reply = f"{bc.broker_cluster_name}_REPLY_TOPIC"
        put(TopicConfig(reply, 1, 1))
        self.system_topics.add(reply)  # (an admin may neither change nor delete it: TopicValidator.addSystemTopic)
        if bc.timer_wheel_enable:
            put(TopicConfig(tv.RMQ_SYS_WHEEL_TIMER, 1, 1))  # RocketMQ 5's timer messages wait here
        # POP's checkpoints and acks (RocketMQ 5's TopicConfigManager).
        revive = build_cluster_revive_topic(bc.broker_cluster_name)
        put(TopicConfig(revive, bc.revive_queue_num, bc.revive_queue_num))
        self.system_topics.add(revive)

    def _put_builtin(self, tc: TopicConfig) -> None:
        self.topic_config_table[tc.topic_name] = tc

    # --- queries ---

    def select_topic_config(self, topic: str) -> TopicConfig | None:
        return self.topic_config_table.get(topic)

    def is_system_topic(self, topic: str) -> bool:
        return topic in self.system_topics or topic.startswith(tv.SYSTEM_TOPIC_PREFIX)

    def is_order_topic(self, topic: str) -> bool:
        tc = self.topic_config_table.get(topic)
        return tc is not None and tc.order

    def build_topic_config_serialize_wrapper(self) -> TopicConfigSerializeWrapper:
        """A snapshot (copies), safe to encode later while the table keeps changing."""
        return TopicConfigSerializeWrapper(
            {name: _copy(tc) for name, tc in self.topic_config_table.items()}, self.data_version.copy()
        )

    # --- changes ---

    def create_topic_in_send_message_method(
        self,
        topic: str,
        default_topic: str,
        remote_address: str,
        client_default_topic_queue_nums: int,
        topic_sys_flag: int = 0,
    ) -> TopicConfig | None:
        """Auto-create ``topic`` from ``default_topic`` (usually TBW102) when that one carries PERM_INHERIT."""
        tc = self.topic_config_table.get(topic)
        if tc is not None:
            return tc
        default = self.topic_config_table.get(default_topic)
        if default is None:
            log.warning(
                "create topic %s from %s: default topic does not exist (%s)", topic, default_topic, remote_address
            )
            return None
        if default_topic == tv.AUTO_CREATE_TOPIC_KEY_TOPIC and not self.broker_config.auto_create_topic_enable:
            # (A TBW102 persisted while auto-creation was on.) RocketMQ drops its inherit bit here, and topics.json
            # keeps it dropped: auto-creation would stay off after the flag came on again, even over a restart.
            log.warning("create topic %s from %s: autoCreateTopicEnable is off (%s)", topic, default_topic,
                        remote_address)
            return None
        if not PermName.is_inherited(default.perm):
            log.warning(
                "create topic %s from %s: default topic has no inherit permission (%s)",
                topic,
                default_topic,
                remote_address,
            )
            return None
        queue_nums = max(0, min(client_default_topic_queue_nums, default.write_queue_nums))
        tc = TopicConfig(
            topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=default.perm & ~PermName.PERM_INHERIT,
            topic_filter_type=default.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        log.info("auto-created topic %s from %s for %s: %s", topic, default_topic, remote_address, tc)
        self.topic_config_table[topic] = tc
        self._config_changed(topic)
        return tc

    def apply_broker_config(self, changed: Collection[str]) -> bool:
        """Bring the built-in topics in line with BrokerConfig attributes changed at run time (UPDATE_BROKER_CONFIG):
        TBW102 takes ``defaultTopicQueueNums`` queues, and is created when ``autoCreateTopicEnable`` comes on
        without it; ``traceTopicEnable`` creates the trace topic. Turning either flag off removes nothing, as a
        restart with it off keeps the topic persisted in topics.json. Returns whether a topic changed."""
        bc = self.broker_config
        before = self.data_version.counter
        queues = bc.default_topic_queue_nums
        tbw = self.topic_config_table.get(tv.AUTO_CREATE_TOPIC_KEY_TOPIC)
        if tbw is None and bc.auto_create_topic_enable and "auto_create_topic_enable" in changed:
            self.update_topic_config(
                TopicConfig(tv.AUTO_CREATE_TOPIC_KEY_TOPIC, queues, queues, PermName.PERM_INHERIT | _RW))
        elif tbw is not None and "default_topic_queue_nums" in changed and (
                tbw.read_queue_nums, tbw.write_queue_nums) != (queues, queues):
            tbw = _copy(tbw)
            tbw.read_queue_nums = tbw.write_queue_nums = queues
            self.update_topic_config(tbw)
        trace = bc.msg_trace_topic_name
        if bc.trace_topic_enable and "trace_topic_enable" in changed and trace not in self.topic_config_table:
            self.system_topics.add(trace)
            self.update_topic_config(TopicConfig(trace, 1, 1))
        return self.data_version.counter != before

    def create_topic_in_send_message_back_method(
        self, topic: str, client_default_topic_queue_nums: int, perm: int, topic_sys_flag: int = 0
    ) -> TopicConfig:
        """Retry and DLQ topics: created with the given queue count and permission when missing."""
        tc = self.topic_config_table.get(topic)
        if tc is not None:
            return tc
        tc = TopicConfig(
            topic,
            read_queue_nums=client_default_topic_queue_nums,
            write_queue_nums=client_default_topic_queue_nums,
            perm=perm,
            topic_sys_flag=topic_sys_flag,
        )
        log.info("created topic %s", tc)
        self.topic_config_table[topic] = tc
        self._config_changed(topic)
        return tc

    def update_topic_config(self, tc: TopicConfig) -> None:
        old = self.topic_config_table.get(tc.topic_name)
        self.topic_config_table[tc.topic_name] = tc
        log.info("%s topic config %s", "updated" if old is not None else "created", tc)
        self._config_changed(tc.topic_name)

    def update_order_topic_config(self, order_topics: Collection[str] | None) -> bool:
        """RocketMQ's updateOrderTopicConfig, with the ORDER_TOPIC_CONFIG table a name server answered a registration
        with (None: it has no such namespace, and nothing changes): a topic it names is ordered, any other is not.
        Returns whether a topic changed (each one moves the data version and is journaled)."""
        if order_topics is None:
            return False
        flipped = [name for name, tc in self.topic_config_table.items() if tc.order != (name in order_topics)]
        for name in flipped:
            tc = _copy(self.topic_config_table[name])
            tc.order = not tc.order
            log.info("update order topic config, topic=%s, order=%s", name, tc.order)
            self.topic_config_table[name] = tc
            self._config_changed(name)
        return bool(flipped)

    def delete_topic_config(self, topic: str) -> bool:
        if self.topic_config_table.pop(topic, None) is None:
            return False
        log.info("deleted topic config %s", topic)
        self._config_changed(topic)
        return True

    def recover_topics(self, queue_counts: dict[str, int]) -> list[str]:
        """Topics the store has queues of but this table lacks, when the table was not read from ``topics.json``
        (lost, or not JSON: its ``.bak`` may be a write behind, the journal holds only the changes since the last
        write): add them, read-write, with as many queues as the store has, so their messages stay reachable, and
        write the table (synchronous: at startup, after the store's recovery). Returns their names.

        A table read from ``topics.json`` and its journal is whole (each change is in the journal before it is
        answered), so a topic it lacks was deleted: a queue of it is one the store made after the delete, for a
        delayed message that fired or a transaction committed later, and stays hidden, as in RocketMQ, whose
        start never rebuilds topics."""
        if self.loaded_from == self.config_file_path:
            return []
        recovered = self._rebuild(queue_counts)
        # topics.json now (a new store's first, or the lost one's replacement, with what was rebuilt): from here
        # on a journal without topics.json means topics.json was lost.
        self._compact_sync()
        self.loaded_from = self.config_file_path
        return recovered

    def _rebuild(self, queue_counts: dict[str, int]) -> list[str]:
        recovered = []
        for topic, queues in sorted(queue_counts.items()):
            if topic in self.topic_config_table or store_topic_error(topic) is not None:  # (retry topics: 255)
                continue
            self.topic_config_table[topic] = TopicConfig(topic, read_queue_nums=queues, write_queue_nums=queues,
                                                         perm=_RW)
            recovered.append(topic)
        if recovered:
            self.data_version.next_version()
            log.warning("%d topic(s) found in the store but not in %s (nor its .bak), rebuilt from the consume "
                        "queues: %s", len(recovered), self.config_file_path,
                        ", ".join(recovered[:20]) + (" ..." if len(recovered) > 20 else ""))
        return recovered

    def _config_changed(self, topic: str) -> None:
        dv = self.data_version
        dv.next_version()
        changed_at = self._changed_at
        changed_at.pop(topic, None)
        changed_at[topic] = dv.counter
        if len(changed_at) > self.history_max:
            self._history_floor = changed_at.pop(next(iter(changed_at)))
        self.mark_changed()
        try:
            self.journal.append(topic, self.topic_config_table.get(topic), dv)
        except OSError:
            # (a full disk, say) the table is still whole in memory: the next compaction writes all of it.
            log.exception("cannot append to %s; topics.json will be rewritten", self.journal.path)
            self.persist_soon()
        else:
            self._maintain_soon()
        if self.on_change is not None:
            self.on_change()

    def changes_since(self, counter: int) -> tuple[dict[str, TopicConfig], list[str]] | None:
        """Topics changed after data version ``counter`` (their configs, copies) and those deleted since; None
        when this process cannot tell (a version from before it started, or from a future it never had)."""
        if counter < self._history_floor or counter > self.data_version.counter:
            return None
        changed: dict[str, TopicConfig] = {}
        deleted: list[str] = []
        for topic, at in reversed(self._changed_at.items()):
            if at <= counter:
                break
            tc = self.topic_config_table.get(topic)
            if tc is None:
                deleted.append(topic)
            else:
                changed[topic] = _copy(tc)
        return changed, deleted

    # --- persistence: topics.json (RocketMQ's shape) plus the journal ---

    def load(self) -> bool:
        """topics.json, then the journal replayed on top of it, then compacted (synchronous: at startup)."""
        if not super().load():
            return False
        replayed = 0
        for entry in self.journal.replay():
            if entry.config is None:
                self.topic_config_table.pop(entry.topic, None)
            else:
                self.topic_config_table[entry.topic] = entry.config
            self.data_version = entry.data_version
            replayed += 1
        self._history_floor = self.data_version.counter
        if replayed:
            log.info("replayed %d topic changes from %s", replayed, self.journal.path)
        if replayed and self.loaded_from == self.config_file_path:
            self._compact_sync()
        # Else recover_topics writes topics.json, once the topics lost with it are back: written before, it would
        # make a crash in the store's recovery look like a whole table at the next start.
        return True

    def _compact_sync(self) -> None:
        self.journal.rotate()
        write_json_file_sync(self.config_file_path, self.encode())
        self.journal.finish_compaction()

    async def persist(self) -> None:
        """Compaction: topics.json becomes the whole table, the journal starts empty."""
        async with self._lock:
            self._dirty = self._changed = False
            # The new journal starts in the same instant as the snapshot (no await in between).
            self.journal.rotate()
            await self._run_whole(self._compact(self.encode()))

    async def _compact(self, data: dict[str, Any]) -> None:
        await asyncio.to_thread(write_json_file_sync, self.config_file_path, data)
        self.journal.finish_compaction()

    def _maintain_soon(self) -> None:
        if self._maintainer is None or self._maintainer.done():
            self._maintainer = asyncio.get_running_loop().create_task(self._maintain())

    async def _maintain(self) -> None:
        """After changes: fsync the journal (one fsync for every line appended meanwhile), compact when due."""
        try:
            await asyncio.to_thread(self.journal.sync)
            if self.journal.entries >= max(self.compact_min_entries, len(self.topic_config_table) // 2):
                await self.persist()
        except OSError:
            log.exception("cannot persist %s", self.config_file_path)

    async def wait_persisted(self) -> None:
        await super().wait_persisted()
        maintainer = self._maintainer
        if maintainer is not None and not maintainer.done():
            await asyncio.shield(maintainer)

    def close(self) -> None:
        self.journal.close()

    def encode(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_dict(),
            "topicConfigTable": {name: tc.to_dict() for name, tc in self.topic_config_table.items()},
        }

    def decode(self, data: Any) -> None:
        wrapper = TopicConfigSerializeWrapper.from_dict(data)
        self.topic_config_table.update(wrapper.topic_config_table)
        self.data_version = wrapper.data_version


def _copy(tc: TopicConfig) -> TopicConfig:
    return TopicConfig(
        tc.topic_name,
        tc.read_queue_nums,
        tc.write_queue_nums,
        tc.perm,
        tc.topic_filter_type,
        tc.topic_sys_flag,
        tc.order,
        dict(tc.attributes),
    )
