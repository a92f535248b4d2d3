"""What a careless or hostile client sends a real broker over real sockets (issue 18): refused with RocketMQ's codes,
nothing stored, the broker serving on."""

from __future__ import annotations

from pocketmq.broker.message_batch import BatchItem
from pocketmq.common.codec import decode_all
from pocketmq.remoting.codes import RequestCode, ResponseCode


async def test_an_empty_body_is_message_illegal_and_stores_nothing(broker, mq, dispatched) -> None:
    for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
        for body in (b"", None):
            resp = await mq.send("TopicEmpty", body, code=code)
            assert resp.code == ResponseCode.MESSAGE_ILLEGAL, (code, body)
            assert "body length is zero" in resp.remark
    batch = [BatchItem(0, b"one", ""), BatchItem(0, b"", ""), BatchItem(0, b"three", "")]
    resp = await mq.send_batch("TopicEmpty", batch)
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and "message 1 of the batch" in resp.remark
    assert (await mq.send("TopicEmpty", b"not empty")).code == ResponseCode.SUCCESS
    await dispatched(broker)
    resp = await mq.pull("G", "TopicEmpty", 0, 0)
    assert [m.body for m in decode_all(resp.body)] == [b"not empty"]


async def test_a_pull_of_zero_or_fewer_messages_is_refused(broker, mq, dispatched) -> None:
    for i in range(3):
        assert (await mq.send("TopicMaxNums", b"m%d" % i)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    for max_nums in (0, -1, -(2**31)):
        resp = await mq.pull("G", "TopicMaxNums", 0, 0, max_nums=max_nums)
        assert resp.code == ResponseCode.SYSTEM_ERROR and resp.body is None, max_nums
        assert f"maxMsgNums must be positive, got {max_nums}" in resp.remark
    resp = await mq.pull("G", "TopicMaxNums", 0, 0, max_nums=1)
    assert [m.body for m in decode_all(resp.body)] == [b"m0"]
