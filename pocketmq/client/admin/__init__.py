"""Cluster administration from the client side (RocketMQ's ``tools.admin``): ``MQAdminExt``."""
