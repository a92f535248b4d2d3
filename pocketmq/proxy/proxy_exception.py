"""GrpcProxyException and the status a failure becomes (RocketMQ's ResponseBuilder)."""

from __future__ import annotations

from typing import Any

from pocketmq.client.exceptions import MQBrokerException, MQClientException
from pocketmq.common.faq_url import attach_default_url
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.errors import RemotingTimeoutError

from .protocol import load

pb = load()

# ResponseBuilder.RESPONSE_CODE_MAPPING; anything else is INTERNAL_SERVER_ERROR.
_RESPONSE_CODE_MAPPING: dict[int, Any] = {
    ResponseCode.SUCCESS: pb.Code.OK,
    ResponseCode.SYSTEM_BUSY: pb.Code.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: pb.Code.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: pb.Code.CONSUMER_GROUP_NOT_FOUND,
}


# How a ProxyException of RocketMQ's proxy reads in a status (its toString: the class name, then the message).
PROXY_EXCEPTION = "org.apache.rocketmq.proxy.common.ProxyException: "

def topic_not_exist_message(code: int, remark: str | None) -> str:
    """The message of the MQClientException RocketMQ's proxy turns into TOPIC_NOT_FOUND (its getMessage())."""
    return attach_default_url(f"CODE: {code}  DESC: {remark}")


class GrpcProxyException(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def build_code(remoting_code: int) -> int:
    return int(_RESPONSE_CODE_MAPPING.get(remoting_code, pb.Code.INTERNAL_SERVER_ERROR))


def status(code: int, message: str | None = None) -> Any:
    return pb.Status(code=code, message=message if message is not None else pb.Code.Name(code))


def ok() -> Any:
    return status(pb.Code.OK)


def status_of(error: BaseException) -> Any:
    """ResponseBuilder.buildStatus(Throwable)."""
    if isinstance(error, GrpcProxyException):
        return status(error.code, error.message)
    if isinstance(error, MQClientException):
        if error.response_code == ResponseCode.TOPIC_NOT_EXIST:
            return status(pb.Code.TOPIC_NOT_FOUND, topic_not_exist_message(error.response_code, str(error)))
        return status(build_code(error.response_code), str(error))
    if isinstance(error, MQBrokerException):
        if error.code == ResponseCode.TOPIC_NOT_EXIST:
            return status(pb.Code.TOPIC_NOT_FOUND, topic_not_exist_message(error.code, error.remark))
        return status(build_code(error.code), error.remark or str(error.code))
    if isinstance(error, RemotingTimeoutError | TimeoutError):
        return status(pb.Code.PROXY_TIMEOUT, str(error) or "timeout")
    return status(pb.Code.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}")
