"""RocketMQ 5's server-side rebalance: the broker tells a client which queues to consume, and whether by pull or
pop (QueryAssignmentProcessor, MessageRequestModeManager, AssignmentManager)."""
