"""The machinery under the user API (RocketMQ's ``client.impl``): one method per request (``mq_client_api``),
the per-client-id instance with its connections, routes and services (``mq_client_instance``,
``mq_client_manager``), the processor of broker-initiated requests and the admin queries the clients share.
The consumers' machinery is ``impl/consumer/``, the producer's ``impl/producer/``."""
