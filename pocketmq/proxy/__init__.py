"""RocketMQ 5's gRPC endpoint (the proxy's ``apache.rocketmq.v2.MessagingService``) in front of pocketmq.

As Apache RocketMQ's proxy in cluster mode, every RPC becomes the broker's and name server's own remoting requests
(GET_ROUTEINFO_BY_TOPIC, SEND_MESSAGE_V2, END_TRANSACTION, HEART_BEAT, ...), sent with the client layer's remoting
API: a message a 5.x SDK sends is the same record a 4.x client would have stored. It builds on ``remoting/``,
``common/`` and ``client/`` and knows no broker, name server or storage module (tests/test_architecture.py).
"""

from __future__ import annotations
