"""RocketMQ 5's timer messages (store/timer): a timer log, a timer wheel and their checkpoint, and the
TimerMessageStore that moves messages of rmq_sys_wheel_timer through them to their real topic on time."""
