"""POP's records in the commit log (docs/storage.md section 15): a checkpoint (tag ``ck``) or an ack (``ack``,
``bAck``) of a revive queue, or on its way there through the timer wheel. Their bodies are JSON with one- and
two-letter names, which a learner cannot read from a 60-character preview, so they are decoded here with the
broker's own decoders."""

from __future__ import annotations

from pocketmq.common.message import MessageExt
from pocketmq.common.pop_ack_constants import ACK_TAG, BATCH_ACK_TAG, CK_TAG, REVIVE_TOPIC_PREFIX

from ..pop import PopCheckPoint, decode_ack
from ..pop.pop_check_point import PopRecordError
from ..timer.timer_routing import TIMER_TOPIC
from .files import fmt_ms

_KINDS = {CK_TAG: "checkpoint", ACK_TAG: "ack", BATCH_ACK_TAG: "batch ack"}


def pop_record(msg: MessageExt) -> dict | None:
    """The record's POP meaning as a JSON-ready dict, None when it is no POP record: ``kind`` (its tag),
    ``revive_topic``, ``revive_queue``, ``in_timer`` (the record is the copy in rmq_sys_wheel_timer, which the
    wheel puts in its revive queue at TIMER_DELIVER_MS), and ``fields`` (the body's JSON names and values) or
    ``error`` (why the body does not read as one: the revive service skips such a record)."""
    tag = msg.tags or ""
    if tag not in _KINDS:
        return None
    props = msg.properties
    in_timer = msg.topic == TIMER_TOPIC
    revive_topic = props.get("REAL_TOPIC", "") if in_timer else msg.topic
    if not revive_topic.startswith(REVIVE_TOPIC_PREFIX):
        return None
    queue = props.get("REAL_QID", "") if in_timer else msg.queue_id
    out: dict = {"kind": tag, "revive_topic": revive_topic,
                 "revive_queue": int(queue) if str(queue).lstrip("-").isdigit() else None, "in_timer": in_timer}
    try:
        if tag == CK_TAG:
            out["fields"] = PopCheckPoint.decode(msg.body).to_dict()
        else:
            out["fields"] = decode_ack(msg.body, tag == BATCH_ACK_TAG).to_dict()
    except PopRecordError as e:
        out["error"] = str(e)
    return out


def describe(pop: dict) -> list[str]:
    """What a POP record says, in words, for the listing: where it is, then what it holds."""
    name = _KINDS[pop["kind"]]
    where = (f"the timer's copy, put in {pop['revive_topic']} queue {pop['revive_queue']} at its TIMER_DELIVER_MS"
             if pop["in_timer"] else f"in revive queue {pop['revive_queue']}")
    lines = [f"POP {name} ({pop['kind']}), {where}"]
    if "error" in pop:
        return lines + [f"! its body is no {name}: {pop['error']}"]
    f = pop["fields"]
    popped = f"popped at {fmt_ms(f['pt'])} (pt)"
    if pop["kind"] == CK_TAG:
        offsets = [f["so"] + d for d in f["d"]] if f["d"] else list(range(f["so"], f["so"] + f["n"]))
        acked = [o for i, o in enumerate(offsets) if f["bm"] >> i & 1]
        lines.append(f"group {f['c']} (c) popped {f['n']} (n) of {f['t']} (t) queue {f['q']} (q), offsets "
                     f"{_offsets(offsets)} (so + d), {popped}")
        lines.append(f"invisible {f['it']} ms (it): revive time {fmt_ms(f['pt'] + f['it'])}; acked in bm: "
                     f"{_offsets(acked) if acked else 'none'}; broker {f['bn'] or '-'} (bn)"
                     + (f"; re-put {f['rp']} times (rp)" if "rp" in f else ""))
    else:
        acked = f["aol"] if pop["kind"] == BATCH_ACK_TAG else [f["ao"]]
        lines.append(f"group {f['c']} (c) acked {f['t']} (t) queue {f['q']} (q) offset(s) {_offsets(acked)} "
                     f"({'aol' if pop['kind'] == BATCH_ACK_TAG else 'ao'}), of the checkpoint from offset {f['so']} "
                     f"(so) {popped}, broker {f['bn'] or '-'} (bn)")
    return lines


def _offsets(offsets: list[int]) -> str:
    return ", ".join(map(str, offsets))
