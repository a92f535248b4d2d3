package io.pocketmq.javaclient;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/** TransactionMQProducer: a commit, a rollback, and an unknown answer that the broker's check-back resolves. */
final class TransactionScenarios {
    private TransactionScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("transaction", TransactionScenarios::transaction);
    }

    static Object transaction(Ctx ctx) throws Exception {
        String topic = ctx.topic("T");
        List<Map<String, Object>> checks = Collections.synchronizedList(new ArrayList<>());
        TransactionMQProducer producer = ctx.tune(new TransactionMQProducer(ctx.group("p"), ctx.hook));
        producer.setSendMsgTimeout(15_000);
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return switch (new String(msg.getBody(), UTF_8)) {
                    case "commit" -> LocalTransactionState.COMMIT_MESSAGE;
                    case "rollback" -> LocalTransactionState.ROLLBACK_MESSAGE;
                    default -> LocalTransactionState.UNKNOW;
                };
            }

            /** The unknown one commits when asked. The others are asked only when their END_TRANSACTION came later
             * than a check (a busy machine): the same answer again. */
            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.add(Ctx.describe(msg));
                return "rollback".equals(new String(msg.getBody(), UTF_8))
                    ? LocalTransactionState.ROLLBACK_MESSAGE : LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        producer.start();
        // The topic (and its route) exists before the consumer starts.
        producer.send(new Message(topic, "warmup", "warmup".getBytes(UTF_8)));
        List<MessageExt> got = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer consumer = ctx.push("c");
        consumer.subscribe(topic, "tx");
        consumer.registerMessageListener(
            (org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently) (msgs, context) -> {
                got.addAll(msgs);
                return org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        consumer.start();
        List<Object> sends = new ArrayList<>();
        for (String body : List.of("commit", "rollback", "unknown")) {
            Message m = new Message(topic, "tx", "tx-" + body, body.getBytes(UTF_8));
            m.putUserProperty("outcome", body);
            sends.add(Ctx.sendResult(producer.sendMessageInTransaction(m, null)));
        }
        Ctx.await(() -> got.size() >= 2 && !checks.isEmpty());
        Thread.sleep(2500);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sends", sends);
        synchronized (got) {
            out.put("received", Ctx.describeAll(got));
        }
        out.put("checks", new ArrayList<>(checks));
        return out;
    }
}
