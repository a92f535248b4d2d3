"""encode_body_with_parts: a list body encoded a slice of items at a time and joined is byte for byte what
encode_body writes for the whole, in every dialect (GET_BROKER_CONSUME_STATS is encoded that way)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.remoting.admin_body import ConsumeStats, ConsumeStatsList, OffsetWrapper
from pocketmq.remoting.body_codec import encode_body, encode_body_with_parts
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import BodyDialect

names = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
offsets = st.integers(min_value=0, max_value=2**62)
stats = st.builds(
    ConsumeStats,
    st.dictionaries(st.builds(MessageQueue, names, names, st.integers(0, 64)),
                    st.builds(OffsetWrapper, offsets, offsets, offsets, st.one_of(st.none(), offsets)), max_size=4),
    st.floats(allow_nan=False, allow_infinity=False),
)
entries = st.lists(st.dictionaries(names, st.lists(stats, max_size=3), min_size=1, max_size=1), max_size=6)


@settings(max_examples=150, deadline=None)
@given(entries, names, st.integers(-(2**62), 2**62), st.sampled_from(list(BodyDialect)))
def test_parts_joined_are_the_whole_body(listed, addr, total, dialect) -> None:
    whole = ConsumeStatsList(addr, listed, total)
    as_dict = whole.to_dict()
    parts = [encode_body(entry, dialect) for entry in as_dict["consumeStatsList"]]
    assert encode_body_with_parts(as_dict, "consumeStatsList", parts, dialect) == encode_body(whole, dialect)
