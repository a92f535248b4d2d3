"""SendMessageActivity's early batch-size refusal: the estimate it makes of a message's place in a batch never
exceeds what the batch encoder writes, so no batch the broker would take is refused by it."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.client.batch import encode_messages
from pocketmq.proxy.message_converter import BrokerMessage
from pocketmq.proxy.send_message_activity import _Batched, least_batched_size

# Property names and values as they reach the encoder: no separator characters (the validators refuse them).
_text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=64), properties=st.dictionaries(_text, _text, max_size=6))
def test_the_least_size_is_at_most_the_encoded_size(body: bytes, properties: dict[str, str]) -> None:
    message = BrokerMessage("T", body, properties, 0, 0)
    encoded = encode_messages(cast(Any, [_Batched(body, properties)]))
    assert least_batched_size(message) <= len(encoded)
    if all(s.isascii() for kv in properties.items() for s in kv):
        assert least_batched_size(message) == len(encoded)
