package io.pocketmq.javaclient;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;

/** One scenario's clients and names: every topic and group starts with the run id and the scenario's name, every
 * client gets an instance name of its own (two consumers of a group in one JVM are two clients), and every client
 * is shut down when the scenario ends. Intervals are test-sized: route polls, heartbeats and offset commits every
 * second (the rebalance interval is the system property rocketmq.client.rebalance.waitInterval). */
final class Ctx implements AutoCloseable {
    static final long WAIT_MS = 60_000;
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    final String namesrv;
    final String prefix;
    final RPCHook hook;
    private final List<Object> clients = new ArrayList<>();

    Ctx(String namesrv, String prefix, RPCHook hook) {
        this.namesrv = namesrv;
        this.prefix = prefix;
        this.hook = hook;
    }

    String topic(String name) {
        return prefix + "-" + name;
    }

    String group(String name) {
        return prefix + "-" + name;
    }

    <T extends ClientConfig> T tune(T client) {
        client.setNamesrvAddr(namesrv);
        client.setInstanceName(prefix + "-" + INSTANCES.incrementAndGet());
        client.setPollNameServerInterval(1000);
        client.setHeartbeatBrokerInterval(1000);
        client.setPersistConsumerOffsetInterval(1000);
        // Name-server and broker calls may wait for a CPU on a busy two-core machine (the default is 3 s).
        client.setMqClientApiTimeout(15_000);
        synchronized (clients) {
            clients.add(client);
        }
        return client;
    }

    DefaultMQProducer producer(String group) throws MQClientException {
        DefaultMQProducer producer = tune(new DefaultMQProducer(group(group), hook));
        producer.setSendMsgTimeout(15_000);
        producer.start();
        return producer;
    }

    /** Not started: the caller subscribes and registers a listener first. Reads from the first offset. */
    DefaultMQPushConsumer push(String group) {
        DefaultMQPushConsumer consumer =
            tune(new DefaultMQPushConsumer(group(group), hook, new AllocateMessageQueueAveragely()));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(2);
        consumer.setConsumeThreadMax(4);
        return consumer;
    }

    /** Not started. */
    DefaultLitePullConsumer lite(String group) {
        DefaultLitePullConsumer consumer = tune(new DefaultLitePullConsumer(group(group), hook));
        consumer.setAutoCommit(false);
        consumer.setPollTimeoutMillis(1000);
        return consumer;
    }

    DefaultMQPullConsumer reader(String group) throws MQClientException {
        DefaultMQPullConsumer consumer = tune(new DefaultMQPullConsumer(group(group), hook));
        consumer.start();
        return consumer;
    }

    /** The topic's queues once the name server has its route (a new topic reaches it with the broker's next
     * registration). */
    List<MessageQueue> route(DefaultMQProducer producer, String topic) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (true) {
            try {
                List<MessageQueue> queues = producer.fetchPublishMessageQueues(topic);
                if (!queues.isEmpty()) {
                    queues.sort(Comparator.comparingInt(MessageQueue::getQueueId));
                    return queues;
                }
            } catch (MQClientException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
            }
            Thread.sleep(100);
        }
    }

    /** Every message of ``topic`` from offset 0 of each queue, once at least ``expected`` are there (or the wait
     * ran out), ordered by queue and offset. */
    List<MessageExt> pullAll(DefaultMQPullConsumer reader, String topic, String expression, int expected)
        throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (true) {
            List<MessageExt> found = new ArrayList<>();
            List<MessageQueue> queues = new ArrayList<>();
            try {
                queues.addAll(reader.fetchSubscribeMessageQueues(topic));
            } catch (MQClientException e) {
                // no route yet
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
            }
            queues.sort(Comparator.comparingInt(MessageQueue::getQueueId));
            for (MessageQueue queue : queues) {
                long offset = 0;
                while (true) {
                    PullResult result = reader.pull(queue, expression, offset, 32, 10_000);
                    if (result.getPullStatus() == PullStatus.FOUND) {
                        found.addAll(result.getMsgFoundList());
                    }
                    if (result.getPullStatus() == PullStatus.OFFSET_ILLEGAL || result.getNextBeginOffset() <= offset) {
                        break;
                    }
                    offset = result.getNextBeginOffset();
                }
            }
            if (found.size() >= expected || System.currentTimeMillis() > deadline) {
                return found;
            }
            Thread.sleep(200);
        }
    }

    static boolean await(BooleanSupplier condition) throws InterruptedException {
        return await(condition, WAIT_MS);
    }

    static boolean await(BooleanSupplier condition, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    static Map<String, Object> describe(MessageExt m) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("topic", m.getTopic());
        out.put("tags", m.getTags());
        out.put("keys", m.getKeys());
        out.put("body", body(m.getBody()));
        out.put("props", new TreeMap<>(m.getProperties()));
        out.put("reconsumeTimes", m.getReconsumeTimes());
        out.put("sysFlag", m.getSysFlag());
        out.put("flag", m.getFlag());
        out.put("queueId", m.getQueueId());
        out.put("queueOffset", m.getQueueOffset());
        out.put("msgId", m.getMsgId());
        out.put("bornTimestamp", m.getBornTimestamp());
        out.put("storeTimestamp", m.getStoreTimestamp());
        return out;
    }

    static List<Object> describeAll(Collection<MessageExt> messages) {
        List<Object> out = new ArrayList<>();
        for (MessageExt m : messages) {
            out.add(describe(m));
        }
        return out;
    }

    /** Short bodies as text, long ones as their length and SHA-256. */
    static String body(byte[] body) {
        if (body == null) {
            return null;
        }
        if (body.length <= 256) {
            return new String(body, StandardCharsets.UTF_8);
        }
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(body);
            return "len=" + body.length + " sha256=" + HexFormat.of().formatHex(digest);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static Map<String, Object> sendResult(SendResult r) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("status", String.valueOf(r.getSendStatus()));
        out.put("msgId", r.getMsgId());
        out.put("offsetMsgId", r.getOffsetMsgId());
        out.put("queueId", r.getMessageQueue() == null ? null : r.getMessageQueue().getQueueId());
        out.put("queueOffset", r.getQueueOffset());
        if (r instanceof TransactionSendResult t) {
            out.put("localTransactionState", String.valueOf(t.getLocalTransactionState()));
        }
        return out;
    }

    /** An exception as the scenarios compare it: its class, the response code it carries and its message. */
    static Map<String, Object> error(Throwable t) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("type", t.getClass().getSimpleName());
        if (t instanceof MQClientException e) {
            out.put("responseCode", e.getResponseCode());
            out.put("message", e.getErrorMessage());
        } else if (t instanceof MQBrokerException e) {
            out.put("responseCode", e.getResponseCode());
            out.put("message", e.getErrorMessage());
        } else {
            out.put("message", t.getMessage());
        }
        if (t.getCause() != null && t.getCause() != t) {
            out.put("cause", error(t.getCause()));
        }
        return out;
    }

    @Override
    public void close() {
        List<Object> all;
        synchronized (clients) {
            all = new ArrayList<>(clients);
        }
        for (int i = all.size() - 1; i >= 0; i--) {
            try {
                Object c = all.get(i);
                if (c instanceof DefaultMQProducer p) {
                    p.shutdown();
                } else if (c instanceof DefaultMQPushConsumer p) {
                    p.shutdown();
                } else if (c instanceof DefaultLitePullConsumer p) {
                    p.shutdown();
                } else if (c instanceof DefaultMQPullConsumer p) {
                    p.shutdown();
                }
            } catch (RuntimeException e) {
                // a client that never started
            }
        }
    }
}
