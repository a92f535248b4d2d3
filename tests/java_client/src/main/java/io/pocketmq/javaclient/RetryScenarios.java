package io.pocketmq.javaclient;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** RECONSUME_LATER and its retries (reconsumeTimes, the delay of level 1), the dead-letter queue after
 * maxReconsumeTimes, and delayed messages. */
final class RetryScenarios {
    private RetryScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("reconsume_later", RetryScenarios::reconsumeLater);
        scenarios.put("dlq", RetryScenarios::dlq);
        scenarios.put("delay_level", RetryScenarios::delayLevel);
    }

    /** One delivery as seen by the listener, with the time it arrived. */
    static Map<String, Object> delivery(MessageExt m) {
        Map<String, Object> d = Ctx.describe(m);
        d.put("receivedAt", System.currentTimeMillis());
        return d;
    }

    /** A listener that asks for ``retries`` redeliveries at delay level 1 (1 s), then takes the message. */
    static List<Map<String, Object>> retrying(DefaultMQPushConsumer consumer, String topic, int retries)
        throws Exception {
        List<Map<String, Object>> deliveries = Collections.synchronizedList(new ArrayList<>());
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            MessageExt m = msgs.get(0);
            deliveries.add(delivery(m));
            if (m.getReconsumeTimes() < retries) {
                context.setDelayLevelWhenNextConsume(1);
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        return deliveries;
    }

    static Object reconsumeLater(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        SendResult sent = producer.send(new Message(topic, "retry", "retry-key", "try again".getBytes(UTF_8)));
        List<Map<String, Object>> deliveries = retrying(ctx.push("c"), topic, 2);
        Ctx.await(() -> deliveries.size() >= 3);
        Thread.sleep(1500);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("send", Ctx.sendResult(sent));
        out.put("deliveries", new ArrayList<>(deliveries));
        return out;
    }

    /** maxReconsumeTimes 1: two deliveries, then the message is in %DLQ%group, found by its key; the DLQ topic
     * is write-only, so pulling it is refused. */
    static Object dlq(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        SendResult sent = producer.send(new Message(topic, "dead", "dead-key", "never consumed".getBytes(UTF_8)));
        DefaultMQPushConsumer consumer = ctx.push("c");
        consumer.setMaxReconsumeTimes(1);
        List<Map<String, Object>> deliveries = retrying(consumer, topic, Integer.MAX_VALUE);
        Ctx.await(() -> deliveries.size() >= 2);
        String dlqTopic = "%DLQ%" + ctx.group("c");
        List<MessageExt> dead = new ArrayList<>();
        Ctx.await(() -> {
            try {
                QueryResult result = producer.queryMessage(dlqTopic, "dead-key", 32, 0, Long.MAX_VALUE);
                dead.clear();
                dead.addAll(result.getMessageList());
                return !dead.isEmpty();
            } catch (Exception e) {
                return false;
            }
        });
        Thread.sleep(1500);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("send", Ctx.sendResult(sent));
        out.put("deliveries", new ArrayList<>(deliveries));
        out.put("dlq", Ctx.describeAll(dead));
        DefaultMQPullConsumer reader = ctx.reader("r");
        try {
            List<Object> pulls = new ArrayList<>();
            for (MessageQueue queue : reader.fetchSubscribeMessageQueues(dlqTopic)) {
                PullResult result = reader.pull(queue, "*", 0, 32, 10_000);
                pulls.add(String.valueOf(result.getPullStatus()));
            }
            out.put("dlqPull", pulls);
        } catch (Exception e) {
            out.put("dlqPull", Ctx.error(e));
        }
        return out;
    }

    static Object delayLevel(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        producer.send(new Message(topic, "warmup", "route first".getBytes(UTF_8)));
        List<Map<String, Object>> deliveries = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer consumer = ctx.push("c");
        consumer.subscribe(topic, "delayed");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            msgs.forEach(m -> deliveries.add(delivery(m)));
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        Message m = new Message(topic, "delayed", "delay-key", "one second later".getBytes(UTF_8));
        m.setDelayTimeLevel(1);
        long sentAt = System.currentTimeMillis();
        SendResult sent = producer.send(m);
        Ctx.await(() -> !deliveries.isEmpty());
        Thread.sleep(1000);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("send", Ctx.sendResult(sent));
        out.put("sentAt", sentAt);
        out.put("deliveries", new ArrayList<>(deliveries));
        return out;
    }
}
