"""Record the frames real RocketMQ clients send: the tool that made tests/remoting/vectors/.

    python tests/native_clients/capture_server.py --out /tmp/frames      # prints "LISTEN 127.0.0.1:<port>"

One port on 127.0.0.1 plays the name server and the broker (its routes point at itself), so a client pointed
at it goes through its whole conversation: routes, sends, heartbeats, pulls, offsets, send-backs, locks. Every
frame that arrives is written as it came (length prefix included) to ``<out>/<seq>-<conn>-<code>.bin`` and
described in ``<out>/frames.jsonl``. It answers the way native-protocol.md says a 4.9.8 broker does, from a
small in-memory store, only well enough to let the clients go on: it is a recorder, not a broker (no disk, one
"broker-a", no delays, no flow control). Standard library only, so any Python runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import struct
import zlib
from dataclasses import dataclass, field

MAGIC = 0xDAA320A7
PULL_SUSPEND = 2
PULL_COMMIT_OFFSET = 1
STORE_HOST = bytes([127, 0, 0, 1])


@dataclass
class Stored:
    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    flag: int
    sys_flag: int
    born_timestamp: int
    body: bytes
    properties: str
    reconsume_times: int = 0

    @property
    def tags(self) -> str:
        return parse_properties(self.properties).get("TAGS", "")


@dataclass
class Store:
    port: int
    queues: dict[tuple[str, int], list[Stored]] = field(default_factory=dict)
    by_offset: dict[int, Stored] = field(default_factory=dict)
    offsets: dict[tuple[str, str, int], int] = field(default_factory=dict)
    next_physical: int = 0
    arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    def put(self, topic: str, queue_id: int, body: bytes, properties: str, flag: int = 0, sys_flag: int = 0,
            born: int = 0, reconsume_times: int = 0) -> Stored:
        queue = self.queues.setdefault((topic, queue_id), [])
        msg = Stored(topic, queue_id, len(queue), self.next_physical, flag, sys_flag, born, body, properties,
                     reconsume_times)
        self.next_physical += len(encode_record(msg, self.port))
        queue.append(msg)
        self.by_offset[msg.physical_offset] = msg
        return msg


def parse_properties(text: str) -> dict[str, str]:
    out = {}
    for pair in text.split("\x02"):
        key, sep, value = pair.partition("\x01")
        if sep and key and value:
            out[key] = value
    return out


def format_properties(props: dict[str, str]) -> str:
    return "\x02".join(f"{k}\x01{v}" for k, v in props.items())


def msg_id(physical_offset: int, port: int) -> str:
    return (STORE_HOST + struct.pack(">iq", port, physical_offset)).hex().upper()


def encode_record(m: Stored, port: int) -> bytes:
    """One CommitLog record (rocketmq-reference.md §1.1), as a pull response carries it."""
    topic, props = m.topic.encode(), m.properties.encode()
    host = STORE_HOST + struct.pack(">i", port)
    rest = (
        struct.pack(">iiiqqiq", zlib.crc32(m.body) & 0x7FFFFFFF, m.queue_id, m.flag, m.queue_offset,
                    m.physical_offset, m.sys_flag, m.born_timestamp)
        + host + struct.pack(">q", m.born_timestamp) + host
        + struct.pack(">iqi", m.reconsume_times, 0, len(m.body)) + m.body
        + struct.pack(">b", len(topic)) + topic + struct.pack(">h", len(props)) + props
    )
    return struct.pack(">iI", 8 + len(rest), MAGIC) + rest


def quote_bare_keys(text: str) -> str:
    return re.sub(r'([{,]\s*)(-?\d+)(\s*:)', r'\1"\2"\3', text)


def loads(body: bytes) -> dict:
    text = body.decode()
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(quote_bare_keys(text))


class Capture:
    def __init__(self, out: str, port: int) -> None:
        self.out = out
        self.store = Store(port)
        self.seq = 0
        self.conn_seq = 0
        self.index = open(os.path.join(out, "frames.jsonl"), "a", encoding="utf-8")  # noqa: SIM115
        self.members: dict[str, dict[asyncio.StreamWriter, str]] = {}  # group -> writer -> clientID
        self.opaque = 0
        self.created: set[str] = set()

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.store.port}"

    # ---- framing ----

    def record(self, conn: int, frame: bytes) -> tuple[dict, bytes]:
        word = struct.unpack_from(">i", frame, 4)[0]
        stype, hlen = (word >> 24) & 0xFF, word & 0xFFFFFF
        header_bytes = frame[8:8 + hlen]
        body = frame[8 + hlen:]
        if stype != 0:
            raise ValueError(f"serialize type {stype}: only JSON is expected from these clients")
        header = json.loads(header_bytes)
        self.seq += 1
        name = f"{self.seq:04d}-c{conn}-{header.get('code')}.bin"
        with open(os.path.join(self.out, name), "wb") as f:
            f.write(frame)
        entry = {"seq": self.seq, "conn": conn, "file": name, "serialize_type": stype, "header_len": hlen,
                 "header_text": header_bytes.decode(), "body_len": len(body),
                 "body_text": body.decode("utf-8", "replace") if header.get("code") in (34, 41, 42) else None}
        self.index.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self.index.flush()
        return header, body

    @staticmethod
    def frame(code: int, opaque: int, flag: int, ext: dict | None = None, remark: str | None = None,
              body: bytes = b"") -> bytes:
        header: dict = {"code": code, "flag": flag, "language": "JAVA", "opaque": opaque,
                        "serializeTypeCurrentRPC": "JSON", "version": 409}
        if ext is not None:
            header["extFields"] = {k: str(v) for k, v in ext.items()}
        if remark is not None:
            header["remark"] = remark
        text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        return struct.pack(">ii", 4 + len(text) + len(body), len(text)) + text + body

    # ---- connection ----

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.conn_seq += 1
        conn = self.conn_seq
        try:
            while True:
                prefix = await reader.readexactly(4)
                (length,) = struct.unpack(">i", prefix)
                frame = prefix + await reader.readexactly(length)
                header, body = self.record(conn, frame)
                if header.get("flag", 0) & 1:
                    continue  # a client's answer to a request of ours
                asyncio.get_running_loop().create_task(self.answer(writer, header, body))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            await self.leave(writer)
            writer.close()

    async def answer(self, writer: asyncio.StreamWriter, header: dict, body: bytes) -> None:
        code, opaque = header["code"], header["opaque"]
        ext = {k: str(v) for k, v in (header.get("extFields") or {}).items()}
        handler = getattr(self, f"on_{code}", None)
        if handler is None:
            reply = (3, None, f" request type {code} not supported", b"")
        else:
            reply = await handler(writer, ext, body)
        if header.get("flag", 0) & 2:
            return
        rcode, rext, remark, rbody = reply
        writer.write(self.frame(rcode, opaque, 1, rext, remark, rbody))
        await writer.drain()

    async def leave(self, writer: asyncio.StreamWriter) -> None:
        for group, members in self.members.items():
            if members.pop(writer, None) is not None:
                await self.notify(group)

    async def notify(self, group: str) -> None:
        for w in list(self.members.get(group, {})):
            self.opaque += 1
            w.write(self.frame(40, self.opaque, 2, {"consumerGroup": group}))

    # ---- name server ----

    async def on_105(self, w, ext, body):  # GET_ROUTEINFO_BY_TOPIC
        topic = ext["topic"]
        if topic.startswith("Missing") and topic not in self.created:
            return 17, None, f"No topic route info in name server for the topic: {topic}", b""
        queues = 1 if topic.startswith("%RETRY%") else 4
        # The fastjson dialect a 4.9.8 name server gives clients below version 401: a bare numeric key.
        route = (
            f'{{"brokerDatas":[{{"brokerAddrs":{{0:"{self.addr}"}},"brokerName":"broker-a",'
            f'"cluster":"DefaultCluster"}}],"filterServerTable":{{}},"queueDatas":[{{"brokerName":"broker-a",'
            f'"perm":6,"readQueueNums":{queues},"topicSysFlag":0,"writeQueueNums":{queues}}}]}}'
        )
        return 0, None, None, route.encode()

    # ---- broker: sending ----

    async def store_send(self, topic, queue_id, body, props, flag, sys_flag, born):
        self.created.add(topic)
        msg = self.store.put(topic, queue_id, body, props, flag, sys_flag, born)
        async with self.store.arrived:
            self.store.arrived.notify_all()
        return 0, {"msgId": msg_id(msg.physical_offset, self.store.port), "queueId": queue_id,
                   "queueOffset": msg.queue_offset, "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}, None, b""

    async def on_10(self, w, ext, body):  # SEND_MESSAGE
        return await self.store_send(ext["topic"], int(ext["queueId"]), body, ext.get("properties", ""),
                                     int(ext.get("flag", 0)), int(ext.get("sysFlag", 0)),
                                     int(ext.get("bornTimestamp", 0)))

    async def on_310(self, w, ext, body):  # SEND_MESSAGE_V2
        return await self.store_send(ext["b"], int(ext["e"]), body, ext.get("i", ""), int(ext.get("h", 0)),
                                     int(ext.get("f", 0)), int(ext.get("g", 0)))

    # ---- broker: clients ----

    async def on_34(self, w, ext, body):  # HEART_BEAT
        data = loads(body)
        for consumer in data.get("consumerDataSet") or []:
            group = consumer["groupName"]
            members = self.members.setdefault(group, {})
            if w not in members:
                members[w] = data["clientID"]
                await self.notify(group)
        return 0, None, None, b""

    async def on_35(self, w, ext, body):  # UNREGISTER_CLIENT
        group = ext.get("consumerGroup")
        if group and self.members.get(group, {}).pop(w, None) is not None:
            await self.notify(group)
        return 0, None, None, b""

    async def on_38(self, w, ext, body):  # GET_CONSUMER_LIST_BY_GROUP
        ids = sorted(self.members.get(ext["consumerGroup"], {}).values())
        if not ids:
            return 1, None, f"no consumer for this group, {ext['consumerGroup']}", b""
        return 0, None, None, json.dumps({"consumerIdList": ids}).encode()

    async def on_41(self, w, ext, body):  # LOCK_BATCH_MQ: every queue asked for is granted
        return 0, None, None, json.dumps({"lockOKMQSet": loads(body).get("mqSet", [])}).encode()

    async def on_42(self, w, ext, body):  # UNLOCK_BATCH_MQ
        return 0, None, None, b""

    # ---- broker: offsets ----

    def max_offset(self, topic: str, queue_id: int) -> int:
        return len(self.store.queues.get((topic, queue_id), []))

    async def on_14(self, w, ext, body):  # QUERY_CONSUMER_OFFSET (a young queue reads from 0, §10)
        key = (ext["consumerGroup"], ext["topic"], int(ext["queueId"]))
        return 0, {"offset": self.store.offsets.get(key, 0)}, None, b""

    async def on_15(self, w, ext, body):  # UPDATE_CONSUMER_OFFSET
        self.store.offsets[(ext["consumerGroup"], ext["topic"], int(ext["queueId"]))] = int(ext["commitOffset"])
        return 0, None, None, b""

    async def on_30(self, w, ext, body):  # GET_MAX_OFFSET
        return 0, {"offset": self.max_offset(ext["topic"], int(ext["queueId"]))}, None, b""

    async def on_31(self, w, ext, body):  # GET_MIN_OFFSET
        return 0, {"offset": 0}, None, b""

    # ---- broker: pulling ----

    async def on_11(self, w, ext, body):  # PULL_MESSAGE
        group, topic, queue_id = ext["consumerGroup"], ext["topic"], int(ext["queueId"])
        offset, max_nums, sys_flag = int(ext["queueOffset"]), int(ext["maxMsgNums"]), int(ext["sysFlag"])
        if sys_flag & PULL_COMMIT_OFFSET:
            self.store.offsets[(group, topic, queue_id)] = int(ext.get("commitOffset", 0))
        sub = ext.get("subscription") or "*"
        tags = None if sub.strip() in ("*", "") else {t.strip() for t in sub.split("||")}
        hold = min(int(ext.get("suspendTimeoutMillis", 0)) / 1000, 5.0) if sys_flag & PULL_SUSPEND else 0.0
        deadline = asyncio.get_running_loop().time() + hold
        while True:
            queue = self.store.queues.get((topic, queue_id), [])
            top = len(queue)
            offsets = {"suggestWhichBrokerId": 0, "minOffset": 0, "maxOffset": top}
            if offset > top:
                return 21, {**offsets, "nextBeginOffset": top}, "OFFSET_OVERFLOW_BADLY", b""
            if offset < top:
                window = queue[offset:offset + max_nums]
                found = [m for m in window if tags is None or m.tags in tags]
                next_offset = offset + len(window)
                if not found:
                    return 20, {**offsets, "nextBeginOffset": next_offset}, "NO_MATCHED_MESSAGE", b""
                records = b"".join(encode_record(m, self.store.port) for m in found)
                return 0, {**offsets, "nextBeginOffset": next_offset}, "FOUND", records
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return 19, {**offsets, "nextBeginOffset": offset}, "OFFSET_OVERFLOW_ONE", b""
            async with self.store.arrived:
                try:
                    await asyncio.wait_for(self.store.arrived.wait(), left)
                except TimeoutError:
                    pass

    async def on_36(self, w, ext, body):  # CONSUMER_SEND_MSG_BACK: to %RETRY%<group> at once (no delay here)
        origin = self.store.by_offset.get(int(ext["offset"]))
        if origin is None:
            return 1, None, f"look message by offset failed, {ext['offset']}", b""
        props = parse_properties(origin.properties)
        props.setdefault("RETRY_TOPIC", origin.topic)
        props.setdefault("ORIGIN_MESSAGE_ID", ext.get("originMsgId") or msg_id(origin.physical_offset,
                                                                                self.store.port))
        retry_topic = "%RETRY%" + ext["group"]
        self.store.put(retry_topic, 0, origin.body, format_properties(props), origin.flag, origin.sys_flag,
                       origin.born_timestamp, origin.reconsume_times + 1)
        async with self.store.arrived:
            self.store.arrived.notify_all()
        return 0, None, None, b""


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the recorded frames")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    holder: list[Capture] = []
    server = await asyncio.start_server(lambda r, w: holder[0].serve(r, w), "127.0.0.1", args.port)
    holder.append(Capture(args.out, server.sockets[0].getsockname()[1]))
    print(f"LISTEN {holder[0].addr}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
