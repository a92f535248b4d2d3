"""Option parsing of the Spark source and sink, without Spark: one table, checked before any I/O."""

from __future__ import annotations

import pytest

from pyspark_pocketmq.offsets import EARLIEST, LATEST, QueueRef
from pyspark_pocketmq.options import InvalidOptionError, parse_sink_options, parse_source_options

NS = {"endpoints": "127.0.0.1:9876"}


def batch(**kw):
    return parse_source_options({**NS, **kw}, streaming=False)


def stream(**kw):
    return parse_source_options({**NS, **kw}, streaming=True)


def test_defaults_follow_kafka_earliest_for_batch_latest_for_streams():
    b = batch(subscribe="T")
    assert (b.starting_offsets, b.ending_offsets, b.fail_on_data_loss, b.sub_expression) == (
        "earliest", "latest", True, "*")
    assert stream(subscribe="T").starting_offsets == "latest"


def test_option_names_are_case_insensitive_and_endpoints_has_an_alias():
    o = parse_source_options({"NAMESERVER": "a:1, b:2", "SubScribe": "T, U,T"}, streaming=False)
    assert o.endpoints == "a:1;b:2"  # the client's separator
    assert o.subscription.topics == ("T", "U")
    with pytest.raises(InvalidOptionError, match="disagree"):
        parse_source_options({"endpoints": "a:1", "nameServer": "b:2", "subscribe": "T"}, streaming=False)
    with pytest.raises(InvalidOptionError, match="'endpoints'.*required"):
        parse_source_options({"subscribe": "T"}, streaming=False)
    with pytest.raises(InvalidOptionError, match="host:port"):
        parse_source_options({"endpoints": "localhost", "subscribe": "T"}, streaming=False)


@pytest.mark.parametrize("kw", [{}, {"subscribe": "T", "subscribePattern": "T.*"}, {"subscribe": " , "},
                                {"subscribe": "bad/name"}, {"subscribePattern": "("}, {"assign": "[]"},
                                {"assign": '{"T": [-1]}'}, {"assign": '{"T": {"b": "0"}}'}])
def test_exactly_one_valid_subscription_is_required(kw):
    with pytest.raises(InvalidOptionError):
        batch(**kw)


def test_assign_takes_queue_ids_per_topic_or_per_broker():
    o = batch(assign='{"T": [1, 0], "U": {"broker-b": [2]}}')
    assert o.subscription.assigned == (("T", None, 0), ("T", None, 1), ("U", "broker-b", 2))
    assert o.subscription.covers_topic("U") and not o.subscription.covers_topic("V")


def test_offset_specs_words_json_and_where_they_are_allowed():
    o = batch(subscribe="T", startingOffsets='{"T": {"broker-a": {"0": 5, "1": -2}}}',
              endingOffsets='{"T": {"broker-a": {"0": -1}}}')
    assert o.starting_offsets == {QueueRef("T", "broker-a", 0): 5, QueueRef("T", "broker-a", 1): EARLIEST}
    assert o.ending_offsets == {QueueRef("T", "broker-a", 0): LATEST}
    with pytest.raises(InvalidOptionError, match="cannot be 'latest' in a batch query; use earliest or JSON"):
        batch(subscribe="T", startingOffsets="latest")
    with pytest.raises(InvalidOptionError, match="cannot be 'earliest' in a batch query; use latest or JSON"):
        batch(subscribe="T", endingOffsets="earliest")
    with pytest.raises(InvalidOptionError, match="latest \\(-1\\) in a batch query"):
        batch(subscribe="T", startingOffsets='{"T": {"b": {"0": -1}}}')
    with pytest.raises(InvalidOptionError, match="earliest \\(-2\\)"):
        batch(subscribe="T", endingOffsets='{"T": {"b": {"0": -2}}}')
    with pytest.raises(InvalidOptionError, match="not subscribed"):
        batch(subscribe="T", startingOffsets='{"U": {"b": {"0": 1}}}')
    with pytest.raises(InvalidOptionError, match="JSON like"):
        batch(subscribe="T", startingOffsets="first")
    assert stream(subscribePattern="T.*", startingOffsets='{"T1": {"b": {"0": -1}}}').starting_offsets


def test_batch_only_and_stream_only_options_are_refused_in_the_other_kind():
    with pytest.raises(InvalidOptionError, match="only for batch"):
        stream(subscribe="T", endingOffsets="latest")
    with pytest.raises(InvalidOptionError, match="only for streaming"):
        batch(subscribe="T", maxOffsetsPerTrigger="10")
    with pytest.raises(InvalidOptionError, match="only for streaming"):
        batch(subscribe="T", consumerGroup="dash")


def test_numbers_and_booleans_are_checked():
    o = stream(subscribe="T", maxOffsetsPerTrigger="100", minPartitions="4", maxRecordsPerPartition="50",
               failOnDataLoss="FALSE", startingTimestamp="1700000000000", pullTimeoutMs="2500", consumerGroup="dash")
    assert (o.max_offsets_per_trigger, o.min_partitions, o.max_records_per_partition) == (100, 4, 50)
    assert (o.fail_on_data_loss, o.starting_timestamp, o.pull_timeout, o.consumer_group) == (
        False, 1_700_000_000_000, 2.5, "dash")
    assert batch(subscribe="T", startingTimestamp="5", endingTimestamp="5").ending_timestamp == 5
    with pytest.raises(InvalidOptionError, match="'startingTimestamp' 6 is after 'endingTimestamp' 5"):
        batch(subscribe="T", startingTimestamp="6", endingTimestamp="5")
    for kw in ({"maxOffsetsPerTrigger": "0"}, {"minPartitions": "two"}, {"failOnDataLoss": "yes"},
               {"startingTimestamp": "-1"}, {"consumerGroup": "a b"}):
        with pytest.raises(InvalidOptionError):
            stream(subscribe="T", **kw)


def test_sub_expression_is_checked_as_a_tag_expression():
    assert batch(subscribe="T", subExpression="TagA || TagB").sub_expression == "TagA || TagB"
    assert batch(subscribe="T", subExpression="  ").sub_expression == "*"
    for bad in ("||", "||||"):  # what the tasks' pulls refuse (FilterAPI's split leaves no tag)
        with pytest.raises(InvalidOptionError, match="subExpression"):
            batch(subscribe="T", subExpression=bad)


def test_sink_options():
    o = parse_sink_options({"nameServer": "127.0.0.1:9876", "topic": "Out", "idempotent": "true",
                            "sendBatchSize": "64", "sendTimeoutMs": "500"})
    assert (o.endpoints, o.topic, o.idempotent, o.send_batch_size, o.send_timeout) == (
        "127.0.0.1:9876", "Out", True, 64, 0.5)
    assert parse_sink_options(NS).idempotent is False
    with pytest.raises(InvalidOptionError):
        parse_sink_options({**NS, "producerGroup": "a/b"})
    with pytest.raises(InvalidOptionError):
        parse_sink_options({**NS, "idempotent": "1"})


def test_protocol_is_msgpack_or_rocketmq_for_source_and_sink():
    assert (batch(subscribe="T").protocol, parse_sink_options(NS).protocol) == ("msgpack", "msgpack")
    assert stream(subscribe="T", Protocol=" RocketMQ ").protocol == "rocketmq"
    assert parse_sink_options({**NS, "protocol": "rocketmq"}).protocol == "rocketmq"
    for parse in (lambda **kw: batch(subscribe="T", **kw), lambda **kw: stream(subscribe="T", **kw),
                  lambda **kw: parse_sink_options({**NS, **kw})):
        with pytest.raises(InvalidOptionError, match=r"option 'protocol' must be 'msgpack' .* or 'rocketmq' .*"
                                                     r"got 'native'"):
            parse(protocol="native")


def test_credentials_are_both_or_neither_and_the_secret_stays_out_of_reprs():
    import pickle

    from pyspark_pocketmq.options import Credentials, client_credentials

    assert batch(subscribe="T").credentials is None and parse_sink_options(NS).credentials is None
    assert client_credentials(None) == {}
    o = batch(subscribe="T", ACCESSKEY="sparkUser1", secretKey="s3cretValue")
    assert o.credentials == Credentials("sparkUser1", "s3cretValue")
    assert client_credentials(o.credentials) == {"access_key": "sparkUser1", "secret_key": "s3cretValue"}
    sink = parse_sink_options({**NS, "accessKey": "sparkUser1", "secretkey": "s3cretValue"})
    assert stream(subscribe="T", accessKey="a1", secretKey="b2").credentials == Credentials("a1", "b2")
    # What a log line, an error or a worker's traceback would show of the options: never the secret.
    for shown in (repr(o), str(o), repr(sink), repr(sink.credentials)):
        assert "sparkUser1" in shown and "s3cretValue" not in shown
    # The workers get the options pickled, and sign with the same account.
    assert pickle.loads(pickle.dumps(o)).credentials == o.credentials
    for bad in ({"accessKey": "a1"}, {"secretKey": "b2"}):
        with pytest.raises(InvalidOptionError, match="go together"):
            batch(subscribe="T", **bad)
        with pytest.raises(InvalidOptionError, match="go together"):
            parse_sink_options({**NS, **bad})
    with pytest.raises(InvalidOptionError, match="must not be empty"):
        batch(subscribe="T", accessKey=" ", secretKey="b2")
