package io.pocketmq.javasdk;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.producer.Producer;

/** Against a server with ACL on, run with the harness's --access-key/--secret-key: what those keys may do, and
 * what a producer with the same access key and a wrong secret gets. */
final class AclScenarios {
    private AclScenarios() {
    }

    static void register(Map<String, Harness.Scenario> scenarios) {
        scenarios.put("acl", AclScenarios::acl);
    }

    /** The account's keys send and a SimpleConsumer receives and acks; a wrong secret's send fails. */
    static Map<String, Object> acl(Ctx ctx) throws Exception {
        if (ctx.accessKey == null) {
            throw new IllegalArgumentException("the acl scenario needs --access-key and --secret-key");
        }
        Producer producer = ctx.producer(null);
        SimpleConsumer consumer = ctx.simple("signed", "*");
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", SendScenarios.id(producer.send(ctx.message("signed").setTag("TagA").build())));
        out.put("seen", Ctx.drain(consumer, 1, 0));
        Producer forger = ctx.producerSigningWith(Ctx.keys(ctx.accessKey, "not-the-secret"));
        try {
            out.put("wrongSecret", SendScenarios.id(forger.send(ctx.message("forged").build())));
        } catch (Exception e) {
            out.put("wrongSecret", Harness.error(e));
        }
        return out;
    }
}
