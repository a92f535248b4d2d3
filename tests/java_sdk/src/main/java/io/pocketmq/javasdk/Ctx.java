package io.pocketmq.javasdk;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.SessionCredentialsProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.MessageListener;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;

/**
 * One scenario's clients and names. The scenario's topic is {@code <run>-<scenario>} and its consumer groups
 * {@code <run>-<scenario>-<name>}: the test creates them, with the scenario's message type and group settings, on
 * the server before the JVM starts (a 5.x SDK creates nothing). Every client is closed when the scenario ends.
 *
 * <p>The SDK's defaults stand (TLS on, trusting any certificate), except the request timeout: 10 s instead of 3 s,
 * since a busy two-core machine can keep a server from answering the first Telemetry settings in 3 s. Given an
 * access key, every client signs its calls with that account's key pair (a server with ACL on checks them).
 */
final class Ctx implements AutoCloseable {
    static final long WAIT_MS = 60_000;

    final ClientServiceProvider provider = ClientServiceProvider.loadService();
    final String endpoint;
    final String topic;
    private final String prefix;
    private final boolean ssl;
    final String accessKey;
    private final SessionCredentialsProvider credentials;
    private final List<Closeable> clients = new ArrayList<>();

    Ctx(String endpoint, String prefix, boolean ssl) {
        this(endpoint, prefix, ssl, null, null);
    }

    Ctx(String endpoint, String prefix, boolean ssl, String accessKey, String secretKey) {
        this.endpoint = endpoint;
        this.prefix = prefix;
        this.topic = prefix;
        this.ssl = ssl;
        this.accessKey = accessKey;
        this.credentials = accessKey == null ? null : keys(accessKey, secretKey);
    }

    static SessionCredentialsProvider keys(String accessKey, String secretKey) {
        return new StaticSessionCredentialsProvider(accessKey, secretKey);
    }

    String group(String name) {
        return prefix + "-" + name;
    }

    ClientConfiguration configuration() {
        return configuration(credentials);
    }

    ClientConfiguration configuration(SessionCredentialsProvider keys) {
        var builder = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(ssl)
            .setRequestTimeout(Duration.ofSeconds(10));
        if (keys != null) {
            builder.setCredentialProvider(keys);
        }
        return builder.build();
    }

    private <T extends Closeable> T keep(T client) {
        synchronized (clients) {
            clients.add(client);
        }
        return client;
    }

    Producer producer(TransactionChecker checker) throws ClientException {
        var builder = provider.newProducerBuilder().setClientConfiguration(configuration()).setTopics(topic);
        if (checker != null) {
            builder.setTransactionChecker(checker);
        }
        return keep(builder.build());
    }

    /** A producer signing with {@code keys} that names no topic: it asks for the route at its first send. */
    Producer producerSigningWith(SessionCredentialsProvider keys) throws ClientException {
        return keep(provider.newProducerBuilder().setClientConfiguration(configuration(keys)).build());
    }

    MessageBuilder message(String body) {
        return provider.newMessageBuilder().setTopic(topic).setBody(body.getBytes(StandardCharsets.UTF_8));
    }

    SimpleConsumer simple(String group, String tags) throws ClientException {
        return keep(provider.newSimpleConsumerBuilder()
            .setClientConfiguration(configuration())
            .setConsumerGroup(group(group))
            .setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression(tags, FilterExpressionType.TAG)))
            .build());
    }

    PushConsumer push(String group, String tags, MessageListener listener) throws ClientException {
        return keep(provider.newPushConsumerBuilder()
            .setClientConfiguration(configuration())
            .setConsumerGroup(group(group))
            .setConsumptionThreadCount(2)
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression(tags, FilterExpressionType.TAG)))
            .setMessageListener(listener)
            .build());
    }

    /** Receives (acking each) until {@code count} messages came or the wait ran out, then keeps receiving for
     * {@code quietMs} more to show that nothing else comes; returns every message seen, in order. With a count of
     * 0 the quiet time starts at once (each receive long-polls for the consumer's await duration, 5 s, at least
     * once). */
    static List<Map<String, Object>> drain(SimpleConsumer consumer, int count, long quietMs) throws Exception {
        List<Map<String, Object>> seen = new ArrayList<>();
        long deadline = System.currentTimeMillis() + WAIT_MS;
        long quietUntil = count <= 0 ? System.currentTimeMillis() + quietMs : Long.MAX_VALUE;
        do {
            for (MessageView view : consumer.receive(16, Duration.ofSeconds(30))) {
                seen.add(describe(view));
                consumer.ack(view);
            }
            if (seen.size() >= count && quietUntil == Long.MAX_VALUE) {
                quietUntil = System.currentTimeMillis() + quietMs;
            }
        } while (System.currentTimeMillis() < Math.min(deadline, quietUntil));
        return seen;
    }

    static boolean await(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    /** What a consumer sees of a message; the test masks the run's names, ids and times. */
    static Map<String, Object> describe(MessageView view) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("topic", view.getTopic());
        out.put("body", body(view.getBody()));
        out.put("tag", view.getTag().orElse(null));
        out.put("keys", new ArrayList<>(new java.util.TreeSet<>(view.getKeys())));
        out.put("properties", new TreeMap<>(view.getProperties()));
        out.put("messageGroup", view.getMessageGroup().orElse(null));
        out.put("deliveryTimestamp", view.getDeliveryTimestamp().orElse(null));
        out.put("deliveryAttempt", view.getDeliveryAttempt());
        out.put("messageId", view.getMessageId().toString());
        out.put("bornTimestamp", view.getBornTimestamp());
        out.put("bornHost", view.getBornHost());
        out.put("receivedAt", System.currentTimeMillis());
        return out;
    }

    static String body(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** Closes every client at once: a push consumer's close waits for its receive in flight, a long poll of up to
     * the server's long-polling time. */
    @Override
    public void close() {
        List<Closeable> all;
        synchronized (clients) {
            all = new ArrayList<>(clients);
        }
        List<Thread> closing = new ArrayList<>();
        for (Closeable client : all) {
            Thread t = new Thread(() -> {
                try {
                    client.close();
                } catch (Exception e) {
                    // a client that could not start has nothing to close
                }
            });
            t.start();
            closing.add(t);
        }
        for (Thread t : closing) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
