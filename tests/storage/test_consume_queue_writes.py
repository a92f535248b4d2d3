"""ConsumeQueue.put_entries / put_entry (the fast paths the dispatcher calls) against put_entry_reference.

Two queues on real files get the same entries, one through the fast methods in runs, one entry by entry through
the reference; their files, write positions and offsets must be identical. The entries come in commit-log order
(as the dispatcher hands them over) with the irregular cases the reference handles: a queue whose first entry is
not entry 0 (pre-blanks), runs that cross a file boundary, gaps in the queue offsets, and entries that are
already present (dispatch repeated after a crash).
"""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.storage.consume_queue import ConsumeQueue

ENTRIES_PER_FILE = 7  # small, so that runs cross files often
FILE_SIZE = ENTRIES_PER_FILE * 20

# A step: (queue offsets to skip before the run: 0 = contiguous, <0 = go back over entries already written,
# run length, whether to use put_entry for a run of one)
steps = st.lists(st.tuples(st.integers(-3, 2), st.integers(1, 12), st.booleans()), min_size=1, max_size=12)


def _files(cq: ConsumeQueue) -> dict[str, bytes]:
    root = cq.mapped_file_queue.store_path
    out = {}
    for name in sorted(os.listdir(root)):
        with open(os.path.join(root, name), "rb") as f:
            out[name] = f.read()
    return out


def _state(cq: ConsumeQueue) -> tuple:
    files = cq.mapped_file_queue.files
    return (cq.max_physic_offset, cq.min_logic_offset, cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue(),
            [(mf.file_from_offset, mf.wrote_position) for mf in files])


@settings(max_examples=60, deadline=None)
@given(start=st.integers(0, 9), plan=steps, code_seed=st.integers(-(2**63), 2**63 - 1))
def test_fast_writes_equal_the_reference(tmp_path_factory, start, plan, code_seed):
    root = tmp_path_factory.mktemp("cq")
    fast = ConsumeQueue("T", 0, str(root / "fast"), FILE_SIZE)
    ref = ConsumeQueue("T", 0, str(root / "ref"), FILE_SIZE)
    qoff, phys = start, 1000
    written: list[tuple[int, int, int, int]] = []  # (queue offset, phys, size, code) of every entry handed over
    for skip, length, single in plan:
        if skip < 0 and written:
            # Repeat entries already handed over (a re-dispatch): the same records again, in log order.
            again = written[max(0, len(written) + skip):]
            first = again[0][0]
            if all(q == first + i for i, (q, *_rest) in enumerate(again)):
                flat = [v for _q, p, s, c in again for v in (p, s, c)]
                assert fast.put_entries(first, flat) == all(
                    ref.put_entry_reference(p, s, c, q) for q, p, s, c in again)
            continue
        qoff += skip
        run = []
        for i in range(length):
            size = 50 + (i * 7 + qoff) % 40
            code = (code_seed + qoff * 31) % (2**63)
            run.append((qoff, phys, size, code))
            qoff += 1
            phys += size
        if single and length == 1:
            q, p, s, c = run[0]
            ok_fast = fast.put_entry(q, p, s, c)
        else:
            ok_fast = fast.put_entries(run[0][0], [v for _q, p, s, c in run for v in (p, s, c)])
        ok_ref = True
        for q, p, s, c in run:
            ok_ref = ref.put_entry_reference(p, s, c, q) and ok_ref
        assert ok_fast == ok_ref
        written += run
        assert _state(fast) == _state(ref)
    fast.flush(0)
    ref.flush(0)
    assert _files(fast) == _files(ref)
    for q in range(fast.get_min_offset_in_queue(), fast.get_max_offset_in_queue()):
        assert fast.get_entry(q) == ref.get_entry(q)
    fast.shutdown()
    ref.shutdown()


def test_a_run_is_written_where_the_reference_writes_it(tmp_path):
    """The example the property test starts from: entries 0..9 of 7-entry files, as one run after the first."""
    cq = ConsumeQueue("T", 1, str(tmp_path), FILE_SIZE)
    assert cq.put_entry(0, 100, 10, 5)
    assert cq.put_entries(1, [v for i in range(1, 10) for v in (100 + 10 * i, 10, 5)])
    assert cq.get_max_offset_in_queue() == 10
    assert [cq.get_entry(i) for i in range(10)] == [(100 + 10 * i, 10, 5) for i in range(10)]
    assert cq.max_physic_offset == 200
    assert [mf.file_from_offset for mf in cq.mapped_file_queue.files] == [0, FILE_SIZE]
    cq.shutdown()
