package io.pocketmq.javaclient;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** Consumers: tag and SQL92 filters, a concurrent push group of two, an orderly group across a rebalance, the
 * lite pull consumer (subscribe and assign, seek, commit) and offsets kept across a consumer restart. */
final class ConsumeScenarios {
    private ConsumeScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("tag_filter", ConsumeScenarios::tagFilter);
        scenarios.put("sql_filter", ConsumeScenarios::sqlFilter);
        scenarios.put("sql_invalid", ConsumeScenarios::sqlInvalid);
        scenarios.put("push_group", ConsumeScenarios::pushGroup);
        scenarios.put("orderly_rebalance", ConsumeScenarios::orderlyRebalance);
        scenarios.put("lite_subscribe", ConsumeScenarios::liteSubscribe);
        scenarios.put("lite_assign_seek", ConsumeScenarios::liteAssignSeek);
        scenarios.put("offsets_restart", ConsumeScenarios::offsetsRestart);
    }

    static String text(MessageExt m) {
        return new String(m.getBody(), UTF_8);
    }

    /** A push consumer that records every delivery, started. */
    static List<MessageExt> collect(DefaultMQPushConsumer consumer, String topic, MessageSelector selector)
        throws Exception {
        List<MessageExt> got = Collections.synchronizedList(new ArrayList<>());
        if (selector == null) {
            consumer.subscribe(topic, "*");
        } else {
            consumer.subscribe(topic, selector);
        }
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            got.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        return got;
    }

    static List<String> sortedBodies(List<MessageExt> messages) {
        List<String> bodies = new ArrayList<>();
        synchronized (messages) {
            messages.forEach(m -> bodies.add(text(m)));
        }
        Collections.sort(bodies);
        return bodies;
    }

    /** What the consumer got once it has ``expected`` messages, and a second later (nothing else may come). */
    static List<String> settle(List<MessageExt> got, int expected) throws Exception {
        Ctx.await(() -> got.size() >= expected);
        Thread.sleep(1500);
        return sortedBodies(got);
    }

    static Object tagFilter(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        for (String tag : List.of("TagA", "TagB", "TagC", "TagA", "TagB", "TagC")) {
            producer.send(new Message(topic, tag, ("tagged " + tag).getBytes(UTF_8)));
        }
        DefaultMQPushConsumer consumer = ctx.push("c");
        consumer.subscribe(topic, "TagA || TagC");
        List<MessageExt> got = Collections.synchronizedList(new ArrayList<>());
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            got.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        Ctx.await(() -> got.size() >= 4);
        Thread.sleep(1500);
        List<String> tags = new ArrayList<>();
        synchronized (got) {
            got.forEach(m -> tags.add(m.getTags()));
        }
        Collections.sort(tags);
        return Map.of("tags", tags);
    }

    static Object sqlFilter(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        for (int i = 1; i <= 6; i++) {
            Message m = new Message(topic, i % 2 == 0 ? "even" : "odd", ("sql " + i).getBytes(UTF_8));
            m.putUserProperty("a", String.valueOf(i));
            m.putUserProperty("b", i <= 4 ? "x" : "y");
            if (i == 6) {
                m.putUserProperty("a", "not a number");
            }
            producer.send(m);
        }
        // a in (3, 4) with b = 'x', and TAGS is a property too: 6 has a non-numeric a and fails the whole filter.
        List<MessageExt> got = collect(ctx.push("c"), topic,
            MessageSelector.bySql("(a > 2 AND b = 'x') OR (TAGS = 'even' AND a >= 6)"));
        return Map.of("bodies", settle(got, 2));
    }

    /** A malformed SQL92 subscription: the consumer's start asks the broker (CHECK_CLIENT_CONFIG). */
    static Object sqlInvalid(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        producer.send(new Message(topic, "t", "sql invalid".getBytes(UTF_8)));
        DefaultMQPushConsumer consumer = ctx.push("c");
        consumer.subscribe(topic, MessageSelector.bySql("a >>> 1"));
        consumer.registerMessageListener(
            (MessageListenerConcurrently) (msgs, context) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
        try {
            consumer.start();
            return Map.of("started", true);
        } catch (Exception e) {
            return Map.of("started", false, "error", Ctx.error(e));
        }
    }

    /** The queues of ``topic`` the consumer holds now (its group's retry topic has a queue too). */
    static int queuesOf(DefaultMQPushConsumer consumer, String topic) {
        return (int) consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().entrySet()
            .stream().filter(e -> e.getKey().getTopic().equals(topic) && !e.getValue().isDropped()).count();
    }

    static int lockedQueuesOf(DefaultMQPushConsumer consumer, String topic) {
        return (int) consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().entrySet()
            .stream().filter(e -> e.getKey().getTopic().equals(topic) && e.getValue().isLocked()
                && !e.getValue().isDropped()).count();
    }

    /** Each process queue of ``topic`` the consumer has, and which consumers it sees in its group. */
    static Map<String, Object> queueStates(DefaultMQPushConsumer consumer, String topic) {
        Map<String, Object> states = new TreeMap<>();
        consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().forEach((mq, pq) -> {
            if (mq.getTopic().equals(topic)) {
                states.put(String.valueOf(mq.getQueueId()), Map.of("locked", pq.isLocked(), "dropped",
                    pq.isDropped(), "tryUnlockTimes", pq.getTryUnlockTimes(), "msgCount", pq.getMsgCount().get()));
            }
        });
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("queues", states);
        out.put("clientId", consumer.getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId());
        out.put("groupSeen", consumer.getDefaultMQPushConsumerImpl().getmQClientFactory()
            .findConsumerIdList(topic, consumer.getConsumerGroup()));
        return out;
    }

    /** Two consumers of one group share a topic of four queues two and two, and get every message once. */
    static Object pushGroup(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        Compat.createTopic(producer, topic, 4);
        ctx.route(producer, topic);
        DefaultMQPushConsumer c1 = ctx.push("c");
        List<MessageExt> first = collect(c1, topic, null);
        DefaultMQPushConsumer c2 = ctx.push("c");
        List<MessageExt> second = collect(c2, topic, null);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("balanced", Ctx.await(() -> queuesOf(c1, topic) == 2 && queuesOf(c2, topic) == 2));
        for (int i = 0; i < 20; i++) {
            producer.send(new Message(topic, "g", String.format("group %02d", i).getBytes(UTF_8)));
        }
        Ctx.await(() -> first.size() + second.size() >= 20);
        Thread.sleep(1500);
        List<String> all = new ArrayList<>(sortedBodies(first));
        all.addAll(sortedBodies(second));
        Collections.sort(all);
        out.put("bodies", all);
        out.put("counts", List.of(first.size(), second.size()));
        out.put("queues", List.of(queuesOf(c1, topic), queuesOf(c2, topic)));
        return out;
    }

    /** An orderly group: one consumer, then a second joins (a rebalance moves two queues, with their broker
     * locks); every order's steps arrive in order across it. */
    static Object orderlyRebalance(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        Compat.createTopic(producer, topic, 4);
        ctx.route(producer, topic);
        Map<Integer, List<Integer>> steps = new TreeMap<>();
        List<Integer> perConsumer = Collections.synchronizedList(new ArrayList<>(List.of(0, 0)));
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        for (int index = 0; index < 2; index++) {
            DefaultMQPushConsumer consumer = ctx.push("c");
            consumer.setSuspendCurrentQueueTimeMillis(200);
            consumer.subscribe(topic, "*");
            int me = index;
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                for (MessageExt m : msgs) {
                    String[] parts = text(m).split(" ");
                    synchronized (steps) {
                        steps.computeIfAbsent(Integer.parseInt(parts[1]), k -> new ArrayList<>())
                            .add(Integer.parseInt(parts[3]));
                    }
                    perConsumer.set(me, perConsumer.get(me) + 1);
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
            consumers.add(consumer);
        }
        DefaultMQPushConsumer c1 = consumers.get(0);
        DefaultMQPushConsumer c2 = consumers.get(1);
        c1.start();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("firstLocked", Ctx.await(() -> lockedQueuesOf(c1, topic) == 4));
        sendOrders(producer, topic, 0, 5);
        Ctx.await(() -> total(steps) >= 40);
        c2.start();
        boolean rebalanced = Ctx.await(() -> lockedQueuesOf(c1, topic) == 2 && lockedQueuesOf(c2, topic) == 2);
        out.put("rebalanced", rebalanced);
        if (!rebalanced) {
            // Only on a failure (the field would differ between the servers): what each consumer held.
            out.put("notRebalanced", List.of(queueStates(c1, topic), queueStates(c2, topic)));
        }
        sendOrders(producer, topic, 5, 10);
        Ctx.await(() -> total(steps) >= 80);
        Thread.sleep(1000);
        Map<String, Object> perOrder = new TreeMap<>();
        synchronized (steps) {
            steps.forEach((order, list) -> perOrder.put(String.valueOf(order), new ArrayList<>(list)));
        }
        out.put("steps", perOrder);
        out.put("secondConsumed", perConsumer.get(1) > 0);
        out.put("lockedQueues", List.of(lockedQueuesOf(c1, topic), lockedQueuesOf(c2, topic)));
        return out;
    }

    private static int total(Map<Integer, List<Integer>> steps) {
        synchronized (steps) {
            return steps.values().stream().mapToInt(List::size).sum();
        }
    }

    private static void sendOrders(DefaultMQProducer producer, String topic, int from, int to) throws Exception {
        for (int step = from; step < to; step++) {
            for (int order = 0; order < 8; order++) {
                Message m = new Message(topic, "o", "order-" + order, ("order " + order + " step " + step).getBytes(UTF_8));
                producer.send(m, (queues, msg, arg) -> queues.get((Integer) arg % queues.size()), order);
            }
        }
    }

    static List<MessageExt> poll(DefaultLitePullConsumer consumer, int expected) {
        List<MessageExt> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + Ctx.WAIT_MS;
        while (got.size() < expected && System.currentTimeMillis() < deadline) {
            got.addAll(consumer.poll(1000));
        }
        return got;
    }

    static Object liteSubscribe(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        for (int i = 0; i < 6; i++) {
            producer.send(new Message(topic, "lite", ("lite " + i).getBytes(UTF_8)));
        }
        DefaultLitePullConsumer consumer = ctx.lite("c");
        consumer.subscribe(topic, "*");
        consumer.start();
        List<String> bodies = new ArrayList<>();
        poll(consumer, 6).forEach(m -> bodies.add(text(m)));
        Collections.sort(bodies);
        consumer.commitSync();
        List<MessageQueue> queues = ctx.route(producer, topic);
        long[] committed = new long[1];
        // commitSync updates the client's offsets; the periodic persist (every second here) takes them to the
        // broker, where committed() reads them.
        boolean persisted = Ctx.await(() -> {
            long sum = 0;
            for (MessageQueue queue : queues) {
                try {
                    Long offset = consumer.committed(queue);
                    sum += offset == null || offset < 0 ? 0 : offset;
                } catch (Exception e) {
                    return false;
                }
            }
            committed[0] = sum;
            return sum >= 6;
        });
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("bodies", bodies);
        out.put("committedSum", committed[0]);
        out.put("persisted", persisted);
        return out;
    }

    /** Assign one queue, seek into it, commit an offset of our choosing, seek to its beginning and end, and past
     * its end (the client refuses). */
    static Object liteAssignSeek(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        for (int i = 0; i < 5; i++) {
            producer.send(new Message(topic, "seek", ("seek " + i).getBytes(UTF_8)),
                (queues, msg, arg) -> queues.get(0), null);
        }
        MessageQueue queue = ctx.route(producer, topic).get(0);
        DefaultLitePullConsumer consumer = ctx.lite("c");
        consumer.start();
        consumer.assign(List.of(queue));
        Map<String, Object> out = new LinkedHashMap<>();
        // What the first pulls bring (a new group starts at 0 while the queue is in memory), taken before seeking:
        // 4.9.8's client can still deliver what a pull begun before a seek brought, if the new pull task takes the
        // seek offset first (PullTaskImpl checks isCancelled() before it takes the queue's lock).
        out.put("beforeSeek", bodies(poll(consumer, 5)));
        consumer.seek(queue, 2);
        out.put("afterSeek2", bodies(poll(consumer, 3)));
        consumer.commitSync(Map.of(queue, 4L), true);
        Long[] committed = new Long[1];
        Ctx.await(() -> {
            try {
                committed[0] = consumer.committed(queue);
                return committed[0] != null && committed[0] == 4L;
            } catch (Exception e) {
                return false;
            }
        });
        out.put("committed", committed[0]);
        consumer.seekToBegin(queue);
        out.put("afterSeekToBegin", bodies(poll(consumer, 5)));
        consumer.seekToEnd(queue);
        producer.send(new Message(topic, "seek", "seek 5".getBytes(UTF_8)), (queues, msg, arg) -> queues.get(0), null);
        out.put("afterSeekToEnd", bodies(poll(consumer, 1)));
        try {
            consumer.seek(queue, 100);
            out.put("seekPastEnd", "accepted");
        } catch (Exception e) {
            out.put("seekPastEnd", Ctx.error(e));
        }
        return out;
    }

    private static List<String> bodies(List<MessageExt> messages) {
        List<String> out = new ArrayList<>();
        messages.forEach(m -> out.add(text(m)));
        return out;
    }

    /** A push consumer takes five, shuts down (committing its offsets), five more are sent, and a new consumer of
     * the same group gets only those. */
    static Object offsetsRestart(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        for (int i = 0; i < 5; i++) {
            producer.send(new Message(topic, "r", ("before " + i).getBytes(UTF_8)));
        }
        DefaultMQPushConsumer first = ctx.push("c");
        List<MessageExt> before = collect(first, topic, null);
        List<String> firstBodies = settle(before, 5);
        first.shutdown();
        for (int i = 0; i < 5; i++) {
            producer.send(new Message(topic, "r", ("after " + i).getBytes(UTF_8)));
        }
        List<MessageExt> after = collect(ctx.push("c"), topic, null);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("first", firstBodies);
        out.put("second", settle(after, 5));
        return out;
    }
}
