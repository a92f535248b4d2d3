package io.pocketmq.javasdk;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * bench/java_sdk.py's workload with the Java SDK: {@code --count} messages of {@code --size} bytes sent by
 * {@code --threads} threads of one producer (blocking sends), then received and acked by one SimpleConsumer
 * (batches of 32), each phase timed; prints one JSON line. The topic {@code <run>} and the group
 * {@code <run>-g} exist before it starts.
 */
public final class Bench {
    private Bench() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Map<String, String> options = Harness.options(args);
        int count = Integer.parseInt(options.getOrDefault("count", "2000"));
        int size = Integer.parseInt(options.getOrDefault("size", "1024"));
        int threads = Integer.parseInt(options.getOrDefault("threads", "4"));
        boolean ssl = Boolean.parseBoolean(options.getOrDefault("ssl", "true"));
        String run = options.get("run");
        Map<String, Object> result = new LinkedHashMap<>();
        try (Ctx ctx = new Ctx(options.get("endpoint"), run, ssl)) {
            Producer producer = ctx.producer(null);
            byte[] body = new byte[size];
            Arrays.fill(body, (byte) 'x');
            // one send before the clock starts: the route and the channel are made
            producer.send(ctx.provider.newMessageBuilder().setTopic(ctx.topic).setBody(body).build());
            SimpleConsumer consumer = ctx.simple("g", "*");
            long[] latencies = new long[count];
            AtomicInteger next = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            long start = System.nanoTime();
            List<Future<?>> senders = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                senders.add(pool.submit(() -> {
                    for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                        Message m = ctx.provider.newMessageBuilder().setTopic(ctx.topic).setBody(body).build();
                        long t0 = System.nanoTime();
                        producer.send(m);
                        latencies[i] = System.nanoTime() - t0;
                    }
                    return null;
                }));
            }
            for (Future<?> f : senders) {
                f.get();
            }
            double sendSeconds = (System.nanoTime() - start) / 1e9;
            pool.shutdown();
            Arrays.sort(latencies);
            result.put("sent", count);
            result.put("send_seconds", sendSeconds);
            result.put("send_per_s", count / sendSeconds);
            result.put("send_p50_ms", latencies[count / 2] / 1e6);
            result.put("send_p99_ms", latencies[Math.min(count - 1, count * 99 / 100)] / 1e6);
            int received = 0;
            start = System.nanoTime();
            long deadline = System.currentTimeMillis() + 300_000;
            while (received < count + 1 && System.currentTimeMillis() < deadline) {
                List<MessageView> views = consumer.receive(32, Duration.ofSeconds(30));
                List<CompletableFuture<Void>> acks = new ArrayList<>();
                for (MessageView view : views) {
                    acks.add(consumer.ackAsync(view));
                }
                for (CompletableFuture<Void> ack : acks) {
                    ack.get();
                }
                received += views.size();
            }
            double receiveSeconds = (System.nanoTime() - start) / 1e9;
            result.put("received", received);
            result.put("receive_seconds", receiveSeconds);
            result.put("receive_per_s", received / receiveSeconds);
        }
        out.println(Json.of(result));
        out.flush();
        System.exit(0);
    }
}
