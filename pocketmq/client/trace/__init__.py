"""Message trace (RocketMQ's client/trace): what producers and consumers with ``enable_msg_trace`` record about
each message (Pub, SubBefore, SubAfter) in RMQ_SYS_TRACE_TOPIC or a topic of one's own, in RocketMQ's
TraceDataEncoder format, and how to read it back (TraceView, ``pocketmq queryMsgTraceById``)."""

from pocketmq.common.topic_validator import RMQ_SYS_TRACE_TOPIC

from .async_trace_dispatcher import AsyncTraceDispatcher
from .trace_constants import CONTENT_SPLITOR, FIELD_SPLITOR
from .trace_context import ConsumeReturnType, MessageType, TraceBean, TraceContext, TraceTransferBean, TraceType
from .trace_data_encoder import decoder_from_trace_data_string, encoder_from_context_bean
from .trace_hooks import ConsumeMessageTraceHook, SendMessageTraceHook
from .trace_view import TraceView, decode_from_trace_trans_data

__all__ = [
    "CONTENT_SPLITOR",
    "FIELD_SPLITOR",
    "RMQ_SYS_TRACE_TOPIC",
    "AsyncTraceDispatcher",
    "ConsumeMessageTraceHook",
    "ConsumeReturnType",
    "MessageType",
    "SendMessageTraceHook",
    "TraceBean",
    "TraceContext",
    "TraceTransferBean",
    "TraceType",
    "TraceView",
    "decode_from_trace_trans_data",
    "decoder_from_trace_data_string",
    "encoder_from_context_bean",
]
