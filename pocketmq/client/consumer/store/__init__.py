"""Consumer offset stores (RocketMQ's ``client.consumer.store``): the broker's and the local file's."""
