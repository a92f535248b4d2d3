"""The producer room (RocketMQ's ``client.producer`` and ``client.latency``): ``Producer``, the transaction
producer, queue selectors, request-reply futures and the fault strategy. Empty on purpose: the public names are
exported by ``pocketmq.client``, and an empty room adds no import order of its own."""
