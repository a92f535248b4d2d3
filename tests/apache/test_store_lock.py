"""One store, one broker at a time, whichever kind: pocketmq's store lock keeps a real Apache RocketMQ 4.9.7 broker
out of a store pocketmq serves, and the other way round. (RocketMQ locks with fcntl, pocketmq with flock: until
pocketmq took both, neither saw the other's, and both could open one store.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from pocketmq.embedded import ThreadedCluster
from pocketmq.storage.store_lock import StoreLock, StoreLockedError
from tests.apache.apache_rocketmq import ApacheRocketMQ
from tests.apache.store_handover import apache_on


def test_an_apache_broker_does_not_start_on_a_store_pocketmq_serves(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path / "pocketmq") as cluster:
        store = Path(cluster.cluster.brokers[0].broker_config.store_root)
        apache: ApacheRocketMQ = apache_on(tmp_path / "apache", cluster.namesrv_addr, store, {})
        try:
            with pytest.raises(RuntimeError, match="exited") as refused:
                apache.start()
        finally:
            apache.stop()  # (a broker that started after all is not left running)
        assert "Lock failed" in str(refused.value)


def test_pocketmq_does_not_open_a_store_an_apache_broker_serves(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path / "pocketmq") as cluster:  # (its name server, for Apache's broker)
        store = tmp_path / "apache-store"
        apache: ApacheRocketMQ = apache_on(tmp_path / "apache", cluster.namesrv_addr, store, {})
        with (apache.killed_at_exit(),  # (the lock goes with the process, an orderly shutdown or not)
              pytest.raises(StoreLockedError, match="an Apache RocketMQ one holds its lock")):
            StoreLock.acquire(str(store))
        StoreLock.acquire(str(store)).release()  # (free again once it stopped)
