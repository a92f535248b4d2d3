"""pocketmq's broker: RocketMQ's request handling on asyncio, on top of ``remoting`` and ``storage``.

config = BrokerConfig(store_path_root_dir="/tmp/store", listen_port=0, namesrv_addr="127.0.0.1:9876")
async with BrokerController(config) as broker:
    print(broker.address)
"""

from .broker_controller import BrokerController
from .config import BrokerConfig, BrokerConfigError

__all__ = ["BrokerConfig", "BrokerConfigError", "BrokerController"]
