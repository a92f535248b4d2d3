package io.pocketmq.javaclient;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.store.LocalFileOffsetStore;
import org.apache.rocketmq.client.consumer.store.OffsetSerializeWrapper;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** A BROADCASTING group's local offsets file: what the client writes, and that it resumes from the form
 * pocketmq's client writes (a MessageQueue object as each key, on one line). */
final class BroadcastScenarios {
    private BroadcastScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("broadcast_offsets_file", BroadcastScenarios::offsetsFile);
    }

    static DefaultMQPushConsumer broadcasting(Ctx ctx, String instance) throws Exception {
        DefaultMQPushConsumer consumer = ctx.push("b");
        Compat.broadcasting(consumer);
        consumer.setInstanceName(instance);  // (the file is found again by ip@instance)
        return consumer;
    }

    static Object offsetsFile(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("B");
        for (int i = 0; i < 4; i++) {
            producer.send(new Message(topic, "b", ("first " + i).getBytes(UTF_8)));
        }
        String instance = ctx.prefix + "-bcast";
        DefaultMQPushConsumer first = broadcasting(ctx, instance);
        List<String> firstBodies = ConsumeScenarios.settle(ConsumeScenarios.collect(first, topic, null), 4);
        first.shutdown();
        Path file = Paths.get(LocalFileOffsetStore.LOCAL_OFFSET_STORE_DIR, first.buildMQClientId(),
            ctx.group("b"), "offsets.json");
        String written = Files.readString(file, UTF_8);

        // The same table as pocketmq's client writes it; the backup goes, so that a file Java cannot read would
        // start the consumer over from the first offset instead.
        OffsetSerializeWrapper table = OffsetSerializeWrapper.fromJson(written, OffsetSerializeWrapper.class);
        List<String> entries = new ArrayList<>();
        table.getOffsetTable().forEach((MessageQueue mq, AtomicLong offset) ->
            entries.add(String.format("{\"brokerName\":\"%s\",\"queueId\":%d,\"topic\":\"%s\"}:%d",
                mq.getBrokerName(), mq.getQueueId(), mq.getTopic(), offset.get())));
        String pocketmqForm = "{\"offsetTable\":{" + String.join(",", entries) + "}}";
        Files.writeString(file, pocketmqForm, UTF_8);
        Files.deleteIfExists(Paths.get(file + ".bak"));

        for (int i = 0; i < 2; i++) {
            producer.send(new Message(topic, "b", ("second " + i).getBytes(UTF_8)));
        }
        List<MessageExt> again = ConsumeScenarios.collect(broadcasting(ctx, instance), topic, null);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("first", firstBodies);
        out.put("written", written);
        out.put("pocketmqForm", pocketmqForm);
        out.put("second", ConsumeScenarios.settle(again, 2));
        return out;
    }
}
