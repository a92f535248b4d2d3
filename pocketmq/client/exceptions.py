"""The client's exceptions, named after RocketMQ's (MQClientException, MQBrokerException, RemotingException)."""

from __future__ import annotations

from pocketmq.remoting.errors import (
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)

# RocketMQ's RemotingException family is our remoting layer's RemotingError family.
RemotingException = RemotingError

__all__ = [
    "ClientErrorCode",
    "MQBrokerException",
    "MQClientException",
    "NameServerAddressError",
    "NameServerProtocolError",
    "RemotingConnectError",
    "RemotingException",
    "RemotingSendRequestError",
    "RemotingTimeoutError",
    "RequestTimeoutException",
]


class ClientErrorCode:
    """RocketMQ's ClientErrorCode: response codes the client sets on errors that never reached a broker."""

    CONNECT_BROKER_EXCEPTION = 10001
    ACCESS_BROKER_TIMEOUT = 10002
    BROKER_NOT_EXIST_EXCEPTION = 10003
    NO_NAME_SERVER_EXCEPTION = 10004
    NOT_FOUND_TOPIC_EXCEPTION = 10005
    REQUEST_TIMEOUT_EXCEPTION = 10006
    CREATE_REPLY_MESSAGE_EXCEPTION = 10007


class MQClientException(Exception):
    """A client-side failure: bad argument, no route, or every send attempt failed.

    ``response_code`` is -1 unless a broker code or a ClientErrorCode explains the failure.
    """

    def __init__(self, message: str, *, response_code: int = -1) -> None:
        super().__init__(message)
        self.response_code = response_code
        self.error_message = message


class RequestTimeoutException(MQClientException):
    """A request (Producer.request) was sent but no reply came within its timeout (RocketMQ's
    RequestTimeoutException, code REQUEST_TIMEOUT_EXCEPTION)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, response_code=ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION)


class NameServerAddressError(MQClientException, RemotingConnectError):
    """The name server address leads nowhere: not ``host:port``, a host that does not resolve, or nothing
    listening. The message names the address(es); ``__cause__`` is the ValueError, OSError or TimeoutError.

    Also a RemotingConnectError, which is what an unreachable name server raised before this type existed, so
    handlers written for the remoting family keep catching it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, response_code=ClientErrorCode.NO_NAME_SERVER_EXCEPTION)


class NameServerProtocolError(MQClientException, RemotingSendRequestError):
    """A name server closed the connection without answering the client's first request in pocketmq's msgpack
    protocol (the default): what Apache RocketMQ's name server does, which speaks only RocketMQ's native protocol
    (``protocol="rocketmq"``). The message says so; ``__cause__`` is the RemotingSendRequestError.

    Also a RemotingSendRequestError, which is what the same failure raised before this type existed.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, response_code=ClientErrorCode.NO_NAME_SERVER_EXCEPTION)


class MQBrokerException(Exception):
    """The broker answered with a code the call cannot turn into a result."""

    def __init__(self, code: int, remark: str | None, broker_addr: str | None = None) -> None:
        where = f" BROKER: {broker_addr}" if broker_addr else ""
        super().__init__(f"CODE: {code}  DESC: {remark}{where}")
        self.code = code
        self.remark = remark
        self.broker_addr = broker_addr

    @property
    def response_code(self) -> int:  # RocketMQ's getter name
        return self.code
