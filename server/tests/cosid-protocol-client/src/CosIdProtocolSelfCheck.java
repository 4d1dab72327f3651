// Checks CosIdProtocolClient (and, in a child JVM, CosIdProtocolDriver) against fake
// servers in this JVM (see ../README.md).
//
//   java -cp OUTDIR CosIdProtocolSelfCheck
//
// Prints an `ok …` line per check and "self-check passed", exit 0; or what went wrong,
// exit 1. Timings are generous on purpose: no check needs a fast or idle machine.

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.stream.Stream;

public final class CosIdProtocolSelfCheck {

    // Written out here rather than taken from the client, so a wrong constant there shows.
    private static final long EPOCH = 1577203200000L;
    private static final String M01 = "{\"code\":\"M-01\",\"msg\":\"machine ids are used up\",\"errors\":[]}";
    private static final String M03 = "{\"code\":\"M-03\",\"msg\":\"machine id lost\",\"errors\":[\"x\"]}";

    private static Path stateDir;

    public static void main(String[] args) {
        // The JDK's server writes headers and body apart; without this, Nagle's algorithm
        // and delayed ACKs hold each answer back by ~40 ms. Read when a server starts.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        int status = 1;
        try {
            stateDir = Files.createTempDirectory("cosid-self-check");
            distributeAndClockWait();
            localState();
            clockBound();
            layout();
            threads();
            guardExtendsThenLost();
            fencePasses();
            machineIdsUsedUp();
            failover();
            givingUp();
            segmentsHandOut();
            segmentThreads();
            fetchAhead();
            rangeRefused();
            token();
            urlEncoding();
            driver();
            System.out.println("self-check passed");
            status = 0;
        } catch (Throwable t) {
            System.out.flush();
            System.err.println("CosIdProtocolSelfCheck: FAILED: " + t);
            t.printStackTrace();
        } finally {
            deleteQuietly(stateDir);
        }
        System.exit(status);
    }

    // ---------------------------------------------------------------- helpers

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    private static void ok(String what) {
        System.out.println("ok " + what);
        System.out.flush();
    }

    private static long timeOf(long id, int machineBit) {
        return (id >>> (machineBit + 12)) + EPOCH;
    }

    private static long machineOf(long id, int machineBit) {
        return (id >>> 12) & ((1L << machineBit) - 1);
    }

    private static long sequenceOf(long id) {
        return id & 4095;
    }

    /** Polls until done, or fails saying what did not happen within the time. */
    private static void await(BooleanSupplier done, long timeoutMs, String what) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!done.getAsBoolean()) {
            check(System.nanoTime() - until < 0, "within " + timeoutMs + " ms: " + what);
            Thread.sleep(20);
        }
    }

    private static <T extends Throwable> T expect(Class<T> type, Runnable action, String what) {
        try {
            action.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
            throw new AssertionError(what + ": expected " + type.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError(what + ": expected " + type.getSimpleName() + ", nothing was thrown");
    }

    private static CosIdProtocolClient.Options options() {
        return new CosIdProtocolClient.Options().stateDir(stateDir).connectTimeout(Duration.ofSeconds(2))
                .readTimeout(Duration.ofSeconds(10));
    }

    /** A port nothing listens on. */
    private static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static void deleteQuietly(Path dir) {
        if (dir == null) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory: left behind at worst
        }
    }

    /** Counts remote calls and failures by server, and keeps every line as the driver would log it. */
    private static class Recorder implements CosIdProtocolClient.Listener {
        final List<String> lines = new CopyOnWriteArrayList<>();
        final Map<String, AtomicInteger> failures = new ConcurrentHashMap<>();
        final List<Exception> guardFailures = new CopyOnWriteArrayList<>();
        final List<long[]> ranges = new CopyOnWriteArrayList<>(); // {maxId, step}
        final AtomicInteger guards = new AtomicInteger();

        int failuresAt(String server) {
            AtomicInteger n = failures.get(server);
            return n == null ? 0 : n.get();
        }

        int allFailures() {
            return failures.values().stream().mapToInt(AtomicInteger::get).sum();
        }

        @Override
        public void distributed(String server, long machineId, long lastTimeStamp) {
            lines.add("distributed " + server + " " + machineId + " " + lastTimeStamp);
        }

        @Override
        public void guarded(String server) {
            guards.incrementAndGet();
            lines.add("guarded " + server);
        }

        @Override
        public void reverted(String server) {
            lines.add("reverted " + server);
        }

        @Override
        public void segment(String server, String name, long maxId, long step) {
            ranges.add(new long[] {maxId, step});
            lines.add("segment " + server + " " + maxId + " " + step);
        }

        @Override
        public void failed(String server, Exception error) {
            failures.computeIfAbsent(server, s -> new AtomicInteger()).incrementAndGet();
            lines.add("failed " + server + " " + CosIdProtocolClient.describe(error));
        }

        @Override
        public void guardFailed(Exception error) {
            guardFailures.add(error);
        }
    }

    // ---------------------------------------------------------------- fake servers

    /** A request as the fake saw it. */
    record Seen(String method, String rawPath, String path, String rawQuery, Map<String, String> query, String auth) {
    }

    record Answer(int status, String body, long delayMs) {
        static final Answer EMPTY = new Answer(200, "", 0);

        static Answer of(int status, String body) {
            return new Answer(status, body, 0);
        }
    }

    interface Responder {
        Answer answer(Seen request);
    }

    /** An HTTP server on 127.0.0.1 that records each request and answers through a Responder. */
    static final class Fake implements AutoCloseable {
        final HttpServer http;
        final List<Seen> seen = new CopyOnWriteArrayList<>();

        Fake(Responder responder) throws IOException {
            http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            http.createContext("/", exchange -> {
                try {
                    exchange.getRequestBody().readAllBytes();
                    String rawQuery = exchange.getRequestURI().getRawQuery();
                    Map<String, String> query = new HashMap<>();
                    if (rawQuery != null) {
                        for (String pair : rawQuery.split("&")) {
                            int eq = pair.indexOf('=');
                            query.put(pair.substring(0, eq < 0 ? pair.length() : eq), eq < 0 ? ""
                                    : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
                        }
                    }
                    Seen s = new Seen(exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(),
                            exchange.getRequestURI().getPath(), rawQuery, query,
                            exchange.getRequestHeaders().getFirst("Authorization"));
                    seen.add(s);
                    Answer a;
                    try {
                        a = responder.answer(s);
                    } catch (RuntimeException e) {
                        a = Answer.of(599, "fake server broke: " + e);
                    }
                    if (a.delayMs() > 0) {
                        Thread.sleep(a.delayMs());
                    }
                    byte[] body = a.body().getBytes(StandardCharsets.UTF_8);
                    exchange.getResponseHeaders().set("Content-Type",
                            a.body().startsWith("{") ? "application/json" : "text/plain");
                    exchange.sendResponseHeaders(a.status(), body.length == 0 ? -1 : body.length);
                    if (body.length > 0) {
                        try (OutputStream out = exchange.getResponseBody()) {
                            out.write(body);
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    exchange.close();
                }
            });
            http.setExecutor(Executors.newFixedThreadPool(8, r -> {
                Thread t = new Thread(r, "fake-server");
                t.setDaemon(true);
                return t;
            }));
            http.start();
        }

        String address() {
            return "127.0.0.1:" + http.getAddress().getPort();
        }

        List<Seen> requests(String method, String pathPrefix) {
            List<Seen> out = new ArrayList<>();
            for (Seen s : seen) {
                if (s.method().equals(method) && s.path().startsWith(pathPrefix)) {
                    out.add(s);
                }
            }
            return out;
        }

        int count(String method, String pathPrefix) {
            return requests(method, pathPrefix).size();
        }

        @Override
        public void close() {
            http.stop(0);
        }
    }

    /** CosId's proxy routes, with knobs. */
    static final class FakeCosId implements Responder {
        volatile long machineId = 5;
        /** The lastTimeStamp handed out; the last one is kept in `handed`. */
        volatile LongSupplier lastTimeStamp = () -> System.currentTimeMillis() - 1000;
        final AtomicLong handed = new AtomicLong();
        volatile Answer distributeAnswer; // null: a machine state
        volatile Answer guardAnswer = Answer.EMPTY;
        final Map<String, AtomicLong> counters = new ConcurrentHashMap<>();
        /** Maxima to answer, in order, before the counter takes over. */
        final Map<String, Deque<Long>> scripted = new ConcurrentHashMap<>();

        private static Answer missing(String what) {
            return Answer.of(400, "{\"code\":\"400\",\"msg\":\"missing " + what + "\",\"errors\":[]}");
        }

        @Override
        public Answer answer(Seen s) {
            Map<String, String> q = s.query();
            String[] parts = s.path().split("/", -1);
            if (s.path().startsWith("/machines/") && parts.length == 3) {
                if (!q.containsKey("instanceId") || !q.containsKey("stable")) {
                    return missing("instanceId or stable");
                }
                switch (s.method()) {
                    case "POST":
                        if (!q.containsKey("machineBit") || !q.containsKey("safeGuardDuration")) {
                            return missing("machineBit or safeGuardDuration");
                        }
                        if (distributeAnswer != null) {
                            return distributeAnswer;
                        }
                        long ts = lastTimeStamp.getAsLong();
                        handed.set(ts);
                        // Odd spacing, swapped fields and an extra one: the client must parse JSON.
                        return Answer.of(200, "{ \"lastTimeStamp\" : " + ts + " ,\n \"extra\": [1, {\"a\": \"b\\\"c\"}],"
                                + " \"machineId\":" + machineId + "}");
                    case "PATCH":
                        return q.containsKey("safeGuardDuration") ? guardAnswer : missing("safeGuardDuration");
                    case "DELETE":
                        return Answer.EMPTY;
                    default:
                        return Answer.of(405, "");
                }
            }
            if (s.path().startsWith("/segments/distributor/") && parts.length == 5 && s.method().equals("POST")) {
                long offset = Long.parseLong(q.get("offset"));
                Long.parseLong(q.get("step"));
                counters.putIfAbsent(parts[3] + "/" + parts[4], new AtomicLong(offset));
                return Answer.EMPTY;
            }
            if (s.path().startsWith("/segments/") && parts.length == 4 && s.method().equals("PATCH")) {
                String key = parts[2] + "/" + parts[3];
                AtomicLong counter = counters.get(key);
                if (counter == null) {
                    return Answer.of(404, "{\"code\":\"404\",\"msg\":\"no distributor " + key + "\",\"errors\":[]}");
                }
                long step = Long.parseLong(q.get("step"));
                Deque<Long> script = scripted.get(key);
                Long max = script == null ? null : script.poll();
                // Whitespace around the number, as the protocol allows.
                return Answer.of(200, "  " + (max != null ? max : counter.addAndGet(step)) + " \n");
            }
            return Answer.of(404, "no route " + s.method() + " " + s.path());
        }
    }

    // ---------------------------------------------------------------- machine IDs

    private static void distributeAndClockWait() throws Exception {
        FakeCosId cos = new FakeCosId();
        cos.lastTimeStamp = () -> System.currentTimeMillis() + 300;
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "10.0.0.7:8080",
                        options())) {
            CosIdProtocolClient.MachineState state = client.distribute();
            check(state.machineId == 5 && state.lastTimeStamp == cos.handed.get(),
                    "distribute parsed " + state + ", the server said 5 and " + cos.handed.get());
            long id = client.nextId();
            check(timeOf(id, 10) > state.lastTimeStamp, "first ID's time " + timeOf(id, 10)
                    + " is not after the lastTimeStamp " + state.lastTimeStamp + " (300 ms ahead)");
            check(machineOf(id, 10) == 5, "first ID's machine part " + machineOf(id, 10));
            Seen post = f.requests("POST", "/machines/orders").get(0);
            Map<String, String> q = post.query();
            check("10".equals(q.get("machineBit")) && "10.0.0.7:8080".equals(q.get("instanceId"))
                    && "false".equals(q.get("stable")) && "PT5M".equals(q.get("safeGuardDuration")),
                    "distribute's query: " + post.rawQuery());
            long last = client.nextId();
            client.close(true);
            List<Seen> deletes = f.requests("DELETE", "/machines/orders");
            check(deletes.size() == 1, deletes.size() + " reverts, not 1");
            check("10.0.0.7:8080".equals(deletes.get(0).query().get("instanceId"))
                    && "false".equals(deletes.get(0).query().get("stable")), "revert's query: "
                    + deletes.get(0).rawQuery());
            String saved = Files.readString(client.stateFile());
            check(saved.equals("5|" + timeOf(last, 10)), "local state " + saved + ", not 5|" + timeOf(last, 10));
            expect(IllegalStateException.class, client::nextId, "nextId after close");
            ok("distribute: machineId 5 parsed, a lastTimeStamp 300 ms ahead waited out (first ID at +"
                    + (timeOf(id, 10) - state.lastTimeStamp) + " ms), reverted and saved " + saved + " at close");
        }
    }

    private static void localState() throws Exception {
        FakeCosId cos = new FakeCosId();
        long now = System.currentTimeMillis();
        cos.lastTimeStamp = () -> now - 1000;
        try (Fake f = new Fake(cos)) {
            // Same machine ID, a later time than the server's: that time is the floor.
            try (CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "local:1", options())) {
                long saved = now + 400;
                Files.createDirectories(client.stateFile().getParent());
                Files.writeString(client.stateFile(), "5|" + saved);
                client.distribute();
                long id = client.nextId();
                check(timeOf(id, 10) > saved, "first ID's time " + timeOf(id, 10)
                        + " is not after the local state's " + saved);
                client.close(false);
                check(f.count("DELETE", "/machines/") == 0, "close(false) reverted");
            }
            // Another machine ID: its time says nothing about ours (and would be past the bound).
            try (CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "local:2", options())) {
                long saved = now + 100_000;
                Files.createDirectories(client.stateFile().getParent());
                Files.writeString(client.stateFile(), "7|" + saved);
                client.distribute();
                long id = client.nextId();
                check(timeOf(id, 10) < saved, "a local state naming machine ID 7 was used for machine ID 5");
            }
        }
        ok("local state: the same machine ID's saved time was waited out, another machine ID's ignored");
    }

    private static void clockBound() throws Exception {
        FakeCosId cos = new FakeCosId();
        cos.lastTimeStamp = () -> System.currentTimeMillis() + 60_000;
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "bound:1",
                        options().clockWait(Duration.ofSeconds(10)))) {
            IllegalStateException e = expect(IllegalStateException.class, client::distribute,
                    "a lastTimeStamp 60 s ahead with a 10 s bound");
            String m = String.valueOf(e.getMessage());
            check(m.contains(Long.toString(cos.handed.get())) && m.matches(".*the clock reads \\d+ ms.*"),
                    "the message does not name both times: " + m);
            check(f.count("DELETE", "/machines/") == 1, "the refused machine ID was not given back");
            check(client.machineId() == -1, "a machine ID kept after the refusal");
            expect(IllegalStateException.class, client::nextId, "nextId after a refused distribute");
            ok("clock bound: 60 s behind is refused (" + m + ") and the machine ID given back");
        }
    }

    private static void layout() throws Exception {
        FakeCosId cos = new FakeCosId();
        cos.machineId = 200;
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "layout:1",
                        options().machineBit(8))) {
            client.distribute();
            check("8".equals(f.requests("POST", "/machines/").get(0).query().get("machineBit")), "machineBit not sent");
            long before = System.currentTimeMillis();
            long prev = -1;
            int sameMs = 0;
            int newMs = 0;
            for (int i = 0; i < 200_000 && (sameMs < 100 || newMs < 3); i++) {
                long id = client.nextId();
                long after = System.currentTimeMillis();
                long t = timeOf(id, 8);
                check(id > 0, "ID " + id + " is not positive");
                check(machineOf(id, 8) == 200, "ID " + id + ": machine part " + machineOf(id, 8) + ", not 200");
                check(t >= before && t <= after, "ID " + id + ": time part " + t + " outside [" + before + ", "
                        + after + "]");
                check(id == ((t - EPOCH) << 20 | 200L << 12 | sequenceOf(id)), "ID " + id + " is not time|machine|seq");
                if (prev >= 0 && timeOf(prev, 8) == t) {
                    check(sequenceOf(id) == sequenceOf(prev) + 1, "sequence " + sequenceOf(prev) + " then "
                            + sequenceOf(id) + " in one ms");
                    sameMs++;
                } else if (prev >= 0) {
                    check(t > timeOf(prev, 8) && sequenceOf(id) == 0, "a new ms " + t + " after " + timeOf(prev, 8)
                            + " starts at sequence " + sequenceOf(id));
                    newMs++;
                }
                prev = id;
            }
            check(sameMs >= 100 && newMs >= 3, "only " + sameMs + " IDs shared a ms, " + newMs + " ms changes");
            ok("layout: (ms - 1577203200000) << 20 | 200 << 12 | sequence with machineBit 8, sequences counted up");
        }
    }

    private static void threads() throws Exception {
        FakeCosId cos = new FakeCosId();
        cos.machineId = 1023;
        int threads = 8;
        int perThread = 20_000;
        long[][] ids = new long[threads][perThread];
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "threads:1", options())) {
            client.distribute();
            runThreads(threads, t -> {
                for (int i = 0; i < perThread; i++) {
                    ids[t][i] = client.nextId();
                }
            });
        }
        Set<Long> seen = new HashSet<>();
        for (long[] mine : ids) {
            for (int i = 0; i < mine.length; i++) {
                check(seen.add(mine[i]), "ID " + mine[i] + " handed out twice");
                if (i > 0) {
                    check(mine[i] > mine[i - 1], "a thread drew " + mine[i - 1] + " then " + mine[i]);
                }
                check(machineOf(mine[i], 10) == 1023, "machine part " + machineOf(mine[i], 10));
            }
        }
        ok("threads: " + threads + " x " + perThread + " snowflake IDs distinct and increasing per thread");
    }

    private interface Body {
        void run(int thread) throws Exception;
    }

    private static void runThreads(int threads, Body body) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int n = t;
            workers[t] = new Thread(() -> {
                try {
                    start.await();
                    body.run(n);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            workers[t].start();
        }
        start.countDown();
        for (Thread w : workers) {
            w.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("a thread failed: " + failure.get(), failure.get());
        }
    }

    private static void guardExtendsThenLost() throws Exception {
        FakeCosId cos = new FakeCosId();
        // Each guard is answered a second late: the fence must count from when it was sent.
        cos.guardAnswer = new Answer(200, "", 1000);
        AtomicReference<CosIdProtocolClient> holder = new AtomicReference<>();
        List<Long> remainingAfterGuard = new CopyOnWriteArrayList<>();
        Recorder rec = new Recorder() {
            @Override
            public void guarded(String server) {
                remainingAfterGuard.add(holder.get().millisUntilFence());
                super.guarded(server);
            }
        };
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "guard:1",
                        options().safeGuard(Duration.ofSeconds(4)).guardInterval(Duration.ofMillis(300))
                                .listener(rec))) {
            holder.set(client);
            client.distribute();
            long distributed = System.nanoTime();
            long first = client.millisUntilFence();
            check(first <= 3200, first + " ms to the fence after distribute, more than PT4S less a fifth");
            // Just past distribute's own fence: only a guard can have moved it on.
            long past = TimeUnit.MILLISECONDS.toNanos(first + 200);
            await(() -> System.nanoTime() - distributed > past, 10_000, "distribute's fence passes");
            long id = client.nextId();
            check(machineOf(id, 10) == 5, "an ID after the guards");
            check(rec.guards.get() >= 1, "no guard succeeded in " + (first + 200) + " ms");
            for (long remaining : remainingAfterGuard) {
                check(remaining <= 2500, "a guard answered after 1 s left " + remaining
                        + " ms to the fence: counted from the answer, not from the sending");
            }
            Seen patch = f.requests("PATCH", "/machines/orders").get(0);
            check("guard:1".equals(patch.query().get("instanceId")) && "false".equals(patch.query().get("stable"))
                    && "PT4S".equals(patch.query().get("safeGuardDuration")), "guard's query: " + patch.rawQuery());
            int guards = rec.guards.get();

            cos.guardAnswer = Answer.of(400, M03);
            await(() -> client.lost() != null, 10_000, "a guard answered M-03");
            CosIdProtocolClient.MachineFencedException e = expect(CosIdProtocolClient.MachineFencedException.class,
                    client::nextId, "nextId after a guard was answered M-03");
            check(e.getCause() instanceof CosIdProtocolClient.CosIdErrorException
                    && ((CosIdProtocolClient.CosIdErrorException) e.getCause()).code.equals("M-03"),
                    "the refusal's cause is " + e.getCause());
            check(rec.guardFailures.size() == 1, rec.guardFailures.size() + " guard failures logged, not 1");
            int patches = f.count("PATCH", "/machines/");
            client.close(true);
            check(f.count("DELETE", "/machines/") == 0, "reverted a machine ID the server says is lost");
            check(f.count("PATCH", "/machines/") == patches, "guarded on after M-03");
            ok("guard: " + guards + " guards (answered 1 s late) kept the machine ID past PT4S less a fifth,"
                    + " fence counted from the sending; after M-03 nextId throws and close does not revert");
        }
    }

    private static void fencePasses() throws Exception {
        FakeCosId cos = new FakeCosId();
        cos.guardAnswer = Answer.of(500, "store down");
        Recorder rec = new Recorder();
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "fence:1",
                        options().safeGuard(Duration.ofSeconds(4)).guardInterval(Duration.ofMillis(500)).attempts(2)
                                .listener(rec))) {
            client.distribute();
            client.nextId();
            await(() -> client.millisUntilFence() < 0, 10_000, "the fence passes");
            CosIdProtocolClient.MachineFencedException e = expect(CosIdProtocolClient.MachineFencedException.class,
                    client::nextId, "nextId past the fence");
            check(String.valueOf(e.getMessage()).contains("unguarded"), "message: " + e.getMessage());
            check(f.count("PATCH", "/machines/") >= 2, "the guard did not try");
            check(!rec.guardFailures.isEmpty(), "failed guards were not logged");
            ok("fence: guards answered 500 for PT4S less a fifth, then nextId throws (" + e.getMessage() + ")");
        }
    }

    private static void machineIdsUsedUp() throws Exception {
        FakeCosId cos = new FakeCosId();
        cos.distributeAnswer = Answer.of(400, M01);
        try (Fake a = new Fake(cos);
                Fake b = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(a.address() + "," + b.address(), "orders",
                        "m01:1", options())) {
            CosIdProtocolClient.CosIdErrorException e = expect(CosIdProtocolClient.CosIdErrorException.class,
                    client::distribute, "distribute answered M-01");
            check(e.code.equals("M-01") && e.msg.equals("machine ids are used up"), "code " + e.code + " msg " + e.msg);
            int posts = a.count("POST", "/machines/") + b.count("POST", "/machines/");
            check(posts == 1, "M-01 was retried: " + posts + " requests");
            expect(IllegalStateException.class, client::nextId, "nextId without a machine ID");
            ok("M-01: CosIdErrorException code M-01, not retried on the other server");
        }
    }

    private static void failover() throws Exception {
        FakeCosId cos = new FakeCosId();
        Recorder rec = new Recorder();
        String refused = "127.0.0.1:" + closedPort();
        try (Fake good = new Fake(cos);
                Fake broken = new Fake(s -> Answer.of(500, "{\"code\":\"500\",\"msg\":\"store down\",\"errors\":[]}"));
                CosIdProtocolClient client = new CosIdProtocolClient(refused + "," + broken.address() + ","
                        + good.address(), "orders", "failover:1", options().listener(rec))) {
            check(client.distribute().machineId == 5, "distribute through failover");
            CosIdProtocolClient.Segment seg = client.segment("failover", 0, 1);
            long prev = 0;
            int n = 0;
            // Each request starts at a random server: draw until both bad ones were met.
            while (n < 20 || rec.failuresAt(refused) == 0 || rec.failuresAt(broken.address()) == 0) {
                check(n < 500, "in 500 IDs the refused port or the 500 server was never tried");
                long id = seg.nextId();
                check(id == prev + 1, "ID " + id + " after " + prev);
                prev = id;
                n++;
            }
            check(broken.count("PATCH", "/segments/") + broken.count("POST", "/segments/") > 0, "no request at 500");
            check(rec.lines.stream().anyMatch(l -> l.startsWith("failed " + broken.address() + " ")
                    && l.contains("answered 500")), "the 500 answer was not reported");
            ok("failover: " + n + " IDs of step 1 through a refused port (" + rec.failuresAt(refused)
                    + " failures) and a 500 server (" + rec.failuresAt(broken.address()) + ")");
        }
    }

    private static void givingUp() throws Exception {
        Recorder rec = new Recorder();
        String a = "127.0.0.1:" + closedPort();
        String b = "127.0.0.1:" + closedPort();
        try (Fake down = new Fake(s -> Answer.of(503, "down for maintenance"));
                CosIdProtocolClient client = new CosIdProtocolClient(a + "," + b + "," + down.address(), "orders",
                        "giveup:1", options().attempts(3).listener(rec))) {
            CosIdProtocolClient.CallFailedException e = expect(CosIdProtocolClient.CallFailedException.class,
                    () -> client.segment("x", 0, 10).nextId(), "no server works");
            String m = String.valueOf(e.getMessage());
            check(m.contains(a) && m.contains(b) && m.contains(down.address()), "not every server is named: " + m);
            check(m.contains("503") && m.contains("down for maintenance"), "the 503 answer is not in: " + m);
            check(rec.allFailures() == 3, rec.allFailures() + " attempts, not 3");
            check(e.getSuppressed().length == 2, "the earlier failures are not attached");
            expect(CosIdProtocolClient.CallFailedException.class, client::distribute, "distribute with no server");
            ok("giving up: " + m);
        }
    }

    // ---------------------------------------------------------------- segments

    private static void segmentsHandOut() throws Exception {
        FakeCosId cos = new FakeCosId();
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "seg:1", options())) {
            CosIdProtocolClient.Segment seg = client.segment("order", 1000, 10);
            for (long want = 1001; want <= 1030; want++) {
                long id = seg.nextId();
                check(id == want, "segment ID " + id + ", expected " + want);
            }
            List<Seen> creates = f.requests("POST", "/segments/distributor/orders/order");
            check(creates.size() == 1, creates.size() + " distributor creations, not 1");
            check("1000".equals(creates.get(0).query().get("offset")) && "10".equals(creates.get(0).query().get("step")),
                    "creation's query: " + creates.get(0).rawQuery());
            for (Seen s : f.requests("PATCH", "/segments/orders/order")) {
                check("step=10".equals(s.rawQuery()), "range query: " + s.rawQuery());
            }
            long other = client.segment("order", 1000, 10).nextId();
            check(other > 1030, "a second handle started at " + other + ", inside the first one's ranges");
            ok("segments: offset 1000 step 10 hands out 1001..1030 from (M-10, M]; distributor created once per handle");
        }
    }

    private static void segmentThreads() throws Exception {
        FakeCosId cos = new FakeCosId();
        Recorder rec = new Recorder();
        int threads = 8;
        int perThread = 5000;
        long[][] ids = new long[threads][perThread];
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "seg:2",
                        options().listener(rec))) {
            CosIdProtocolClient.Segment seg = client.segment("threads", 0, 100);
            runThreads(threads, t -> {
                for (int i = 0; i < perThread; i++) {
                    ids[t][i] = seg.nextId();
                }
            });
            check(f.count("POST", "/segments/distributor/") == 1, "the distributor was created more than once");
        }
        Set<Long> seen = new HashSet<>();
        for (long[] mine : ids) {
            for (int i = 0; i < mine.length; i++) {
                long id = mine[i];
                check(seen.add(id), "segment ID " + id + " handed out twice");
                if (i > 0) {
                    check(id > mine[i - 1], "a thread drew " + mine[i - 1] + " then " + id);
                }
                boolean inside = false;
                for (long[] r : rec.ranges) {
                    inside |= id > r[0] - r[1] && id <= r[0];
                }
                check(inside, "segment ID " + id + " is in no range fetched");
            }
        }
        ok("segment threads: " + threads + " x " + perThread + " distinct, increasing per thread, from "
                + rec.ranges.size() + " ranges");
    }

    private static void fetchAhead() throws Exception {
        FakeCosId cos = new FakeCosId();
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "seg:3", options())) {
            CosIdProtocolClient.Segment seg = client.segment("ahead", 0, 10);
            String ranges = "/segments/orders/ahead";
            for (long want = 1; want <= 4; want++) {
                check(seg.nextId() == want, "ID " + want);
            }
            Thread.sleep(300);
            check(f.count("PATCH", ranges) == 1, f.count("PATCH", ranges) + " ranges fetched with 4 of 10 used");
            check(seg.nextId() == 5, "ID 5");
            await(() -> f.count("PATCH", ranges) == 2, 5000, "the next range is fetched once 5 of 10 are used");
            for (long want = 6; want <= 10; want++) {
                check(seg.nextId() == want, "ID " + want + " from the first range");
            }
            check(seg.nextId() == 11, "ID 11 from the range fetched ahead");
            for (long want = 12; want <= 14; want++) {
                check(seg.nextId() == want, "ID " + want);
            }
            Thread.sleep(300);
            check(f.count("PATCH", ranges) == 2, f.count("PATCH", ranges) + " ranges fetched, 4 of the second used");
            check(seg.nextId() == 15, "ID 15");
            await(() -> f.count("PATCH", ranges) == 3, 5000, "the third range is fetched at half of the second");
            ok("fetch-ahead: the next range is asked for when half the current one is used (PATCHes 1, 2, 3"
                    + " at IDs 1, 5, 15), and used only after it");
        }
    }

    private static void rangeRefused() throws Exception {
        FakeCosId cos = new FakeCosId();
        cos.scripted.put("orders/bad", new ArrayDeque<>(List.of(100L, 150L)));
        try (Fake f = new Fake(cos);
                CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "seg:4", options())) {
            CosIdProtocolClient.Segment seg = client.segment("bad", 0, 100);
            for (long want = 1; want <= 100; want++) {
                check(seg.nextId() == want, "ID " + want);
            }
            IllegalStateException e = expect(IllegalStateException.class, seg::nextId,
                    "a range (50, 150] after (0, 100]");
            check(String.valueOf(e.getMessage()).contains("not above"), "message: " + e.getMessage());
            ok("range refused: " + e.getMessage());
        }
    }

    // ---------------------------------------------------------------- the wire

    private static void token() throws Exception {
        FakeCosId cos = new FakeCosId();
        try (Fake f = new Fake(cos)) {
            try (CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "token:1",
                    options().token("s3cret-token").guardInterval(Duration.ofMillis(200)))) {
                client.distribute();
                client.nextId();
                await(() -> f.count("PATCH", "/machines/") > 0, 10_000, "a guard");
                client.segment("tok", 0, 10).nextId();
                client.close(true);
            }
            for (String[] kind : new String[][] {{"POST", "/machines/"}, {"PATCH", "/machines/"},
                    {"DELETE", "/machines/"}, {"POST", "/segments/distributor/"}, {"PATCH", "/segments/orders/"}}) {
                check(f.count(kind[0], kind[1]) > 0, "no " + kind[0] + " " + kind[1]);
            }
            for (Seen s : f.seen) {
                check("Bearer s3cret-token".equals(s.auth()), s.method() + " " + s.path() + " carried " + s.auth());
            }
            int withToken = f.seen.size();
            try (CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "orders", "token:2", options())) {
                client.distribute();
                client.segment("tok", 0, 10).nextId();
            }
            for (Seen s : f.seen.subList(withToken, f.seen.size())) {
                check(s.auth() == null, "without a token, " + s.method() + " " + s.path() + " carried " + s.auth());
            }
            ok("token: all " + withToken + " requests (distribute, guard, revert, distributor, range) carried"
                    + " Authorization: Bearer s3cret-token; none without one");
        }
    }

    private static void urlEncoding() throws Exception {
        FakeCosId cos = new FakeCosId();
        try (Fake f = new Fake(cos)) {
            Path file;
            try (CosIdProtocolClient client = new CosIdProtocolClient(f.address(), "my ns", "host:8080", options())) {
                client.distribute();
                client.nextId();
                client.segment("my seq", 0, 10).nextId();
                file = client.stateFile();
            }
            Seen post = f.requests("POST", "/machines/").get(0);
            check(post.rawPath().equals("/machines/my%20ns"), "raw path " + post.rawPath());
            check(post.rawQuery().contains("instanceId=host%3A8080"), "raw query " + post.rawQuery());
            check("host:8080".equals(post.query().get("instanceId")), "instanceId " + post.query().get("instanceId"));
            Seen delete = f.requests("DELETE", "/machines/").get(0);
            check(delete.rawPath().equals("/machines/my%20ns") && delete.rawQuery().contains("instanceId=host%3A8080"),
                    "revert " + delete.rawPath() + "?" + delete.rawQuery());
            Seen create = f.requests("POST", "/segments/distributor/").get(0);
            check(create.rawPath().equals("/segments/distributor/my%20ns/my%20seq"), "raw path " + create.rawPath());
            Seen range = f.requests("PATCH", "/segments/").get(0);
            check(range.rawPath().equals("/segments/my%20ns/my%20seq"), "raw path " + range.rawPath());
            Path want = stateDir.resolve("my%20ns").resolve("host%3A8080.state");
            check(file.equals(want) && Files.isRegularFile(want), "state file " + file + ", expected " + want);
            ok("url-encoding: /machines/my%20ns?...instanceId=host%3A8080..., /segments/my%20ns/my%20seq, "
                    + stateDir.relativize(want));
        }
    }

    // ---------------------------------------------------------------- the driver

    private static final class Run {
        int exit;
        List<String> out;
        List<String> err;
    }

    private static Run runDriver(List<String> properties, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add("-Dcosid.stateDir=" + stateDir);
        command.add("-Dcosid.driver.timeoutSeconds=60");
        command.addAll(properties);
        command.add("CosIdProtocolDriver");
        command.addAll(List.of(args));
        Path out = Files.createTempFile(stateDir, "driver", ".out");
        Path err = Files.createTempFile(stateDir, "driver", ".err");
        Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(90, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the driver ran over 90 s: " + command);
        }
        Run r = new Run();
        r.exit = p.exitValue();
        r.out = Files.readAllLines(out);
        r.err = Files.readAllLines(err);
        return r;
    }

    private static void driver() throws Exception {
        FakeCosId cos = new FakeCosId();
        cos.machineId = 3;
        int threads = 4;
        int perThread = 2000;
        try (Fake f = new Fake(cos)) {
            String at = f.address();
            Run r = runDriver(List.of("-Dcosid.segmentStep=50", "-Dcosid.holdMillis=1500", "-Dcosid.guardMillis=300"),
                    at, "drv", "127.0.0.1:9999", Integer.toString(threads), Integer.toString(perThread));
            check(r.exit == 0, "driver exited " + r.exit + ": " + r.err);
            check(!r.out.isEmpty() && r.out.get(0).equals("machine 3 " + cos.handed.get()),
                    "first stdout line " + (r.out.isEmpty() ? "(none)" : r.out.get(0)));
            check(r.out.size() == 1 + 2 * threads * perThread, r.out.size() + " stdout lines");
            Set<Long> snowflakes = new HashSet<>();
            Set<Long> segmentIds = new HashSet<>();
            int line = 1;
            for (int t = 0; t < threads; t++) {
                for (String kind : new String[] {"s", "g"}) {
                    long prev = Long.MIN_VALUE;
                    for (int i = 0; i < perThread; i++, line++) {
                        String[] parts = r.out.get(line).split(" ");
                        check(parts.length == 3 && parts[0].equals(kind) && parts[1].equals(Integer.toString(t)),
                                "stdout line " + line + ": " + r.out.get(line) + ", expected " + kind + " " + t + " ID");
                        long id = Long.parseLong(parts[2]);
                        check(id > prev, "thread " + t + " drew " + kind + " " + prev + " then " + id);
                        prev = id;
                        if (kind.equals("s")) {
                            check(snowflakes.add(id) && machineOf(id, 10) == 3, "snowflake " + id);
                        } else {
                            check(segmentIds.add(id) && id >= 1 && id <= 2L * threads * perThread + 100,
                                    "segment ID " + id);
                        }
                    }
                }
            }
            String[] wanted = {"distributed " + at + " 3 " + cos.handed.get(), "distributor " + at + " 0 50",
                "segment " + at + " 50 50", "holding", "guarded " + at, "reverted " + at};
            for (String w : wanted) {
                check(r.err.contains(w), "stderr lacks " + w + ": " + r.err);
            }
            int holding = r.err.indexOf("holding");
            check(r.err.indexOf(wanted[0]) == 0, "stderr does not start with " + wanted[0] + ": " + r.err);
            check(r.err.subList(holding, r.err.size()).contains("guarded " + at), "no guard while holding: " + r.err);
            check(r.err.indexOf("reverted " + at) > holding, "reverted before holding: " + r.err);
            check(f.count("DELETE", "/machines/drv") == 1, "the driver did not revert");

            cos.distributeAnswer = Answer.of(400, M01);
            Run used = runDriver(List.of(), at, "drv", "127.0.0.1:9998", "1", "10");
            check(used.exit == 3 && used.err.contains("cosid-error M-01 machine ids are used up"),
                    "M-01: exit " + used.exit + ", stderr " + used.err);
            check(used.out.isEmpty(), "M-01: stdout " + used.out);

            Run down = runDriver(List.of("-Dcosid.attempts=1"), "127.0.0.1:" + closedPort(), "drv", "x:1", "1", "1");
            check(down.exit == 1 && down.err.stream().anyMatch(l -> l.startsWith("CosIdProtocolDriver: failed: ")),
                    "no server: exit " + down.exit + ", stderr " + down.err);

            Run usage = runDriver(List.of(), at, "drv");
            check(usage.exit == 2, "bad arguments: exit " + usage.exit);
            ok("driver: machine line, " + threads + " x " + perThread + " s and g lines, stderr log, holding,"
                    + " revert, exit 0; M-01 exit 3; no server exit 1; usage exit 2");
        }
    }
}
