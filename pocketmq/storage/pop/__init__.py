"""The records of the revive log (RocketMQ's store.pop): checkpoints of pops and the acks that answer them."""

from .ack_msg import AckMsg, BatchAckMsg, decode_ack
from .pop_check_point import PopCheckPoint

__all__ = ["AckMsg", "BatchAckMsg", "PopCheckPoint", "decode_ack"]
