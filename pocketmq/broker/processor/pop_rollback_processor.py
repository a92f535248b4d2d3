"""POP_ROLLBACK (200056, mqadmin exportPopRecord): RocketMQ 5.3's AdminBrokerProcessor.transferPopToFsStore moves the
pop records of its RocksDB pop store (``popConsumerKVServiceEnable``) into the revive log. pocketmq keeps pop
records only in the revive log, so there is nothing to move and the answer is SUCCESS, as Apache's broker gives
with the KV store off."""

from __future__ import annotations

from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel

from .base import BrokerProcessor, log, response


class PopRollbackProcessor(BrokerProcessor):
    def __init__(self, controller: object) -> None:
        super().__init__(controller)  # type: ignore[arg-type]
        self.handlers[RequestCode.POP_ROLLBACK] = self.transfer_pop_to_fs_store

    async def transfer_pop_to_fs_store(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        log.info("POP_ROLLBACK from %s: pop records are in the revive log already", channel.remote_address)
        return response(request)
