package io.pocketmq.javaclient;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.io.PrintStream;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * Runs scenarios with a real RocketMQ Java client against one name server and prints one JSON line per scenario:
 * {"scenario": name, "ok": true, "result": {...}} or {"scenario": name, "ok": false, "error": {...}}, then
 * {"done": true}. Results are raw observations (ids, times and addresses included); tests/java_client normalizes
 * and compares them between pocketmq and Apache RocketMQ.
 *
 * <pre>
 * java -cp harness.jar:lib/* io.pocketmq.javaclient.Harness --namesrv HOST:PORT --run ID
 *      [--scenarios a,b,...] [--threads N] [--acl-namesrv HOST:PORT --acl-admin AK:SK --acl-user AK:SK]
 * </pre>
 */
public final class Harness {
    interface Scenario {
        Object run(Ctx ctx) throws Exception;
    }

    static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();

    static {
        SendScenarios.register(SCENARIOS);
        ConsumeScenarios.register(SCENARIOS);
        RetryScenarios.register(SCENARIOS);
        TransactionScenarios.register(SCENARIOS);
        QueryScenarios.register(SCENARIOS);
        PopScenarios.register(SCENARIOS);
        BroadcastScenarios.register(SCENARIOS);
        VipScenarios.register(SCENARIOS);
    }

    static Map<String, String> options;
    private static PrintStream out;

    public static void main(String[] args) throws Exception {
        // The clients' own logging may write to stdout; the JSON lines go to the real one.
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        options = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String namesrv = require("namesrv");
        String run = require("run");
        List<String> names = new ArrayList<>();
        if (options.containsKey("scenarios")) {
            names.addAll(List.of(options.get("scenarios").split(",")));
        } else {
            names.addAll(SCENARIOS.keySet());
            if (!options.containsKey("acl-namesrv")) {
                names.removeIf(n -> n.startsWith("acl"));
            }
            names.removeIf(n -> n.startsWith("vip"));  // (a broker on a fixed port only)
            if (!PopScenarios.supported()) {
                names.removeIf(n -> n.startsWith("pop"));
            }
        }
        names.sort(Comparator.comparingInt(Harness::startRank));
        int threads = Integer.parseInt(options.getOrDefault("threads", "4"));
        long timeoutMs = Long.parseLong(options.getOrDefault("scenario-timeout-ms", "180000"));
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        Map<String, Future<?>> running = new LinkedHashMap<>();
        for (String name : names) {
            Scenario scenario = SCENARIOS.get(name);
            running.put(name, pool.submit(() -> runOne(name, scenario, namesrv, run)));
        }
        for (Map.Entry<String, Future<?>> entry : running.entrySet()) {
            try {
                entry.getValue().get(timeoutMs, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                emit(entry.getKey(), false, Map.of("type", "ScenarioTimeout", "message", "not done in " + timeoutMs + " ms"));
            }
        }
        out.println(Json.write(Map.of("done", true)));
        out.flush();
        // Client threads are not daemons; a scenario that timed out may still hold some.
        System.exit(0);
    }

    /** The scenarios that take longest (each waits out redeliveries, checks or a quiet time), started first so
     * that none of them begins last and keeps the JVM running alone at the end; the others follow in their
     * registration order. */
    private static final List<String> LONGEST_FIRST = List.of("pop_push", "transaction", "reconsume_later",
        "broadcast_offsets_file", "offsets_restart", "trace", "dlq", "request_reply", "orderly_rebalance",
        "sql_filter", "tag_filter", "push_group", "send_async", "lite_assign_seek", "delay_level", "request_timeout",
        "lite_subscribe");

    private static int startRank(String name) {
        int rank = LONGEST_FIRST.indexOf(name);
        return rank < 0 ? LONGEST_FIRST.size() : rank;
    }

    private static String require(String key) {
        String value = options.get(key);
        if (value == null) {
            throw new IllegalArgumentException("--" + key + " is required");
        }
        return value;
    }

    static RPCHook credentials(String option) {
        String[] keys = require(option).split(":", 2);
        return new AclClientRPCHook(new SessionCredentials(keys[0], keys[1]));
    }

    private static void runOne(String name, Scenario scenario, String namesrv, String run) {
        if (scenario == null) {
            emit(name, false, Map.of("type", "UnknownScenario", "message", name));
            return;
        }
        boolean acl = name.startsWith("acl");
        String addr = acl ? require("acl-namesrv") : namesrv;
        long started = System.nanoTime();
        try (Ctx ctx = new Ctx(addr, run + "-" + name.replace('_', '-'), null)) {
            Object result = scenario.run(ctx);
            emit(name, true, result, started);
        } catch (Throwable t) {
            Map<String, Object> error = new LinkedHashMap<>(Ctx.error(t));
            StringWriter trace = new StringWriter();
            t.printStackTrace(new PrintWriter(trace));
            error.put("stack", trace.toString());
            emit(name, false, error, started);
        }
    }

    private static void emit(String name, boolean ok, Object payload) {
        emit(name, ok, payload, -1);
    }

    // "ms": how long the scenario ran (what the suite's time goes to), -1 when it did not finish.
    private static synchronized void emit(String name, boolean ok, Object payload, long startedNanos) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("scenario", name);
        line.put("ok", ok);
        line.put("ms", startedNanos < 0 ? -1 : (System.nanoTime() - startedNanos) / 1_000_000);
        line.put(ok ? "result" : "error", payload);
        out.println(Json.write(line));
        out.flush();
    }
}
