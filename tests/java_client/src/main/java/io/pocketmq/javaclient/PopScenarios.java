package io.pocketmq.javaclient;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** RocketMQ 5's remoting push consumer in pop mode: the group's mode set to POP on the broker
 * (SET_MESSAGE_REQUEST_MODE, what mqadmin setConsumeMode sends), clientRebalance off, so the client asks the
 * broker for its queues (QUERY_ASSIGNMENT), pops them, acks what it consumed and changes the invisible time of
 * what it asks to reconsume. 5.x only: the 4.9.8 client has none of it (the calls are made by reflection so one
 * source tree builds against both). */
final class PopScenarios {
    private PopScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("pop_push", PopScenarios::popPush);
    }

    /** Whether this client version has the pop mode (scenarios are left out of a 4.9.8 run). */
    static boolean supported() {
        try {
            DefaultMQPushConsumer.class.getMethod("setClientRebalance", boolean.class);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setPopMode(DefaultMQProducer producer, String topic, String group, List<MessageQueue> queues)
        throws Exception {
        MQClientInstance factory = producer.getDefaultMQProducerImpl().getMqClientFactory();
        MQClientAPIImpl api = factory.getMQClientAPIImpl();
        factory.updateTopicRouteInfoFromNameServer(topic);
        Class modeClass = Class.forName("org.apache.rocketmq.common.message.MessageRequestMode");
        Object pop = Enum.valueOf(modeClass, "POP");
        Method set = MQClientAPIImpl.class.getMethod("setMessageRequestMode",
            String.class, String.class, String.class, modeClass, int.class, long.class);
        Set<String> brokers = new TreeSet<>();
        queues.forEach(q -> brokers.add(q.getBrokerName()));
        for (String broker : brokers) {
            String addr = factory.findBrokerAddressInPublish(broker);
            if (addr == null) {
                throw new IllegalStateException("no address of broker " + broker + " in the route of " + topic);
            }
            // popShareQueueNum -1: every client pops every queue of the broker (queue id -1).
            set.invoke(api, addr, topic, group, pop, -1, 15_000L);
        }
    }

    /** The invisible time the client asks for (CHANGE_MESSAGE_INVISIBLETIME) when a popped message is first
     * reconsumed later: its pop delay level 0, 10 s in the client's table (popDelayLevel, seconds, which has no
     * setter), 1 s here, as the other intervals are test-sized. The message still comes back only by that change. */
    static void shortenFirstPopDelay(DefaultMQPushConsumer consumer) throws Exception {
        Field levels = consumer.getDefaultMQPushConsumerImpl().getClass().getDeclaredField("popDelayLevel");
        levels.setAccessible(true);
        ((int[]) levels.get(consumer.getDefaultMQPushConsumerImpl()))[0] = 1;
    }

    static Object popPush(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        String group = ctx.group("c");
        Compat.createTopic(producer, topic, 4);
        setPopMode(producer, topic, group, ctx.route(producer, topic));
        for (int i = 0; i < 8; i++) {
            Message m = new Message(topic, i == 0 ? "again" : "once", ("pop " + i).getBytes(UTF_8));
            m.setKeys("pop-key-" + i);
            producer.send(m);
        }
        DefaultMQPushConsumer consumer = ctx.push("c");
        DefaultMQPushConsumer.class.getMethod("setClientRebalance", boolean.class).invoke(consumer, false);
        // The first delivery of each message is acked at once; an ack that did not take would bring it back
        // after this.
        DefaultMQPushConsumer.class.getMethod("setPopInvisibleTime", long.class).invoke(consumer, 5000L);
        shortenFirstPopDelay(consumer);
        consumer.subscribe(topic, "*");
        List<Map<String, Object>> got = Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean refused = new AtomicBoolean();
        Map<String, Long> receivedAt = new ConcurrentHashMap<>();
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                Map<String, Object> d = new LinkedHashMap<>();
                d.put("body", ConsumeScenarios.text(m));
                d.put("tags", m.getTags());
                d.put("keys", m.getKeys());
                d.put("reconsumeTimes", m.getReconsumeTimes());
                d.put("popped", m.getProperty("POP_CK") != null);
                d.put("topic", m.getTopic());
                got.add(d);
                receivedAt.putIfAbsent(ConsumeScenarios.text(m), System.currentTimeMillis());
            }
            // The "again" message once: the client changes its invisible time and it comes back.
            if (msgs.size() == 1 && "again".equals(msgs.get(0).getTags()) && refused.compareAndSet(false, true)) {
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.setConsumeMessageBatchMaxSize(1);
        consumer.start();
        Ctx.await(() -> got.size() >= 9, 90_000);
        Thread.sleep(6000);  // beyond the invisible time (5 s, the client's minimum): nothing acked may come back
        List<Map<String, Object>> deliveries;
        synchronized (got) {
            deliveries = new ArrayList<>(got);
        }
        deliveries.sort((a, b) -> {
            int c = ((String) a.get("body")).compareTo((String) b.get("body"));
            return c != 0 ? c : Integer.compare((Integer) a.get("reconsumeTimes"), (Integer) b.get("reconsumeTimes"));
        });
        return Map.of("deliveries", deliveries);
    }
}
