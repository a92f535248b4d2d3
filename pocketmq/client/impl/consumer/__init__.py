"""The consumers' machinery (RocketMQ's ``client.impl.consumer``): the push consumer's implementation,
rebalancing, pulling, process queues and the consume services."""
