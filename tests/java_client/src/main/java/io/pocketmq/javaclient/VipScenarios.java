package io.pocketmq.javaclient;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/** RocketMQ's VIP channel: clients with vipChannelEnabled (the default of older 4.x clients) send to the broker's
 * listenPort - 2 (MixAll.brokerVIPChannel): sends, view by id, a group's consumer list (the rebalance), offset
 * commits and reads. Pulls and heartbeats still go to the main port. Run only when named (--scenarios): the
 * broker needs a fixed port for its VIP channel to be where the client looks. */
final class VipScenarios {
    private VipScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("vip_channel", VipScenarios::vipChannel);
    }

    static <T extends ClientConfig> T vip(T client) {
        client.setVipChannelEnabled(true);
        return client;
    }

    static Object vipChannel(Ctx ctx) throws Exception {
        DefaultMQProducer producer = vip(ctx.tune(new DefaultMQProducer(ctx.group("p"), ctx.hook)));
        producer.setSendMsgTimeout(15_000);
        producer.start();
        String topic = ctx.topic("T");
        List<String> statuses = new ArrayList<>();
        SendResult first = null;
        for (int i = 0; i < 3; i++) {
            SendResult sent = producer.send(new Message(topic, "vip", ("vip " + i).getBytes(UTF_8)));
            first = first == null ? sent : first;
            statuses.add(String.valueOf(sent.getSendStatus()));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sends", statuses);
        out.put("viewed", Ctx.body(Compat.viewByOffsetId(producer, topic, first.getOffsetMsgId()).getBody()));

        DefaultLitePullConsumer consumer = vip(ctx.lite("c"));
        consumer.subscribe(topic, "*");
        consumer.start();
        List<String> bodies = new ArrayList<>();
        ConsumeScenarios.poll(consumer, 3).forEach(m -> bodies.add(new String(m.getBody(), UTF_8)));
        Collections.sort(bodies);
        out.put("bodies", bodies);
        consumer.commitSync();
        consumer.shutdown();  // (takes its offsets to the broker: UPDATE_CONSUMER_OFFSET)

        // Another client of the group reads them from the broker (QUERY_CONSUMER_OFFSET).
        DefaultMQPullConsumer reader = vip(ctx.tune(new DefaultMQPullConsumer(ctx.group("c"), ctx.hook)));
        reader.start();
        List<MessageQueue> queues = ctx.route(producer, topic);
        long[] committed = new long[1];
        boolean persisted = Ctx.await(() -> {
            long sum = 0;
            for (MessageQueue queue : queues) {
                try {
                    long offset = reader.fetchConsumeOffset(queue, true);
                    sum += Math.max(offset, 0);
                } catch (Exception e) {
                    return false;
                }
            }
            committed[0] = sum;
            return sum >= 3;
        });
        out.put("committedSum", committed[0]);
        out.put("persisted", persisted);
        return out;
    }
}
