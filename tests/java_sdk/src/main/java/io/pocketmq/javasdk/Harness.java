package io.pocketmq.javasdk;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs scenarios with Apache RocketMQ 5's Java SDK against one gRPC endpoint, all at once in one JVM, and prints
 * one JSON line per scenario, {"scenario": name, "ok": true, "result": {...}} or {"scenario": name, "ok": false,
 * "error": {...}}, then {"done": true}. Results are raw observations (ids and times included).
 *
 * <pre>
 * java -cp harness.jar:lib/* io.pocketmq.javasdk.Harness --endpoint HOST:PORT --run ID [--scenarios a,b] [--ssl false]
 *      [--access-key AK --secret-key SK]
 * </pre>
 */
public final class Harness {
    interface Scenario {
        Map<String, Object> run(Ctx ctx) throws Exception;
    }

    static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();

    static {
        SendScenarios.register(SCENARIOS);
        ReceiveScenarios.register(SCENARIOS);
        AclScenarios.register(SCENARIOS);
    }

    private static PrintStream out;

    public static void main(String[] args) throws Exception {
        // The SDK may log to stdout; the result lines go to the real one.
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Map<String, String> options = options(args);
        String endpoint = options.get("endpoint");
        String run = options.get("run");
        boolean ssl = Boolean.parseBoolean(options.getOrDefault("ssl", "true"));
        List<String> names = new ArrayList<>(SCENARIOS.keySet());
        if (options.containsKey("scenarios")) {
            names = List.of(options.get("scenarios").split(","));
        }
        long timeoutMs = Long.parseLong(options.getOrDefault("scenario-timeout-ms", "150000"));
        ExecutorService pool = Executors.newFixedThreadPool(names.size());
        Map<String, Future<?>> running = new LinkedHashMap<>();
        for (String name : names) {
            running.put(name, pool.submit(() -> runOne(name, endpoint, run + "-" + name, ssl,
                options.get("access-key"), options.get("secret-key"))));
        }
        long deadline = System.currentTimeMillis() + timeoutMs;
        for (Map.Entry<String, Future<?>> entry : running.entrySet()) {
            try {
                entry.getValue().get(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                emit(entry.getKey(), false, Map.of("type", "ScenarioTimeout", "message", "not done in " + timeoutMs + " ms"));
            }
        }
        out.println(Json.of(Map.of("done", true)));
        out.flush();
        // The SDK's threads are not all daemons, and a timed-out scenario may still hold clients.
        System.exit(0);
    }

    static Map<String, String> options(String[] args) {
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        for (String required : List.of("endpoint", "run")) {
            if (!options.containsKey(required)) {
                throw new IllegalArgumentException("--" + required + " is required");
            }
        }
        return options;
    }

    private static void runOne(String name, String endpoint, String prefix, boolean ssl, String accessKey,
                               String secretKey) {
        Scenario scenario = SCENARIOS.get(name);
        if (scenario == null) {
            emit(name, false, Map.of("type", "UnknownScenario", "message", name));
            return;
        }
        long start = System.currentTimeMillis();
        Map<String, Object> result;
        try (Ctx ctx = new Ctx(endpoint, prefix, ssl, accessKey, secretKey)) {
            result = scenario.run(ctx);
            result.put("ranMs", System.currentTimeMillis() - start);
        } catch (Throwable t) {
            Map<String, Object> error = error(t);
            StringWriter trace = new StringWriter();
            t.printStackTrace(new PrintWriter(trace));
            error.put("stack", trace.toString());
            emit(name, false, error);
            return;
        }
        // (after the clients closed: what closing costs shows in the JVM's time, not in the results)
        result.put("closedMs", System.currentTimeMillis() - start);
        emit(name, true, result);
    }

    /** An exception as the test compares it: its class, its message (a ClientException's names the status code). */
    static Map<String, Object> error(Throwable t) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("type", t.getClass().getSimpleName());
        out.put("message", t.getMessage());
        if (t.getCause() != null && t.getCause() != t) {
            out.put("cause", error(t.getCause()));
        }
        return out;
    }

    private static synchronized void emit(String name, boolean ok, Object payload) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("scenario", name);
        line.put("ok", ok);
        line.put(ok ? "result" : "error", payload);
        out.println(Json.of(line));
        out.flush();
    }
}
