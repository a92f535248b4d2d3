"""bench/codec.py's request paths of a pop and its batch ack (e2e.py's (f)), each side apart from the store:
what a SimpleConsumer and the broker do per pop of 32 that depends on the protocol, and what goes with it.

``broker_pop``: decode the POP_MESSAGE frame, parse its header, write the answer's header fields as
PopMessageProcessor does (startOffsetInfo and msgOffsetInfo of the queues read) and encode the answer with its
records and its remark. ``client_pop``: build the POP_MESSAGE command (as PopAPIWrapper.pop), encode it, decode
the answer, make its messages carry their receipt handles (process_pop_response). ``client_pop_ack``: the same,
then the BATCH_ACK_MESSAGE of what it popped (pop_api_wrapper.batch_ack_bodies), encoded, and its answer
decoded: the ack's cost is the difference.
``broker_ack``: the BATCH_ACK_MESSAGE frame decoded, its body parsed, the offsets of each entry, the answer
encoded. A pop reads ``QUEUES`` queue of ``PER_QUEUE`` records, as nearly every pop of e2e.py's (f) does; its
pop time and offsets change from pop to pop.
"""

from __future__ import annotations

from collections.abc import Callable

from pocketmq.client.impl.consumer.pop_api import process_pop_response
from pocketmq.client.impl.consumer.pop_api_wrapper import batch_ack_bodies
from pocketmq.common import encode as encode_record
from pocketmq.common import pack_host
from pocketmq.common.extra_info_util import build_msg_offset_info, build_start_offset_info
from pocketmq.common.message import MessageExt
from pocketmq.remoting.codec import FrameDecoder, encode
from pocketmq.remoting.codes import RequestCode, ResponseCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.native_codec import NativeFrameDecoder, encode_native
from pocketmq.remoting.pop_body import BatchAckMessageRequestBody
from pocketmq.remoting.pop_header import PopMessageRequestHeader, PopMessageResponseHeader

TOPIC, GROUP, BROKER = "BenchTopic", "bench-pop-BenchTopic", "broker-a"
QUEUES, PER_QUEUE = 1, 32
HOST = pack_host("127.0.0.1", 10911)
SERIALIZE_TYPES = {"msgpack": SerializeType.MSGPACK, "json": SerializeType.JSON, "rocketmq": SerializeType.ROCKETMQ}


def _codec(protocol: str) -> tuple[Callable[..., bytes], Callable[[], FrameDecoder | NativeFrameDecoder]]:
    return (encode, FrameDecoder) if protocol == "msgpack" else (encode_native, NativeFrameDecoder)


def _command(protocol: str, cmd: RemotingCommand) -> RemotingCommand:
    cmd.serialize_type = SERIALIZE_TYPES[protocol]
    return cmd


def pop_header(i: int) -> PopMessageRequestHeader:
    return PopMessageRequestHeader(GROUP, TOPIC, -1, 32, 60_000, 1_000, 1_717_000_000_000 + i, 0, "TAG", "*", False)


def records(i: int) -> bytes:
    """One pop's records: ``PER_QUEUE`` of each of ``QUEUES`` queues, offsets moving on with ``i``."""
    out = []
    for q in range(QUEUES):
        for k in range(PER_QUEUE):
            offset = i * PER_QUEUE + k
            out.append(encode_record(
                topic=TOPIC, body=b"x" * 128, properties=f"UNIQ_KEY\x017F000001A1B218B4AAC274{offset:08X}\x02WAIT"
                "\x01true\x02", queue_id=q, queue_offset=offset, physical_offset=offset * 300,
                born_timestamp=1_717_000_000_000, born_host=HOST, store_timestamp=1_717_000_000_001, store_host=HOST))
    return b"".join(out)


def pop_answer(request: RemotingCommand, i: int, body: bytes) -> RemotingCommand:
    """The broker's answer to a pop that read ``QUEUES`` queues (PopQueueReader._take and pop_answers.pop_found)."""
    starts: list[str] = []
    offsets: list[str] = []
    for q in range(QUEUES):
        build_start_offset_info(starts, TOPIC, q, i * PER_QUEUE)
        build_msg_offset_info(offsets, TOPIC, q, list(range(i * PER_QUEUE, (i + 1) * PER_QUEUE)))
    header = PopMessageResponseHeader(1_717_000_000_500 + i, 60_000, i % 8, 10_000 - i, ";".join(starts),
                                      ";".join(offsets), None)
    return RemotingCommand.response_to(request, ResponseCode.SUCCESS, "FOUND", ext_fields=header, body=body)


def _answers(protocol: str, code: int, build: Callable[[RemotingCommand, int], RemotingCommand],
             count: int) -> list[bytes]:
    enc, _ = _codec(protocol)
    request = _command(protocol, RemotingCommand(code, opaque=7))
    return [enc(build(request, i)) for i in range(count)]


VARIANTS = 16  # answers of different pops the client paths go round


def broker_pop(protocol: str) -> Callable[[int], None]:
    enc, decoder_type = _codec(protocol)
    frames = [enc(_command(protocol, RemotingCommand.request(RequestCode.POP_MESSAGE, pop_header(i))))
              for i in range(VARIANTS)]
    bodies = [records(i) for i in range(VARIANTS)]

    def run(n: int) -> None:
        decoder = decoder_type()
        for i in range(n):
            decoder.receive_data(frames[i % VARIANTS])
            for request in decoder:
                header = request.decode_header(PopMessageRequestHeader)
                assert header.max_msg_nums == 32
                enc(pop_answer(request, i, bodies[i % VARIANTS]))

    return run


def _popped(protocol: str, frames: list[bytes], n: int) -> list[list[MessageExt]]:
    decoder = _codec(protocol)[1]()
    out = []
    for i in range(n):
        decoder.receive_data(frames[i % VARIANTS])
        for answer in decoder:
            out.append(process_pop_response(answer, "127.0.0.1:10911", BROKER, False).msg_found_list)
    return out


def _pop_frames(protocol: str) -> list[bytes]:
    return _answers(protocol, int(RequestCode.POP_MESSAGE), lambda r, i: pop_answer(r, i, records(i)), VARIANTS)


def client_pop(protocol: str) -> Callable[[int], None]:
    enc, decoder_type = _codec(protocol)
    frames = _pop_frames(protocol)

    def run(n: int) -> None:
        decoder = decoder_type()
        for i in range(n):
            enc(_command(protocol, RemotingCommand.request(RequestCode.POP_MESSAGE, pop_header(i))))
            decoder.receive_data(frames[i % VARIANTS])
            for answer in decoder:
                result = process_pop_response(answer, "127.0.0.1:10911", BROKER, False)
                assert len(result.msg_found_list) == QUEUES * PER_QUEUE

    return run


def client_pop_ack(protocol: str) -> Callable[[int], None]:
    """client_pop, then the BATCH_ACK_MESSAGE of what it popped (as e2e.py's (f): messages acked unread)."""
    enc, decoder_type = _codec(protocol)
    frames = _pop_frames(protocol)
    answer = _answers(protocol, int(RequestCode.BATCH_ACK_MESSAGE),
                      lambda r, i: RemotingCommand.response_to(r, ResponseCode.SUCCESS), 1)[0]

    def run(n: int) -> None:
        decoder = decoder_type()
        for i in range(n):
            enc(_command(protocol, RemotingCommand.request(RequestCode.POP_MESSAGE, pop_header(i))))
            decoder.receive_data(frames[i % VARIANTS])
            msgs = [m for a in decoder
                    for m in process_pop_response(a, "127.0.0.1:10911", BROKER, False).msg_found_list]
            for _topic, body in batch_ack_bodies(msgs, GROUP).values():
                request = _command(protocol, RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE))
                request.body = request.encode_body(body)
                enc(request)
            decoder.receive_data(answer)
            for reply in decoder:
                assert reply.code == ResponseCode.SUCCESS

    return run


def broker_ack(protocol: str) -> Callable[[int], None]:
    enc, decoder_type = _codec(protocol)
    frames = []
    for msgs in _popped(protocol, _pop_frames(protocol), VARIANTS):
        for _topic, body in batch_ack_bodies(msgs, GROUP).values():
            request = _command(protocol, RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE))
            request.body = request.encode_body(body)
            frames.append(enc(request))

    def run(n: int) -> None:
        decoder = decoder_type()
        for i in range(n):
            decoder.receive_data(frames[i % VARIANTS])
            for request in decoder:
                body = request.decode_body(BatchAckMessageRequestBody)
                acked = [b.start_offset + k for b in body.acks for k in b.offsets]
                assert len(acked) == QUEUES * PER_QUEUE
                enc(RemotingCommand.response_to(request, ResponseCode.SUCCESS))

    return run


POP_PATHS: dict[str, Callable[[str], Callable[[int], None]]] = {
    "broker_pop": broker_pop, "client_pop": client_pop, "client_pop_ack": client_pop_ack, "broker_ack": broker_ack,
}
