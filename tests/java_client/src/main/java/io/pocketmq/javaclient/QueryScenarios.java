package io.pocketmq.javaclient;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

/** Lookups and the features built on them: queryMessage by key, viewMessage by offset id and by message id,
 * message trace, request-reply, and access control. */
final class QueryScenarios {
    private QueryScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("query_view", QueryScenarios::queryView);
        scenarios.put("trace", QueryScenarios::trace);
        scenarios.put("request_reply", QueryScenarios::requestReply);
        scenarios.put("request_timeout", QueryScenarios::requestTimeout);
        scenarios.put("acl", QueryScenarios::acl);
    }

    static List<MessageExt> query(DefaultMQProducer producer, String topic, String key, int expected)
        throws Exception {
        List<MessageExt> found = new ArrayList<>();
        Ctx.await(() -> {
            try {
                QueryResult result = producer.queryMessage(topic, key, 32, 0, Long.MAX_VALUE);
                found.clear();
                found.addAll(result.getMessageList());
                return found.size() >= expected;
            } catch (Exception e) {
                return false;
            }
        });
        return found;
    }

    static Object queryView(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer("p");
        String topic = ctx.topic("T");
        List<SendResult> sent = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Message m = new Message(topic, "q", i < 2 ? "shared-key" : "other-key", ("query " + i).getBytes(UTF_8));
            sent.add(producer.send(m));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("byKey", Ctx.describeAll(query(producer, topic, "shared-key", 2)));
        SendResult first = sent.get(0);
        out.put("byOffsetId", Ctx.describe(Compat.viewByOffsetId(producer, topic, first.getOffsetMsgId())));
        out.put("byMsgId", Ctx.describe(producer.viewMessage(topic, first.getMsgId())));
        out.put("sentMsgId", first.getMsgId());
        try {
            producer.queryMessage(topic, "no-such-key", 32, 0, Long.MAX_VALUE);
            out.put("missingKey", "found");
        } catch (Exception e) {
            out.put("missingKey", Ctx.error(e));
        }
        // The broker's address and a commit-log offset far past the end.
        String missing = first.getOffsetMsgId().substring(0, 16) + "00000000FFFFFF00";
        try {
            Compat.viewByOffsetId(producer, topic, missing);
            out.put("missingOffset", "found");
        } catch (Exception e) {
            out.put("missingOffset", Ctx.error(e));
        }
        return out;
    }

    /** A traced producer and consumer: the trace records (RMQ_SYS_TRACE_TOPIC, keyed by the message id) of the
     * send and the consume, split into fields. */
    static Object trace(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.tune(new DefaultMQProducer(ctx.group("p"), true, null));
        producer.start();
        String topic = ctx.topic("T");
        SendResult sent = producer.send(new Message(topic, "traced", "trace-key", "traced body".getBytes(UTF_8)));
        DefaultMQPushConsumer consumer = ctx.tune(new DefaultMQPushConsumer(ctx.group("c"), true, null));
        consumer.setConsumeFromWhere(org.apache.rocketmq.common.consumer.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        List<MessageExt> got = Collections.synchronizedList(new ArrayList<>());
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            got.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        Ctx.await(() -> !got.isEmpty());
        List<List<String>> records = new ArrayList<>();
        Ctx.await(() -> {
            try {
                QueryResult result = producer.queryMessage("RMQ_SYS_TRACE_TOPIC", sent.getMsgId(), 32, 0, Long.MAX_VALUE);
                records.clear();
                for (MessageExt m : result.getMessageList()) {
                    for (String record : new String(m.getBody(), UTF_8).split("\u0002")) {
                        if (!record.isEmpty() && record.contains(sent.getMsgId())) {
                            records.add(List.of(record.split("\u0001", -1)));
                        }
                    }
                }
                return records.stream().anyMatch(r -> r.get(0).equals("SubAfter"))
                    && records.stream().anyMatch(r -> r.get(0).equals("Pub"));
            } catch (Exception e) {
                return false;
            }
        });
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("send", Ctx.sendResult(sent));
        out.put("consumed", got.size());
        out.put("records", records);
        return out;
    }

    static Object requestReply(Ctx ctx) throws Exception {
        DefaultMQProducer requester = ctx.producer("requester");
        DefaultMQProducer replier = ctx.producer("replier");
        String topic = ctx.topic("T");
        // The requester itself knows no route of the topic yet: request() then looks it up and heartbeats the
        // broker before it sends, so the broker knows where to push the reply.
        Compat.createTopic(replier, topic, 4);
        replier.send(new Message(topic, "warmup", "warmup".getBytes(UTF_8)));
        List<Object> replyErrors = Collections.synchronizedList(new ArrayList<>());
        List<MessageExt> requests = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer responder = ctx.push("responder");
        responder.subscribe(topic, "request");
        responder.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                requests.add(m);
                try {
                    Message reply = MessageUtil.createReplyMessage(m, ("reply to " + new String(m.getBody(), UTF_8)).getBytes(UTF_8));
                    replier.send(reply);
                } catch (Exception e) {
                    replyErrors.add(Ctx.error(e));
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        responder.start();
        Ctx.await(() -> ConsumeScenarios.queuesOf(responder, topic) == 4);
        Message request = new Message(topic, "request", "req-key", "ping".getBytes(UTF_8));
        request.putUserProperty("question", "ping?");
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            Message reply = requester.request(request, 30_000);
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("topic", reply.getTopic());
            r.put("body", new String(reply.getBody(), UTF_8));
            r.put("props", new java.util.TreeMap<>(reply.getProperties()));
            out.put("reply", r);
        } catch (Exception e) {
            out.put("reply", Ctx.error(e));
        }
        out.put("requests", Ctx.describeAll(new ArrayList<>(requests)));
        out.put("replyErrors", new ArrayList<>(replyErrors));
        return out;
    }

    /** A request nobody answers: RequestTimeoutException after the timeout. */
    static Object requestTimeout(Ctx ctx) throws Exception {
        DefaultMQProducer requester = ctx.producer("requester");
        String topic = ctx.topic("T");
        requester.send(new Message(topic, "warmup", "warmup".getBytes(UTF_8)));
        try {
            requester.request(new Message(topic, "request", "nobody answers".getBytes(UTF_8)), 2000);
            return Map.of("reply", "answered");
        } catch (Exception e) {
            return Map.of("reply", Ctx.error(e));
        }
    }

    private static Object attempt(Attempt attempt) {
        try {
            return attempt.run();
        } catch (Exception e) {
            return Ctx.error(e);
        }
    }

    interface Attempt {
        Object run() throws Exception;
    }

    private static DefaultMQProducer signedProducer(Ctx ctx, String group, RPCHook hook) throws Exception {
        DefaultMQProducer producer = ctx.tune(new DefaultMQProducer(ctx.group(group), hook));
        producer.setSendMsgTimeout(15_000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        return producer;
    }

    /** Against a broker with aclEnable: the plain_acl.yml the test wrote gives the admin account everything and
     * the user account PUB|SUB by default, SUB only on the topic "Denied". */
    static Object acl(Ctx ctx) throws Exception {
        RPCHook admin = Harness.credentials("acl-admin");
        RPCHook user = Harness.credentials("acl-user");
        String[] userKeys = Harness.options.get("acl-user").split(":", 2);
        RPCHook wrongSecret = new org.apache.rocketmq.acl.common.AclClientRPCHook(
            new org.apache.rocketmq.acl.common.SessionCredentials(userKeys[0], userKeys[1] + "-wrong"));
        String topic = ctx.topic("T");
        String denied = ctx.topic("Denied");
        DefaultMQProducer adminProducer = signedProducer(ctx, "admin", admin);
        DefaultMQProducer userProducer = signedProducer(ctx, "user", user);
        DefaultMQProducer wrongProducer = signedProducer(ctx, "wrong", wrongSecret);
        DefaultMQProducer anonymous = signedProducer(ctx, "anonymous", null);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("adminCreatesDenied", attempt(() -> {
            Compat.createTopic(adminProducer, denied, 4);
            return "created";
        }));
        out.put("userCreatesTopic", attempt(() -> {
            Compat.createTopic(userProducer, ctx.topic("UserMade"), 4);
            return "created";
        }));
        out.put("adminSend", attempt(() -> Ctx.sendResult(
            adminProducer.send(new Message(topic, "acl", "acl-key", "by admin".getBytes(UTF_8)))).get("status")));
        out.put("userSend", attempt(() -> Ctx.sendResult(
            userProducer.send(new Message(topic, "acl", "acl-key", "by user".getBytes(UTF_8)))).get("status")));
        ctx.route(adminProducer, denied);
        out.put("userSendDenied", attempt(() -> Ctx.sendResult(
            userProducer.send(new Message(denied, "acl", "by user".getBytes(UTF_8)))).get("status")));
        out.put("wrongSecretSend", attempt(() -> Ctx.sendResult(
            wrongProducer.send(new Message(topic, "acl", "wrong secret".getBytes(UTF_8)))).get("status")));
        out.put("anonymousSend", attempt(() -> Ctx.sendResult(
            anonymous.send(new Message(topic, "acl", "anonymous".getBytes(UTF_8)))).get("status")));
        Ctx signed = new Ctx(ctx.namesrv, ctx.prefix, user);
        try (signed) {
            DefaultMQPullConsumer reader = signed.reader("reader");
            List<String> bodies = new ArrayList<>();
            signed.pullAll(reader, topic, "*", 2).forEach(m -> bodies.add(new String(m.getBody(), UTF_8)));
            Collections.sort(bodies);
            out.put("userPull", bodies);
        }
        return out;
    }
}
