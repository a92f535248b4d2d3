package io.pocketmq.javaclient;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/** Sends: sync, async, one-way, batches and a MessageQueueSelector; what each send answered and what a pull of
 * the topic finds afterwards. */
final class SendScenarios {
    private SendScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("send_sync", SendScenarios::sendSync);
        scenarios.put("send_async", SendScenarios::sendAsync);
        scenarios.put("send_oneway", SendScenarios::sendOneway);
        scenarios.put("batch", SendScenarios::batch);
        scenarios.put("selector", SendScenarios::selector);
    }

    /** Tags, keys (one and several), user properties, a non-ASCII body and property, and a body over the
     * client's compression threshold (4 KiB). */
    static List<Message> variedMessages(String topic) {
        Message plain = new Message(topic, "TagA", "key-1", "plain body".getBytes(UTF_8));
        plain.putUserProperty("color", "red");
        plain.putUserProperty("n", "7");
        Message unicode = new Message(topic, "TagB", "", "héllo wörld, 你好, 🚀".getBytes(UTF_8));
        unicode.setKeys(List.of("key-2a", "key-2b"));
        unicode.putUserProperty("städte", "Zürich 東京");
        Message big = new Message(topic, "TagC", "key-3", "compressible text ".repeat(1000).getBytes(UTF_8));
        big.putUserProperty("kind", "big");
        return List.of(plain, unicode, big);
    }

    static Object sendSync(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        List<Object> sends = new ArrayList<>();
        for (Message m : variedMessages(topic)) {
            sends.add(Ctx.sendResult(producer.send(m)));
        }
        DefaultMQPullConsumer reader = ctx.reader("r");
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sends", sends);
        out.put("messages", Ctx.describeAll(ctx.pullAll(reader, topic, "*", 3)));
        out.put("queues", ctx.route(producer, topic).size());
        return out;
    }

    static Object sendAsync(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        int count = 5;
        CountDownLatch done = new CountDownLatch(count);
        List<Object> outcomes = Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < count; i++) {
            Message m = new Message(topic, "async", "k" + i, ("async " + i).getBytes(UTF_8));
            producer.send(m, new SendCallback() {
                @Override
                public void onSuccess(SendResult result) {
                    outcomes.add(Ctx.sendResult(result));
                    done.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    outcomes.add(Ctx.error(e));
                    done.countDown();
                }
            });
        }
        boolean allAnswered = done.await(Ctx.WAIT_MS, TimeUnit.MILLISECONDS);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("allAnswered", allAnswered);
        out.put("sends", new ArrayList<>(outcomes));
        out.put("messages", Ctx.describeAll(ctx.pullAll(ctx.reader("r"), topic, "*", count)));
        return out;
    }

    static Object sendOneway(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        for (int i = 0; i < 3; i++) {
            producer.sendOneway(new Message(topic, "oneway", "k" + i, ("oneway " + i).getBytes(UTF_8)));
        }
        return Map.of("messages", Ctx.describeAll(ctx.pullAll(ctx.reader("r"), topic, "*", 3)));
    }

    /** One batch of four into one queue: one answer, four records at consecutive offsets in order. */
    static Object batch(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Message m = new Message(topic, "batch", "bk" + i, ("batch " + i + " ünïcode").getBytes(UTF_8));
            m.putUserProperty("index", String.valueOf(i));
            batch.add(m);
        }
        SendResult result = producer.send(batch);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("send", Ctx.sendResult(result));
        out.put("messages", Ctx.describeAll(ctx.pullAll(ctx.reader("r"), topic, "*", 4)));
        return out;
    }

    /** Eight messages through a selector (argument mod queue count): each queue holds its share in order. */
    static Object selector(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        List<Object> sends = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Message m = new Message(topic, "sel", "s" + i, ("selected " + i).getBytes(UTF_8));
            SendResult r = producer.send(m, (queues, msg, arg) -> queues.get((Integer) arg % queues.size()), i);
            Map<String, Object> send = Ctx.sendResult(r);
            sends.add(send);
        }
        DefaultMQPullConsumer reader = ctx.reader("r");
        Map<String, Object> perQueue = new LinkedHashMap<>();
        List<MessageQueue> queues = ctx.route(producer, topic);
        ctx.pullAll(reader, topic, "*", 8);
        for (MessageQueue queue : queues) {
            PullResult result = reader.pull(queue, "*", 0, 32, 10_000);
            List<String> bodies = new ArrayList<>();
            if (result.getMsgFoundList() != null) {
                result.getMsgFoundList().forEach(m -> bodies.add(new String(m.getBody(), UTF_8)));
            }
            perQueue.put(String.valueOf(queue.getQueueId()), bodies);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sends", sends);
        out.put("perQueue", perQueue);
        return out;
    }
}
