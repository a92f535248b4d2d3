"""Dispatch's fast twin, mixed into ReputMessageService: what ``_dispatch_file_by_record`` does with the three
built-in dispatchers, in runs of records decoded together and entries written together (reput_service.py's
docstring says how); tests/storage/test_dispatch_twins.py holds the two to the same results."""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pocketmq.common.bounded_cache import BoundedCache
from pocketmq.common.constants import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_PREPARED_TYPE,
)
from pocketmq.common.java_hash import tags_code
from pocketmq.common.message import raw_property
from pocketmq.common.record_layout import (
    BODY_POS_V4,
    COMMIT_LOG_RECORD,
    IPV4_HOST_LENGTH,
    SIZE_MAGIC,
    RecordFormat,
    field_struct,
    host_widths,
)
from pocketmq.common.validators import stored_topic_error

from .commit_log_dispatcher import ArrivingListener
from .dispatch_request import HEAD_FIELDS, HEADS, UnusableTopicError, decode_other_record

if TYPE_CHECKING:
    from .consume_queue import ConsumeQueue
    from .index_service import IndexService
    from .message_store import DefaultMessageStore

# (the dispatcher's logger, as before the twin had a module of its own: log settings name it)
log = logging.getLogger("pocketmq.storage.reput_service")

_V4_HOSTS = (IPV4_HOST_LENGTH, IPV4_HOST_LENGTH)
DISPATCH_V4 = HEADS[_V4_HOSTS]  # the fixed part of an IPv4 record (through BODYLENGTH), the fields dispatch reads
# A whole IPv4 record, those fields and the topic and properties; open: the lengths of BODY (skipped), TOPIC and
# PROPERTIES, one struct per shape of record.
_RUN_FORMAT = RecordFormat(COMMIT_LOG_RECORD, lengths=host_widths(*_V4_HOSTS),
                           keep=HEAD_FIELDS + ("TOPICLENGTH", "TOPIC", "PROPERTIESLENGTH", "PROPERTIES"))
_PROPS_LEN = field_struct("PROPERTIESLENGTH")
_SYSFLAG = field_struct("SYSFLAG")
_TOPIC_LEN_SIZE = field_struct("TOPICLENGTH").size
_RUN_BYTES = 256 * 1024  # a run is read with one slice copy; keep it cache-sized
_RUN_RECORDS = 64  # records decoded by one iter_unpack, and entries written by one put_entries, at most
_V6 = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG


class ReputFastTwin:
    """The fast twin of ReputMessageService's dispatch (a mixin: the state is the service's)."""

    store: DefaultMessageStore
    listener: ArrivingListener | None

    if TYPE_CHECKING:
        def _file_range(self, mf: Any, stop_at: int | None) -> tuple[int, int]: ...

        def _file_done(self, offset: int, store_ts: int) -> None: ...

    def _init_fast_twin(self) -> None:
        # Tags repeat, and so do properties when messages carry no unique key: the codes of both are remembered.
        self._tags_codes: BoundedCache[bytes, int] = BoundedCache(
            lambda tags: tags_code(tags.decode(errors="replace")), 65536, max_key_len=1024)
        # Short properties without keys -> their tags code: the dispatch loop's first look, which skips the scan.
        self._props_codes: BoundedCache[bytes, int] = BoundedCache(self._tags_code_of, 4096)
        # Short properties with the UNIQ_KEY pair cut out -> (tags code, KEYS).
        self._rest_codes: BoundedCache[bytes, tuple[int, bytes | None]] = BoundedCache(self._rest_info, 4096)
        # The run struct of each IPv4 record shape (body, topic, properties lengths).
        self._run_structs: BoundedCache[tuple[int, int, int], struct.Struct] = BoundedCache(
            lambda shape: _RUN_FORMAT.struct(*shape), 4096)

    def _tags_code_of(self, props: bytes) -> int:
        if not props:
            return 0
        # The last TAGS pair (raw_property's rule, string_to_properties' value); an empty one is not the value.
        i = props.rfind(b"TAGS\x01")
        tags: bytes | None
        if i == 0 or i > 0 and props[i - 1] == 2:
            j = props.find(b"\x02", i)
            tags = (props[i + 5:j] if j > 0 else props[i + 5:]) or raw_property(props, b"TAGS\x01")
        else:
            tags = raw_property(props, b"TAGS\x01") if i > 0 else None
        if not tags:
            return 0
        return self._tags_codes.get(tags) or self._tags_codes[tags]

    def _rest_info(self, rest: bytes) -> tuple[int, bytes | None]:
        return self._tags_code_of(rest), raw_property(rest, b"KEYS\x01") if rest else None

    def _classify(self, cq: ConsumeQueue, topic_b: bytes, props: bytes, phys: int, store_ts: int, sys_flag: int,
                  index: IndexService | None) -> int:
        """The tags code of properties the cache does not hold; with an ``index``, the record is indexed by its
        keys first (CommitLogDispatcherBuildIndex's work, before the queue entry, as there).

        Every message of a producer carries its own UNIQ_KEY, so such properties never repeat; the others
        around it do, and are cached here without it, with their tags code and KEYS. Only short properties
        are remembered (the caches' bound counts entries, not bytes).
        """
        uniq: bytes | None
        i = props.rfind(b"UNIQ_KEY\x01")
        if i == 0 or i > 0 and props[i - 1] == 2:
            j = props.find(b"\x02", i)
            uniq, rest = (props[i + 9:j], props[:i] + props[j + 1:]) if j >= 0 else (props[i + 9:], props[:i])
            uniq = uniq or raw_property(props, b"UNIQ_KEY\x01")  # (an empty last pair: an earlier one's value)
            code, keys = self._rest_codes[rest] if len(rest) <= 64 else self._rest_info(rest)
        elif index is None or (b"KEYS\x01" not in props and b"UNIQ_KEY\x01" not in props):
            return self._props_codes[props] if len(props) <= 64 else self._tags_code_of(props)
        else:
            code, keys, uniq = (self._tags_code_of(props), raw_property(props, b"KEYS\x01"),
                                raw_property(props, b"UNIQ_KEY\x01"))
        if index is not None and (keys or uniq):
            index.build_index_raw(cq.topic, topic_b, keys, uniq, phys, store_ts, sys_flag)
        return code

    def _dispatch_file(self, mf, stop_at: int | None = None) -> None:
        """What _dispatch_file_by_record does with the three built-in dispatchers, in runs (the module's docstring
        says how). One loop, its state in local variables: a function call per record costs this loop more than
        its readability is worth (bench/README.md), so it is allowed past the size limits."""
        store, base, mm = self.store, mf.file_from_offset, mf.mm
        pos, end = self._file_range(mf, stop_at)
        index = store.index_service if store.config.message_index_enable else None
        index_props = index.index_props if index is not None and index.index_record is not None else None
        listener, known_code, runs, put_run = self.listener, self._props_codes.get, self._run_structs, self._put_run
        cq_table, touch, find_queue = store.dispatch_cq_table, store.cq_lru.touch, store.find_consume_queue_for_dispatch
        unpack, props_len_at, size_at, body_pos = DISPATCH_V4.unpack_from, _PROPS_LEN.unpack_from, \
            _SYSFLAG.unpack_from, BODY_POS_V4
        magic_code, magic_v2, v6_bits, prepared_bit = MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, _V6, \
            TRANSACTION_PREPARED_TYPE
        max_run = 3 * _RUN_RECORDS  # (flat triples)
        # The queue being dispatched to (cq, known by topic bytes and queue id) and its run: flat (commit-log offset,
        # size, tags code) entries from queue offset `first`; `expected` would extend it. `arrivals`: the listener's
        # calls, made once the run's entries are written. _put_run empties both.
        cur_topic = cur_qid = None
        cq: ConsumeQueue = None  # type: ignore[assignment]  # (set by the first record, which mypy cannot follow)
        is_sched, first, expected, store_ts, limit = False, -1, -1, 0, mf.file_size - body_pos
        run: list[int] = []
        arrivals: list[tuple[int, int, int, int, bytes]] = []
        try:
            while pos < end:
                if pos <= limit:
                    size, magic, qid, qoff, phys, sys_flag, store_ts, blen = unpack(mm, pos)
                else:  # only the blank record fits in the last bytes of a file
                    size, magic = SIZE_MAGIC.unpack_from(mm, pos)
                if magic != magic_code and magic != magic_v2:
                    pos = self._end_of_file(base, pos, magic)
                    return
                v6 = sys_flag & v6_bits
                if v6 or magic == magic_v2:  # (one at a time: the runs' structs have a 1-byte TOPICLENGTH)
                    records: Iterable[tuple[Any, ...]] = [decode_other_record(mm, pos)]
                    blen, tlen = records[0][7], records[0][8]  # type: ignore[index]
                else:  # (up to 64 records of this shape: one iter_unpack over one slice; see _run_length)
                    tlen = mm[pos + body_pos + blen]
                    shape = (blen, tlen, props_len_at(mm, pos + body_pos + blen + _TOPIC_LEN_SIZE + tlen)[0])
                    n = self._run_length(pos, size, end) if pos + size < end and size_at(mm, pos + size)[0] == size \
                        else 1
                    records = (runs.get(shape) or runs[shape]).iter_unpack(mm[pos:pos + n * size])
                for (size_, magic_, qid, qoff, phys, sys_flag, store_ts, blen_, tlen_, topic_b, _plen,
                     props) in records:
                    if (magic_ != magic or size_ != size or blen_ != blen or tlen_ != tlen
                            or sys_flag & v6_bits != v6):
                        break  # (the run of one shape ends)
                    if qid != cur_qid or topic_b != cur_topic:
                        if (found := cq_table.get((topic_b, qid))) is None and (why := stored_topic_error(topic_b)):
                            raise UnusableTopicError(base + pos, size, store_ts, why)  # (the run so far: finally)
                        if run or arrivals:
                            put_run(cq, first, run, arrivals)
                        cq = found if found is not None else find_queue(topic_b.decode(), qid)
                        touch(cq)  # mapped, most recently used (ConsumeQueueLru)
                        cur_topic = topic_b
                        cur_qid = qid
                        is_sched = cq.is_schedule
                        expected = -1
                    code = known_code(props)  # (only properties without keys are there)
                    if code is None and index_props is not None:
                        code = index_props(cq.topic, topic_b, props, phys, store_ts, sys_flag)
                    if code is None:
                        code = self._classify(cq, topic_b, props, phys, store_ts, sys_flag, index)
                    if is_sched:
                        code = store.delivery_timestamp(props, store_ts)
                    if sys_flag & prepared_bit:  # (prepared records take no queue slot; the listener hears of them)
                        if listener is not None:
                            arrivals.append((qid, qoff + 1, code, store_ts, props))
                            put_run(cq, first, run, arrivals)
                            first = expected
                    elif qoff == expected and len(run) < max_run:  # the run goes on
                        run += (phys, size, code)
                        expected = qoff + 1
                        if listener is not None:
                            arrivals.append((qid, expected, code, store_ts, props))
                    else:  # a run starts: its first entry is written now, and its listener call made
                        if run or arrivals:
                            put_run(cq, first, run, arrivals)
                        cq.put_entry(qoff, phys, size, code)
                        first = expected = qoff + 1
                        if listener is not None:
                            try:
                                listener(cq.topic, qid, expected, code, store_ts, props)
                            except Exception:  # a listener's bug must not stop dispatch (nor repeat the record)
                                log.exception("message arriving listener failed")
                    pos += size
        finally:
            put_run(cq, first, run, arrivals)  # (what is left of the last run)
            self._file_done(base + pos, store_ts)

    def _end_of_file(self, base: int, pos: int, magic: int) -> int:
        """The position dispatch goes on from after a record of another magic than a message's at ``pos``: the
        next file's start after the blank record that ends a file; anything else is an error."""
        if magic == BLANK_MAGIC_CODE:
            return self.store.commit_log.roll_next_file(base + pos) - base
        # Recovery guarantees valid records below the write position; stop rather than guess.
        raise RuntimeError(f"dispatch found a bad record at {base + pos}")

    @staticmethod
    def _run_length(pos: int, size: int, end: int) -> int:
        """How many records of ``size`` bytes from ``pos`` to decode together when the next one has the same size:
        up to 64, within 256 KiB (the slice copied). (A record followed by one of another size is a run of one: it
        is copied alone. Mixed traffic is mostly such records, and copying 64 of them to decode one was measurable
        in dispatch.)"""
        return min((end - pos) // size, _RUN_BYTES // size + 1, _RUN_RECORDS)

    def _put_run(self, cq: ConsumeQueue, first: int, entries: list[int],
                 arrivals: list[tuple[int, int, int, int, bytes]]) -> None:
        """Write a run's entries to their queue, then tell the listener of its records; both lists are emptied."""
        if entries:
            cq.put_entries(first, entries)
            entries.clear()
        if arrivals:
            self._tell(cq.topic, arrivals)
            arrivals.clear()

    def _tell(self, topic: str, arrivals: list[tuple[int, int, int, int, bytes]]) -> None:
        listener = self.listener
        if listener is not None:
            for qid, next_offset, code, store_ts, props in arrivals:
                try:
                    listener(topic, qid, next_offset, code, store_ts, props)
                except Exception:  # a listener's bug must not stop dispatch (nor repeat the record)
                    log.exception("message arriving listener failed")
