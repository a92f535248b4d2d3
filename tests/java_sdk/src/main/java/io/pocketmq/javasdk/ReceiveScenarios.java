package io.pocketmq.javasdk;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/** The consumer's side: invisibility, redelivery, the dead-letter queue, a group shared by two clients. */
final class ReceiveScenarios {
    /** The shortest invisible time both servers accept on a receive as the test configures them (Apache's proxy's
     * minInvisibleTimeMillsForRecv, pocketmq's min_invisible_time_millis_for_recv; 10 s by default). */
    static final Duration INVISIBLE = Duration.ofSeconds(5);

    private ReceiveScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("invisible", ReceiveScenarios::invisible);
        scenarios.put("dlq", ReceiveScenarios::dlq);
        scenarios.put("push_group", ReceiveScenarios::pushGroup);
    }

    /** Received and not acked: back after its invisible time, attempt 2. Its invisible time changed to one
     * second: back again, attempt 3. Acked: gone. */
    static Map<String, Object> invisible(Ctx ctx) throws Exception {
        Producer producer = ctx.producer(null);
        SimpleConsumer consumer = ctx.simple("slow", "*");
        String sent = SendScenarios.id(producer.send(ctx.message("not acked").setTag("T").build()));
        List<Map<String, Object>> deliveries = new ArrayList<>();
        MessageView first = receiveOne(consumer, deliveries);
        MessageView second = receiveOne(consumer, deliveries);
        deliveries.get(1).put("changeAskedAt", System.currentTimeMillis());
        consumer.changeInvisibleDuration(second, Duration.ofSeconds(1));
        MessageView third = receiveOne(consumer, deliveries);
        consumer.ack(third);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", sent);
        out.put("invisibleMs", INVISIBLE.toMillis());
        out.put("deliveries", deliveries);
        out.put("afterAck", Ctx.drain(consumer, 0, 3000));
        out.put("sameId", first.getMessageId().equals(third.getMessageId()));
        return out;
    }

    private static MessageView receiveOne(SimpleConsumer consumer, List<Map<String, Object>> deliveries)
        throws Exception {
        long deadline = System.currentTimeMillis() + Ctx.WAIT_MS;
        while (System.currentTimeMillis() < deadline) {
            long askedAt = System.currentTimeMillis();  // the server's invisible time starts after this
            List<MessageView> views = consumer.receive(1, INVISIBLE);
            if (!views.isEmpty()) {
                Map<String, Object> described = Ctx.describe(views.get(0));
                described.put("askedAt", askedAt);
                deliveries.add(described);
                return views.get(0);
            }
        }
        throw new IllegalStateException("no delivery in " + Ctx.WAIT_MS + " ms after " + deliveries.size());
    }

    /** A push consumer whose listener always fails, in a group of at most 2 deliveries (retryMaxTimes 1): two
     * attempts, then the message is in the group's dead-letter topic, where a consumer of it finds it. */
    static Map<String, Object> dlq(Ctx ctx) throws Exception {
        List<Map<String, Object>> attempts = Collections.synchronizedList(new ArrayList<>());
        ctx.push("failing", "*", view -> {
            attempts.add(Ctx.describe(view));
            return ConsumeResult.FAILURE;
        });
        Producer producer = ctx.producer(null);
        String sent = SendScenarios.id(producer.send(ctx.message("always fails").setKeys("dead").build()));
        Ctx.await(() -> attempts.size() >= 2);
        // a third delivery would come a few seconds after the second (the first retry waits one second)
        Thread.sleep(8000);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", sent);
        synchronized (attempts) {
            out.put("attempts", new ArrayList<>(attempts));
        }
        return out;
    }

    /** Two push consumers of one group: every message consumed once, by one of them. */
    static Map<String, Object> pushGroup(Ctx ctx) throws Exception {
        List<List<String>> got = List.of(Collections.synchronizedList(new ArrayList<>()),
            Collections.synchronizedList(new ArrayList<>()));
        for (List<String> mine : got) {
            ctx.push("shared", "*", view -> {
                mine.add(Ctx.body(view.getBody()));
                try {
                    Thread.sleep(50);  // a slow listener leaves messages to the other consumer
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return ConsumeResult.SUCCESS;
            });
        }
        Producer producer = ctx.producer(null);
        int count = 20;
        for (int i = 0; i < count; i++) {
            producer.send(ctx.message("m" + i).build());
            Thread.sleep(100);
        }
        Ctx.await(() -> got.get(0).size() + got.get(1).size() >= count);
        Thread.sleep(2000);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("count", count);
        synchronized (got.get(0)) {
            out.put("first", new ArrayList<>(got.get(0)));
        }
        synchronized (got.get(1)) {
            out.put("second", new ArrayList<>(got.get(1)));
        }
        return out;
    }
}
