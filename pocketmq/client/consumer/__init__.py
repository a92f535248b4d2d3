"""The consumer room (RocketMQ's ``client.consumer``): the pull, lite pull and push consumers, their settings,
listeners and enums, the queue allocation strategies (``allocate/``) and the offset stores (``store/``). Empty on
purpose: the public names are exported by ``pocketmq.client``."""
