"""The frames of pocketmq's hot requests, encoded and decoded in msgpack and in RocketMQ's native form (JSON and
binary ``ROCKETMQ`` headers), without sockets: where native mode's extra cost per request is, in time and in
instructions.

    python bench/codec.py                 # ns per frame, msgpack vs native, alternating rounds (wall clock)
    python bench/codec.py --instructions  # instructions per frame and per request under valgrind (callgrind)

The frames are what a sync send and a pull carry: SEND_MESSAGE_V2 with its single-letter header, properties and
a 128 B body; its response (msgId, queueId, queueOffset); PULL_MESSAGE; its response with 32 records. Decoding
feeds the decoder 16 frames a receive, as a busy connection's reads hold several. Instruction counts are exact
and do not depend on what else the machine runs: one process under callgrind runs each case N and 2N times,
counting only inside those runs, and the difference over N is the cost of one frame, start-up and warm-up left
out (PYTHONHASHSEED fixed, the garbage collector off, as bench/instructions.py runs).

Besides the frames, the request paths (``--instructions`` counts both; ``--only`` picks by name): what each side
does per sync request apart from the store, one frame per receive. ``broker_send``: decode the request frame,
parse its V2 header into SendMessageRequestHeader, build the response (SendMessageResponseHeader, plus MSG_REGION
and TRACE_ON on a native one, as the broker adds them), encode it. ``client_send``: build the send command from a
SendMessageRequestHeader (mq_client_api.create_send_command), encode it, decode the response, make the
SendResult (process_send_response). ``broker_pull`` / ``client_pull``: the same for PULL_MESSAGE and its
response with 32 records. ``broker_pop``, ``client_pop``, ``client_ack`` and ``broker_ack``: a pop of 32 and
its batch ack (bench/codec_pop.py). Per-message values (born timestamp, the properties' UNIQ_KEY, msgId, offsets) change
from request to request, as in real traffic (the native writers keep the entries they wrote: a frame case, one
frame encoded over and over, finds every entry kept). The ``rocketmq`` client figures are what pocketmq's client
would cost speaking the binary header form, which RocketMQ's Java client can be set to (pocketmq's client speaks
JSON). Target (issue 32): native at least 0.90 of msgpack's speed, a native/msgpack cost ratio of at most 1.11.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_BENCH = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _BENCH:
    sys.path[0] = str(_BENCH.parent)  # the repository first, as bench/e2e.py does

from bench.codec_pop import POP_PATHS  # noqa: E402
from pocketmq.client.impl.mq_client_api import (  # noqa: E402
    create_send_command,
    process_pull_response,
    process_send_response,
)
from pocketmq.client.message import PullStatus, SendStatus  # noqa: E402
from pocketmq.remoting.client_body import MessageQueue  # noqa: E402
from pocketmq.remoting.codec import FrameDecoder, encode  # noqa: E402
from pocketmq.remoting.codes import FLAG_RESPONSE, RequestCode, SerializeType  # noqa: E402
from pocketmq.remoting.command import RemotingCommand  # noqa: E402
from pocketmq.remoting.header import (  # noqa: E402
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    parse_send_message_request_header,
    send_message_v2_ext,
)
from pocketmq.remoting.native_codec import NativeFrameDecoder, encode_native  # noqa: E402

FRAMES_PER_RECEIVE = 16
# pocketmq's msgpack frames; native frames with JSON headers; native frames with RocketMQ's binary headers
PROTOCOLS = ("msgpack", "json", "rocketmq")
NATIVE = PROTOCOLS[1:]
SERIALIZE_TYPES = {"json": SerializeType.JSON, "rocketmq": SerializeType.ROCKETMQ}
# RocketMQ 5's POP codes do not fit the ROCKETMQ header's short: those requests travel with JSON headers only
POP_PROTOCOLS = PROTOCOLS[:2]
TARGET_COST_RATIO = 1.11  # native / msgpack; the speed ratio's 0.90 the other way round


def send_header() -> SendMessageRequestHeader:
    return SendMessageRequestHeader(
        producer_group="bench-producer", topic="BenchTopic", default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=2, sys_flag=0, born_timestamp=1_717_000_000_123, flag=0,
        properties="UNIQ_KEY\x017F000001A1B218B4AAC2740000002A\x02WAIT\x01true\x02TAGS\x01TagA\x02",
        reconsume_times=0, unit_mode=False, max_reconsume_times=None, batch=False, broker_name=None,
    )


def pull_header() -> PullMessageRequestHeader:
    return PullMessageRequestHeader("bench-consumer", "BenchTopic", 2, 12_345, 32, 2, 12_300, 20_000, 0, "*", "TAG")


def commands() -> dict[str, RemotingCommand]:
    send, pull = send_header(), pull_header()
    return {
        "send_request": RemotingCommand(int(RequestCode.SEND_MESSAGE_V2), opaque=1_000,
                                        ext_fields=send_message_v2_ext(send), body=b"x" * 128),
        "send_response": RemotingCommand(0, opaque=1_000, flag=FLAG_RESPONSE, ext_fields=SendMessageResponseHeader(
            "7F00000100002A9F000000000012D687", 2, 12_345).to_ext()),
        "pull_request": RemotingCommand(int(RequestCode.PULL_MESSAGE), opaque=1_001, ext_fields=pull.to_ext()),
        "pull_response": RemotingCommand(1, opaque=1_001, flag=FLAG_RESPONSE, ext_fields=PullMessageResponseHeader(
            0, 12_377, 0, 50_000).to_ext(), body=b"r" * (32 * 230)),
    }


def frame_of(protocol: str, cmd: RemotingCommand) -> bytes:
    if protocol == "msgpack":
        return encode(cmd)
    cmd.serialize_type = SERIALIZE_TYPES[protocol]
    return encode_native(cmd)


def workload(protocol: str, case: str, op: str) -> Callable[[int], None]:
    """A function doing ``n`` frames of ``op`` (encode or decode) of ``case`` in ``protocol``, or ``n`` requests
    of the path ``case`` (``op`` "path")."""
    if op == "path":
        return PATHS[case](protocol)
    cmd = commands()[case]
    if op == "encode":
        enc = encode if protocol == "msgpack" else encode_native
        if protocol != "msgpack":
            cmd.serialize_type = SERIALIZE_TYPES[protocol]

        def run_encode(n: int) -> None:
            for _ in range(n):
                enc(cmd)

        return run_encode
    chunk = frame_of(protocol, cmd) * FRAMES_PER_RECEIVE
    decoder_type = FrameDecoder if protocol == "msgpack" else NativeFrameDecoder

    def run_decode(n: int) -> None:
        decoder = decoder_type()
        for _ in range(n // FRAMES_PER_RECEIVE):
            decoder.receive_data(chunk)
            for _cmd in decoder:
                pass

    return run_decode


def _codec(protocol: str) -> tuple[Callable[..., bytes], type[FrameDecoder] | type[NativeFrameDecoder]]:
    return (encode, FrameDecoder) if protocol == "msgpack" else (encode_native, NativeFrameDecoder)


def _response_frame(protocol: str, case: str) -> bytes:
    cmd = commands()[case]
    cmd.code = 0  # SUCCESS (the frame case's pull response says SYSTEM_ERROR, kept for its figures' history)
    if case == "send_response" and protocol != "msgpack":
        cmd.ext_fields.update(MSG_REGION="DefaultRegion", TRACE_ON="true")
    return frame_of(protocol, cmd)


def broker_send(protocol: str) -> Callable[[int], None]:
    enc, decoder_type = _codec(protocol)
    frame = frame_of(protocol, commands()["send_request"])
    native = protocol != "msgpack"

    def run(n: int) -> None:
        decoder = decoder_type()
        for i in range(n):
            decoder.receive_data(frame)
            for request in decoder:
                header = parse_send_message_request_header(request.code, request.ext_fields)
                answer = RemotingCommand.response_to(request, ext_fields=SendMessageResponseHeader(
                    f"7F00000100002A9F{i:016X}", header.queue_id, 12_345 + i))
                if native:
                    answer.ext_fields["MSG_REGION"] = "DefaultRegion"
                    answer.ext_fields["TRACE_ON"] = "true"
                enc(answer)

    return run


def client_send(protocol: str) -> Callable[[int], None]:
    enc, decoder_type = _codec(protocol)
    header, body = send_header(), b"x" * 128
    response = _response_frame(protocol, "send_response")
    serialize_type = SERIALIZE_TYPES.get(protocol, SerializeType.MSGPACK)
    mq = MessageQueue("BenchTopic", "broker-a", 2)

    def run(n: int) -> None:
        decoder = decoder_type()
        for i in range(n):
            header.born_timestamp = 1_717_000_000_123 + i
            header.properties = f"UNIQ_KEY\x017F000001A1B218B4AAC274{i:08X}\x02WAIT\x01true\x02TAGS\x01TagA\x02"
            cmd = create_send_command(header, body)
            cmd.serialize_type = serialize_type
            enc(cmd)
            decoder.receive_data(response)
            for answer in decoder:
                result = process_send_response("broker-a", "BenchTopic", answer, "UNIQ", None, mq)
                assert result.send_status is SendStatus.SEND_OK

    return run


def broker_pull(protocol: str) -> Callable[[int], None]:
    enc, decoder_type = _codec(protocol)
    frame = frame_of(protocol, commands()["pull_request"])
    records = b"r" * (32 * 230)

    def run(n: int) -> None:
        decoder = decoder_type()
        for i in range(n):
            decoder.receive_data(frame)
            for request in decoder:
                header = request.decode_header(PullMessageRequestHeader)
                answer = RemotingCommand.response_to(request, 0, ext_fields=PullMessageResponseHeader(
                    0, header.queue_offset + 32 + i, 0, 50_000 + i), body=records)
                enc(answer)

    return run


def client_pull(protocol: str) -> Callable[[int], None]:
    enc, decoder_type = _codec(protocol)
    response = _response_frame(protocol, "pull_response")
    serialize_type = SERIALIZE_TYPES.get(protocol, SerializeType.MSGPACK)

    def run(n: int) -> None:
        decoder = decoder_type()
        for i in range(n):
            header = pull_header()
            header.queue_offset += i
            header.commit_offset += i
            cmd = RemotingCommand.request(int(RequestCode.PULL_MESSAGE), header)
            cmd.serialize_type = serialize_type
            enc(cmd)
            decoder.receive_data(response)
            for answer in decoder:
                result = process_pull_response(answer)
                assert result.pull_status is PullStatus.FOUND

    return run


PATHS: dict[str, Callable[[str], Callable[[int], None]]] = {
    "broker_send": broker_send, "client_send": client_send, "broker_pull": broker_pull, "client_pull": client_pull,
    **POP_PATHS,
}
CASES = [(case, op) for case in commands() for op in ("encode", "decode")] + [(path, "path") for path in PATHS]


def protocols_of(case: str) -> tuple[str, ...]:
    return POP_PROTOCOLS if case in POP_PATHS else PROTOCOLS


def wall_clock(rounds: int, n: int) -> dict[str, dict[str, float]]:
    """Median ns per frame over ``rounds`` rounds, the protocols' order rotating from round to round."""
    samples: dict[str, dict[str, list[float]]] = {f"{c}.{o}": {p: [] for p in protocols_of(c)} for c, o in CASES}
    runs = {(c, o, p): workload(p, c, o) for c, o in CASES for p in protocols_of(c)}
    for run in runs.values():
        run(FRAMES_PER_RECEIVE * 20)  # warm-up
    for r in range(rounds):
        order = PROTOCOLS[r % 3:] + PROTOCOLS[:r % 3]
        for (c, o, p), run in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1], order.index(kv[0][2]))):
            t0 = time.perf_counter_ns()
            run(n)
            samples[f"{c}.{o}"][p].append((time.perf_counter_ns() - t0) / n)
    return {k: {p: statistics.median(v) for p, v in d.items()} for k, d in samples.items()}


def instructions(n: int, only: str = "") -> dict[str, dict[str, float]]:
    """Instructions per frame (or request) of the cases matching the regex ``only``: one callgrind run doing each
    case N and 2N times, each inside a ``functools.reduce`` call, with collection on only inside it and a dump
    after it (start-up and imports are not counted at all); the figure is the second run's extra over N."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cg.out")
        proc = subprocess.run([valgrind, "--tool=callgrind", "--collect-atstart=no",
                               "--toggle-collect=functools_reduce", "--dump-after=functools_reduce",
                               f"--callgrind-out-file={path}",
                               sys.executable, __file__, "--run-all", str(n), only],
                              check=True, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        labels = json.loads(proc.stdout.splitlines()[-1])
        counts = [_total_instructions(Path(f"{path}.{i + 1}").read_text()) for i in range(len(labels))]
        if Path(f"{path}.{len(labels) + 1}").exists():
            raise RuntimeError("more dumps than measured runs: something else called functools.reduce")
    out: dict[str, dict[str, float]] = {}
    for i in range(0, len(labels), 2):
        case, protocol = labels[i]
        out.setdefault(case, {})[protocol] = (counts[i + 1] - counts[i]) / n
    return out


def run_all(n: int, only: str) -> None:
    """What ``instructions`` runs under callgrind: every selected case, N then 2N times; prints the labels."""
    labels = []
    for c, o in CASES:
        if not re.search(only, f"{c}.{o}"):
            continue
        for p in protocols_of(c):
            run = workload(p, c, o)
            run(FRAMES_PER_RECEIVE * 4)  # warm-up: caches filled, the interpreter's specialisations made
            for times in (n, 2 * n):
                functools.reduce(lambda _acc, _x, times=times: run(times), [None], None)  # type: ignore[misc]
                labels.append((f"{c}.{o}", p))
    print(json.dumps(labels))


def _total_instructions(callgrind_out: str) -> int:
    match = re.search(r"^summary:\s+(\d+)", callgrind_out, flags=re.M)
    if match is None:
        raise RuntimeError("no summary line in callgrind's output")
    return int(match.group(1))


def print_table(title: str, unit: str, figures: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"{'case':<22}" + "".join(f"{p + ' ' + unit:>16}" for p in PROTOCOLS)
          + "".join(f"{p + '/msgpack':>18}" for p in NATIVE) + f"   target <= {TARGET_COST_RATIO:.2f}")
    for k, d in figures.items():
        ratios = [d[p] / d["msgpack"] for p in NATIVE if p in d]
        verdict = "ok" if max(ratios) <= TARGET_COST_RATIO else "OVER"
        print(f"{k:<22}" + "".join(f"{d[p]:>16,.0f}" if p in d else f"{'-':>16}" for p in PROTOCOLS)
              + "".join(f"{r:>18.2f}" for r in ratios)
              + f"   {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instructions", action="store_true", help="count instructions under valgrind")
    parser.add_argument("--frames", type=int, default=None, help="frames per case (per run)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", default="", help="with --instructions: the cases matching this regex")
    parser.add_argument("--run", nargs=4, metavar=("PROTOCOL", "CASE", "OP", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--run-all", nargs=2, metavar=("N", "ONLY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_all:
        gc.disable()  # (a collection falls wherever the allocation count says: N vs 2N would differ by luck)
        run_all(int(args.run_all[0]), args.run_all[1])
        return 0
    if args.run:
        protocol, case, op, n = args.run
        run = workload(protocol, case, op)
        gc.disable()  # (a collection falls wherever the allocation count says: N vs 2N would differ by luck)
        run(int(n))
        return 0
    figures: dict[str, object] = {}
    if args.instructions:
        n = args.frames or 1_600
        counted = instructions(n, args.only)
        print_table(f"instructions per frame or request (callgrind, {n} vs {2 * n})", "instr", counted)
        figures["instructions"] = counted
    else:
        n = args.frames or 16_000
        timed = wall_clock(args.rounds, n)
        print_table(f"ns per frame (median of {args.rounds} alternating rounds of {n})", "ns", timed)
        figures["ns"] = timed
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
