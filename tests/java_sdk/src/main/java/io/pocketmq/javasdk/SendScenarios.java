package io.pocketmq.javasdk;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/** The producer's side: each message type sent, and what consumers then see of it. */
final class SendScenarios {
    private SendScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("normal", SendScenarios::normal);
        scenarios.put("fifo", SendScenarios::fifo);
        scenarios.put("delay", SendScenarios::delay);
        scenarios.put("transaction", SendScenarios::transaction);
        scenarios.put("check_back", SendScenarios::checkBack);
        scenarios.put("recall", SendScenarios::recall);
    }

    /** Tags, keys and properties reach a group taking every tag, and a tag filter picks its messages only. */
    static Map<String, Object> normal(Ctx ctx) throws Exception {
        Producer producer = ctx.producer(null);
        SimpleConsumer all = ctx.simple("all", "*");
        SimpleConsumer tagB = ctx.simple("tagb", "TagB");
        List<String> ids = new ArrayList<>();
        ids.add(id(producer.send(ctx.message("normal-0").setTag("TagA").setKeys("k1", "k2")
            .addProperty("color", "red").addProperty("n", "42").build())));
        ids.add(id(producer.send(ctx.message("normal-1").setTag("TagB").setKeys("k3").build())));
        ids.add(id(producer.send(ctx.message("normal-2").build())));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", ids);
        out.put("all", Ctx.drain(all, 3, 0));
        out.put("tagB", Ctx.drain(tagB, 1, 2000));
        return out;
    }

    /** Two message groups interleaved; an orderly push consumer gets each group's messages in the order sent. */
    static Map<String, Object> fifo(Ctx ctx) throws Exception {
        List<Map<String, Object>> seen = Collections.synchronizedList(new ArrayList<>());
        ctx.push("ordered", "*", view -> {
            seen.add(Ctx.describe(view));
            return ConsumeResult.SUCCESS;
        });
        Producer producer = ctx.producer(null);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            for (String group : List.of("ga", "gb")) {
                ids.add(id(producer.send(ctx.message(group + "-" + i).setMessageGroup(group).build())));
            }
        }
        Ctx.await(() -> seen.size() >= ids.size());
        Thread.sleep(1000);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", ids);
        synchronized (seen) {
            out.put("seen", new ArrayList<>(seen));
        }
        return out;
    }

    /** A message delivered at a time three seconds on is not received before that time. */
    static Map<String, Object> delay(Ctx ctx) throws Exception {
        Producer producer = ctx.producer(null);
        SimpleConsumer consumer = ctx.simple("delayed", "*");
        long deliverAt = System.currentTimeMillis() + 3000;
        String sent = id(producer.send(ctx.message("later").setDeliveryTimestamp(deliverAt).build()));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", sent);
        out.put("deliverAt", deliverAt);
        out.put("seen", Ctx.drain(consumer, 1, 0));
        return out;
    }

    /** Two delay messages due in ten seconds, one recalled by its receipt's handle: only the other is received,
     * and its handle is refused once it was delivered. (Ten: the recall must come before the time, and a loaded
     * machine running every scenario at once once took more than three seconds to send and recall.) */
    static Map<String, Object> recall(Ctx ctx) throws Exception {
        Producer producer = ctx.producer(null);
        SimpleConsumer consumer = ctx.simple("recalled", "*");
        long deliverAt = System.currentTimeMillis() + 10_000;
        SendReceipt recalled = producer.send(ctx.message("recall-me").setDeliveryTimestamp(deliverAt).build());
        SendReceipt kept = producer.send(ctx.message("keep-me").setDeliveryTimestamp(deliverAt).build());
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", id(recalled));
        out.put("deliverAt", deliverAt);
        out.put("handles", List.of(recalled.getRecallHandle(), kept.getRecallHandle()));
        out.put("recalledId", producer.recallMessage(ctx.topic, recalled.getRecallHandle()).getMessageId().toString());
        out.put("seen", Ctx.drain(consumer, 1, 2000));
        try {
            producer.recallMessage(ctx.topic, kept.getRecallHandle());
            out.put("afterDelivery", "recalled");
        } catch (ClientException e) {
            out.put("afterDelivery", Harness.error(e));
        }
        return out;
    }

    /** One transaction committed, one rolled back: only the committed message reaches a consumer. */
    static Map<String, Object> transaction(Ctx ctx) throws Exception {
        // A check that comes before the producer's own commit or rollback (a busy machine can delay those past the
        // broker's transaction timeout) leaves the decision to the producer.
        Producer producer = ctx.producer(view -> TransactionResolution.UNKNOWN);
        SimpleConsumer consumer = ctx.simple("txn", "*");
        Transaction commit = producer.beginTransaction();
        String committed = id(producer.send(ctx.message("tx-commit").build(), commit));
        commit.commit();
        Transaction rollback = producer.beginTransaction();
        String rolledBack = id(producer.send(ctx.message("tx-rollback").build(), rollback));
        rollback.rollback();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("committed", committed);
        out.put("rolledBack", rolledBack);
        out.put("seen", Ctx.drain(consumer, 1, 5000));
        return out;
    }

    /** Two half messages left open: the server asks the live producer, whose checker commits one and rolls
     * back the other. */
    static Map<String, Object> checkBack(Ctx ctx) throws Exception {
        Checker checker = new Checker();
        Producer producer = ctx.producer(checker);
        SimpleConsumer consumer = ctx.simple("checked", "*");
        String toCommit = id(producer.send(ctx.message("check-commit").build(), producer.beginTransaction()));
        String toRollBack = id(producer.send(ctx.message("check-rollback").build(), producer.beginTransaction()));
        boolean asked = Ctx.await(() -> checker.checked().size() >= 2);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("toCommit", toCommit);
        out.put("toRollBack", toRollBack);
        out.put("asked", asked);
        out.put("seen", Ctx.drain(consumer, 1, 5000));
        out.put("checked", checker.checked());
        return out;
    }

    static String id(SendReceipt receipt) {
        return receipt.getMessageId().toString();
    }

    /** Commits messages whose body says "commit", rolls back the others, and remembers what it was asked. */
    static final class Checker implements TransactionChecker {
        private final Map<String, String> asked = new ConcurrentHashMap<>();

        @Override
        public TransactionResolution check(MessageView view) {
            String body = Ctx.body(view.getBody());
            asked.put(view.getMessageId().toString(), body);
            return body.endsWith("commit") ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
        }

        List<String> checked() {
            return new ArrayList<>(new TreeSet<>(asked.values()));
        }
    }
}
