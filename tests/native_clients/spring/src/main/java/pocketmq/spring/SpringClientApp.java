package pocketmq.spring;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.spring.annotation.ConsumeMode;
import org.apache.rocketmq.spring.annotation.RocketMQMessageListener;
import org.apache.rocketmq.spring.annotation.RocketMQTransactionListener;
import org.apache.rocketmq.spring.core.RocketMQListener;
import org.apache.rocketmq.spring.core.RocketMQLocalTransactionListener;
import org.apache.rocketmq.spring.core.RocketMQLocalTransactionState;
import org.apache.rocketmq.spring.core.RocketMQReplyListener;
import org.apache.rocketmq.spring.core.RocketMQTemplate;
import org.apache.rocketmq.spring.support.RocketMQHeaders;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.stereotype.Component;

/**
 * A Spring Boot application on rocketmq-spring-boot-starter, configured by rocketmq.name-server and
 * rocketmq.producer.group only, driven by test_spring_client.py against pocketmq.
 *
 * <p>It sends with RocketMQTemplate (syncSend, asyncSend, syncSendOrderly, sendMessageInTransaction,
 * sendAndReceive), listens with @RocketMQMessageListener (concurrent, orderly, a reply listener), prints one JSON
 * line per event on stdout, and exits when its listeners have had what it was told to expect (demo.expect-*), or
 * at demo.timeout seconds with {"event": "done", "timed_out": true}. Spring's own log goes to stderr.
 */
@SpringBootApplication
public class SpringClientApp {
    static final String[] TAGS = {"TagA", "TagB", "TagC"};
    static final ObjectMapper JSON = new ObjectMapper();

    static synchronized void emit(String event, Map<String, Object> fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", event);
        line.putAll(fields);
        line.put("ts", System.currentTimeMillis());
        try {
            System.out.println(JSON.writeValueAsString(line));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        System.out.flush();
    }

    /** The bodies of cpp_client.py and the other drivers: 5 KiB ones (sent compressed), some not ASCII. */
    static String bodyFor(String prefix, int i) {
        if (i % 10 == 3) {
            return prefix + "-" + i + " big " + "0123456789abcdef".repeat(320);
        }
        if (i % 10 == 7) {
            return prefix + "-" + i + " grüße, 你好, привет, 🚀";
        }
        return prefix + "-" + i;
    }

    static String keysFor(String prefix, int i) {
        return i % 5 == 0 ? prefix + "-" + i + " " + prefix + "-five" : prefix + "-" + i;
    }

    static Map<String, Object> describe(String listener, MessageExt m) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("listener", listener);
        f.put("topic", m.getTopic());
        f.put("tags", m.getTags());
        f.put("keys", m.getKeys());
        f.put("body", new String(m.getBody(), StandardCharsets.UTF_8));
        f.put("msg_id", m.getMsgId());
        f.put("queue_id", m.getQueueId());
        f.put("queue_offset", m.getQueueOffset());
        f.put("reconsume_times", m.getReconsumeTimes());
        f.put("props", m.getProperties());
        return f;
    }

    static Map<String, Object> result(Map<String, Object> f, SendResult r) {
        f.put("status", r.getSendStatus().name());
        f.put("msg_id", r.getMsgId());
        f.put("offset_msg_id", r.getOffsetMsgId());
        f.put("offset", r.getQueueOffset());
        f.put("queue_id", r.getMessageQueue().getQueueId());
        return f;
    }

    /** What the listeners have had: distinct keys per listener. */
    @Component
    static class Received {
        final Map<String, Set<String>> keys = new ConcurrentHashMap<>();

        void add(String listener, MessageExt m) {
            keys.computeIfAbsent(listener, k -> ConcurrentHashMap.newKeySet())
                .add(m.getKeys() != null ? m.getKeys() : m.getMsgId());
        }

        int count(String listener) {
            Set<String> seen = keys.get(listener);
            return seen == null ? 0 : seen.size();
        }
    }

    @Component
    @RocketMQMessageListener(topic = "${demo.topic}", consumerGroup = "${demo.group}Concurrent")
    static class ConcurrentListener implements RocketMQListener<MessageExt> {
        final Received received;

        ConcurrentListener(Received received) {
            this.received = received;
        }

        @Override
        public void onMessage(MessageExt m) {
            emit("message", describe("concurrent", m));
            received.add("concurrent", m);
        }
    }

    @Component
    @RocketMQMessageListener(topic = "${demo.orderly-topic}", consumerGroup = "${demo.group}Orderly",
        consumeMode = ConsumeMode.ORDERLY)
    static class OrderlyListener implements RocketMQListener<MessageExt> {
        final Received received;

        OrderlyListener(Received received) {
            this.received = received;
        }

        @Override
        public void onMessage(MessageExt m) {
            emit("message", describe("orderly", m));
            received.add("orderly", m);
        }
    }

    @Component
    @RocketMQMessageListener(topic = "${demo.txn-topic}", consumerGroup = "${demo.group}Txn")
    static class TransactionTopicListener implements RocketMQListener<MessageExt> {
        final Received received;

        TransactionTopicListener(Received received) {
            this.received = received;
        }

        @Override
        public void onMessage(MessageExt m) {
            emit("message", describe("txn", m));
            received.add("txn", m);
        }
    }

    @Component
    @RocketMQMessageListener(topic = "${demo.reply-topic}", consumerGroup = "${demo.group}Reply")
    static class ReplyListener implements RocketMQReplyListener<String, String> {
        @Override
        public String onMessage(String request) {
            emit("request", Map.of("body", request));
            return "pong " + request;
        }
    }

    /**
     * The local transaction's outcome is the message's "outcome" property. A check-back (the broker asks about a
     * half message that got no answer within transactionTimeOut) answers the same, and commits an UNKNOWN one.
     */
    @RocketMQTransactionListener
    static class Transactions implements RocketMQLocalTransactionListener {
        @Override
        public RocketMQLocalTransactionState executeLocalTransaction(Message msg, Object arg) {
            return RocketMQLocalTransactionState.valueOf((String) msg.getHeaders().get("outcome"));
        }

        @Override
        public RocketMQLocalTransactionState checkLocalTransaction(Message msg) {
            String outcome = String.valueOf(msg.getHeaders().get("outcome"));
            emit("check", Map.of("idx", String.valueOf(msg.getHeaders().get("idx")), "outcome", outcome,
                "transaction_id", String.valueOf(msg.getHeaders().get(RocketMQHeaders.PREFIX
                    + RocketMQHeaders.TRANSACTION_ID))));
            return "ROLLBACK".equals(outcome) ? RocketMQLocalTransactionState.ROLLBACK
                : RocketMQLocalTransactionState.COMMIT;
        }
    }

    @Component
    static class Scenario implements CommandLineRunner {
        final RocketMQTemplate template;
        final Received received;
        @Value("${demo.topic}") String topic;
        @Value("${demo.orderly-topic}") String orderlyTopic;
        @Value("${demo.txn-topic}") String txnTopic;
        @Value("${demo.reply-topic}") String replyTopic;
        @Value("${demo.prefix:spring}") String prefix;
        @Value("${demo.count:10}") int count;
        @Value("${demo.expect-concurrent:0}") int expectConcurrent;
        @Value("${demo.expect-orderly:0}") int expectOrderly;
        @Value("${demo.expect-txn:0}") int expectTxn;
        @Value("${demo.replies:3}") int replies;
        @Value("${demo.linger:1}") double linger;

        Scenario(RocketMQTemplate template, Received received) {
            this.template = template;
            this.received = received;
        }

        Message<String> message(String pre, int i, String tags) {
            MessageBuilder<String> b = MessageBuilder.withPayload(bodyFor(pre, i))
                .setHeader(RocketMQHeaders.KEYS, keysFor(pre, i))
                .setHeader("idx", String.valueOf(i));
            if (i % 10 == 7) {
                b.setHeader("city", "Zürich");
            }
            return b.build();
        }

        Map<String, Object> sent(String mode, String pre, int i) {
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("mode", mode);
            f.put("i", i);
            f.put("tags", TAGS[i % 3]);
            f.put("keys", keysFor(pre, i));
            f.put("body", bodyFor(pre, i));
            return f;
        }

        @Override
        public void run(String... args) throws Exception {
            emit("started", Map.of("client", "spring"));
            String pre = prefix + "s";
            for (int i = 0; i < count; i++) {
                SendResult r = template.syncSend(topic + ":" + TAGS[i % 3], message(pre, i, TAGS[i % 3]));
                emit("sent", result(sent("sync", pre, i), r));
            }
            String apre = prefix + "a";
            CountDownLatch callbacks = new CountDownLatch(count);
            for (int i = 0; i < count; i++) {
                final Map<String, Object> f = sent("async", apre, i);
                template.asyncSend(topic + ":" + TAGS[i % 3], message(apre, i, TAGS[i % 3]), new SendCallback() {
                    @Override
                    public void onSuccess(SendResult r) {
                        f.put("callback", true);
                        emit("sent", result(f, r));
                        callbacks.countDown();
                    }

                    @Override
                    public void onException(Throwable e) {
                        f.put("callback", true);
                        f.put("status", "ERROR");
                        f.put("error", e.toString());
                        emit("sent", f);
                        callbacks.countDown();
                    }
                });
            }
            if (!callbacks.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("async send callbacks missing: " + callbacks.getCount());
            }
            // Orderly: order id i % 4 hashed to a queue, each order's messages in the order they were sent.
            String opre = prefix + "o";
            for (int i = 0; i < count; i++) {
                SendResult r = template.syncSendOrderly(orderlyTopic + ":" + TAGS[i % 3], message(opre, i, TAGS[i % 3]),
                    "order-" + (i % 4));
                Map<String, Object> f = result(sent("orderly", opre, i), r);
                f.put("order", i % 4);
                emit("sent", f);
            }
            String[] outcomes = {"COMMIT", "ROLLBACK", "UNKNOWN"};
            String tpre = prefix + "t";
            for (int i = 0; i < outcomes.length; i++) {
                Message<String> msg = MessageBuilder.fromMessage(message(tpre, i, TAGS[i % 3]))
                    .setHeader("outcome", outcomes[i]).build();
                TransactionSendResult r = template.sendMessageInTransaction(txnTopic + ":" + TAGS[i % 3], msg, null);
                Map<String, Object> f = result(sent("transaction", tpre, i), r);
                f.put("outcome", outcomes[i]);
                f.put("local_state", r.getLocalTransactionState().name());
                f.put("transaction_id", r.getTransactionId());
                emit("sent", f);
            }
            for (int i = 0; i < replies; i++) {
                String request = prefix + "-ping-" + i;
                String reply = template.sendAndReceive(replyTopic, request, String.class, 15000);
                emit("reply", Map.of("request", request, "reply", String.valueOf(reply)));
            }
            while (received.count("concurrent") < expectConcurrent || received.count("orderly") < expectOrderly
                || received.count("txn") < expectTxn) {
                Thread.sleep(20);
            }
            Thread.sleep((long) (linger * 1000));
        }
    }

    public static void main(String[] args) {
        double timeout = 120;
        for (String arg : args) {
            if (arg.startsWith("--demo.timeout=")) {
                timeout = Double.parseDouble(arg.substring("--demo.timeout=".length()));
            }
        }
        Thread deadline = new Thread(() -> {
            emit("done", Map.of("timed_out", true));
            Runtime.getRuntime().halt(3);
        });
        java.util.Timer timer = new java.util.Timer(true);
        timer.schedule(new java.util.TimerTask() {
            @Override
            public void run() {
                deadline.start();
            }
        }, (long) (timeout * 1000));
        SpringApplication app = new SpringApplication(SpringClientApp.class);
        app.setWebApplicationType(WebApplicationType.NONE);
        try {
            ConfigurableApplicationContext context = app.run(args);
            // Closing the context shuts the listeners' consumers down (offsets persisted) and the producer.
            int code = SpringApplication.exit(context, () -> 0);
            emit("done", Map.of("timed_out", false));
            System.exit(code);
        } catch (RuntimeException e) {
            e.printStackTrace();
            emit("done", Map.of("timed_out", false, "error", e.toString()));
            System.exit(2);
        }
    }
}
