"""WarmMappedFileService: the commit log's next pages are read into the page cache ahead of the writer,
following the writer across file rolls, without writing a byte (the files stay sparse)."""

from __future__ import annotations

from .conftest import COMMIT_LOG_FILE_SIZE, msg, put_ok, wait_until


def test_warms_ahead_of_the_writer_and_follows_the_roll(stores):
    store = stores.open(warm_mapped_file_ahead=16 * 1024)
    warm = store.warm_service
    mfq = store.commit_log.mapped_file_queue
    put_ok(store, msg(body=b"x" * 500))
    first = mfq.last()
    wait_until(lambda: warm.warmed_offset >= first.wrote_position + 16 * 1024)
    while len(mfq.files) < 3:  # two rolls
        put_ok(store, msg(body=b"y" * 3000))
    last = mfq.last()
    assert last.file_from_offset == 2 * COMMIT_LOG_FILE_SIZE
    # It moved on to the newest file, and its window ends at that file's end.
    wait_until(lambda: warm.warmed_offset >= min(last.file_from_offset + last.wrote_position + 16 * 1024,
                                                 last.file_end_offset))
    assert warm.warmed_offset <= last.file_end_offset


def test_warming_writes_nothing(stores):
    size = 4 << 20
    store = stores.open(mapped_file_size_commit_log=size, warm_mapped_file_ahead=size)
    put_ok(store, msg(body=b"z" * 1000))
    mf = store.commit_log.mapped_file_queue.last()
    wait_until(lambda: store.warm_service.warmed_offset == size)
    store.flush_commit_log(0)
    # The warmed rest still reads as zeros: warming only read it (its blocks were reserved at creation).
    assert mf.read(mf.wrote_position, size - mf.wrote_position) == bytes(size - mf.wrote_position)


def test_off_when_ahead_is_zero(stores):
    store = stores.open(warm_mapped_file_ahead=0)
    assert store.warm_service is None
    put_ok(store, msg())
