package io.pocketmq.bench;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * One workload of bench/e2e.py, run by RocketMQ's Java client against one name server; prints one JSON line.
 *
 * <pre>
 * java -cp ... io.pocketmq.bench.JavaClientBench NAMESRV WORKLOAD TOPIC N [THREADS|SECONDS]
 *   send     N sync sends of 128 B by THREADS threads (one producer, as an application shares one)
 *   batch    N messages in batches of 32, one thread
 *   push     a push consumer group reads TOPIC from its first offset until N distinct messages arrived
 *   latency  SECONDS of sends paced at 1,000/s, a push consumer stamps arrival (System.nanoTime in the body);
 *            the first half second is not counted
 * </pre>
 */
public final class JavaClientBench {
    private static final int BODY_BYTES = 128;
    private static final int BATCH = 32;
    private static final int WARMUP = 200;
    // The paced phase's first half second is not counted, as bench/e2e_workloads.py's latency does not count its
    // own: the JVM is still compiling the send and consume paths then (bench/README.md, "Why the Java client's
    // round trip is slower").
    private static final int LATENCY_SKIP = 500;

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String workload = args[1];
        String topic = args[2];
        int n = Integer.parseInt(args[3]);
        int extra = args.length > 4 ? Integer.parseInt(args[4]) : 1;
        String json;
        switch (workload) {
            case "send": json = send(namesrv, topic, n, extra); break;
            case "batch": json = batch(namesrv, topic, n); break;
            case "push": json = push(namesrv, topic, n); break;
            case "latency": json = latency(namesrv, topic, extra); break;
            default: throw new IllegalArgumentException("unknown workload " + workload);
        }
        System.out.println(json);
        System.exit(0);
    }

    private static DefaultMQProducer producer(String namesrv, String group) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName(group + "-" + System.nanoTime());
        producer.setSendMsgTimeout(10_000);
        producer.start();
        return producer;
    }

    private static void check(SendResult result) {
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send status " + result.getSendStatus());
        }
    }

    private static String send(String namesrv, String topic, int n, int threads) throws Exception {
        DefaultMQProducer producer = producer(namesrv, "bench-java-send");
        byte[] body = new byte[BODY_BYTES];
        new Random(1).nextBytes(body);
        for (int i = 0; i < WARMUP; i++) {
            check(producer.send(new Message(topic, body)));
        }
        AtomicInteger left = new AtomicInteger(n);
        List<Thread> workers = new ArrayList<>();
        long begin = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            Thread worker = new Thread(() -> {
                try {
                    while (left.getAndDecrement() > 0) {
                        check(producer.send(new Message(topic, body)));
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            worker.start();
            workers.add(worker);
        }
        for (Thread worker : workers) {
            worker.join();
        }
        double seconds = (System.nanoTime() - begin) / 1e9;
        producer.shutdown();
        return String.format("{\"workload\":\"send\",\"threads\":%d,\"messages\":%d,\"tps\":%d}",
            threads, n, Math.round(n / seconds));
    }

    private static String batch(String namesrv, String topic, int n) throws Exception {
        DefaultMQProducer producer = producer(namesrv, "bench-java-batch");
        byte[] body = new byte[BODY_BYTES];
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < BATCH; i++) {
            batch.add(new Message(topic, body));
        }
        for (int i = 0; i < WARMUP / BATCH; i++) {
            check(producer.send(batch));
        }
        int batches = n / BATCH;
        long begin = System.nanoTime();
        for (int i = 0; i < batches; i++) {
            check(producer.send(batch));
        }
        double seconds = (System.nanoTime() - begin) / 1e9;
        producer.shutdown();
        return String.format("{\"workload\":\"batch\",\"messages\":%d,\"tps\":%d}",
            batches * BATCH, Math.round(batches * BATCH / seconds));
    }

    private static String push(String namesrv, String topic, int n) throws Exception {
        ConcurrentHashMap<String, Boolean> seen = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("bench-java-push-" + topic);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                seen.put(m.getQueueId() + ":" + m.getQueueOffset(), Boolean.TRUE);
            }
            if (seen.size() >= n) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long begin = System.nanoTime();
        consumer.start();
        done.await(Math.max(60, n / 500), TimeUnit.SECONDS);
        double seconds = (System.nanoTime() - begin) / 1e9;
        consumer.shutdown();
        return String.format("{\"workload\":\"push\",\"expected\":%d,\"received\":%d,\"msgs_per_s\":%d}",
            n, seen.size(), Math.round(seen.size() / seconds));
    }

    private static String latency(String namesrv, String topic, int seconds) throws Exception {
        DefaultMQProducer producer = producer(namesrv, "bench-java-latency");
        byte[] body = new byte[BODY_BYTES];
        check(producer.send(new Message(topic, body)));  // creates the topic before the consumer subscribes
        int total = seconds * 1000;
        long[] latencies = new long[total];
        AtomicInteger received = new AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("bench-java-latency-" + topic);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            long now = System.nanoTime();
            for (MessageExt m : msgs) {
                ByteBuffer b = ByteBuffer.wrap(m.getBody());
                long seq = b.getLong();
                if (seq >= 0 && seq < total) {
                    latencies[(int) seq] = now - b.getLong();
                    received.incrementAndGet();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        Thread.sleep(3000);  // the consumer's first rebalance takes its queues
        long begin = System.nanoTime();
        for (int i = 0; i < total; i++) {
            long due = begin + i * 1_000_000L;
            long wait = due - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(wait);
            }
            ByteBuffer b = ByteBuffer.wrap(body);
            b.putLong(i).putLong(System.nanoTime());
            check(producer.send(new Message(topic, b.array().clone())));
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (received.get() < total && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        consumer.shutdown();
        producer.shutdown();
        long[] got = Arrays.stream(latencies, LATENCY_SKIP, total).filter(v -> v > 0).sorted().toArray();
        return String.format("{\"workload\":\"latency\",\"sent\":%d,\"received\":%d,"
            + "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f}",
            total - LATENCY_SKIP, got.length, pct(got, 0.50), pct(got, 0.99), pct(got, 0.999));
    }

    private static double pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return -1;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.floor(q * sorted.length))] / 1e6;
    }
}
