"""The producer's machinery (RocketMQ's ``client.impl.producer``): topic publish info and the send request."""
