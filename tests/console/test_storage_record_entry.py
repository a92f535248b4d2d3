"""The storage page's record view shows a consume-queue entry as the record's own only when it points back at the
record (its offset and size): the entry at a record's QUEUEOFFSET can be another message's, for a transaction's
prepared half (QUEUEOFFSET 0, never dispatched) and for an old record of a topic deleted and re-created since.
A store written by the store itself, read as the console reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

from pocketmq.common.constants import TRANSACTION_PREPARED_TYPE  # noqa: E402
from pocketmq.console.storage_view import record_view  # noqa: E402
from tests.console.small_store import small_store  # noqa: E402

TOPIC = "EntryT"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """Three messages, the topic deleted, one message and a prepared half in the re-created queue."""
    root = tmp_path_factory.mktemp("entries") / "store"
    with small_store(root) as (store, put):
        old = [put(TOPIC, f"old-{i}") for i in range(3)]
        store.delete_topics({TOPIC})
        offsets = {"old0": old[0], "old2": old[2], "new": put(TOPIC, "new"),
                   "prepared": put(TOPIC, "half", TRANSACTION_PREPARED_TYPE)}
    return root, offsets


def entry_of(written: tuple[Path, dict[str, int]], which: str) -> dict:
    root, offsets = written
    view = record_view(str(root), offsets[which], 64, 256)
    return view["consume_queue"]


def test_the_entry_pointing_back_at_the_record_is_its_own(written) -> None:
    cq = entry_of(written, "new")
    assert cq["state"] == "dispatched" and cq["dispatched"] is True
    assert cq["index"] == 0 and cq["commitlog_offset"] == written[1]["new"]


def test_a_prepared_half_is_never_dispatched(written) -> None:
    # Its QUEUEOFFSET is 0, and entry 0 is the new message's.
    cq = entry_of(written, "prepared")
    assert cq["dispatched"] is False and (cq["state"], cq["reason"]) == ("none", "transaction")


def test_an_old_record_s_queue_offset_names_another_record_s_entry(written) -> None:
    cq = entry_of(written, "old0")
    assert cq["dispatched"] is False and (cq["state"], cq["reason"]) == ("none", "older queue")
    assert cq["commitlog_offset"] == written[1]["new"]  # (shown as another record's entry, not this one's)


def test_an_old_record_past_the_new_queue_s_end_is_not_waiting_for_dispatch(written) -> None:
    # Entry 2 of the re-created queue is not written, but the queue already holds a later record.
    cq = entry_of(written, "old2")
    assert cq["dispatched"] is False and (cq["state"], cq["reason"]) == ("none", "older queue")
