// Checks TinyidProtocolClient against fake servers in this JVM (see ../README.md).
//
//   java -cp OUTDIR TinyidProtocolSelfCheck
//
// Prints "self-check passed" and exits 0, or prints what went wrong and exits 1.
//
// - Parsing: a well-formed line, the first ID of a segment, and lines that are refused.
// - Handing out: servers [refused connection, HTTP 500, good]; the good one answers
//   segments of 300 with delta 3 and remainder 2. 8 threads draw 5,000 IDs each: all
//   distinct, all ≡ 2 (mod 3), each inside a segment that was fetched, some segments
//   fetched ahead on a preload thread, and fetches that failed were retried elsewhere.
// - Giving up: with only unreachable servers, nextId throws after the allowed attempts.

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

public final class TinyidProtocolSelfCheck {

    private static final String TOKEN = "self-check-token";
    private static final String BIZ = "order";

    public static void main(String[] args) {
        // The JDK's server writes headers and body apart; without this, Nagle's algorithm
        // and delayed ACKs hold each answer back by ~40 ms. Read when the server starts.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        try {
            parsing();
            handingOut();
            givingUp();
            System.out.println("self-check passed");
            System.exit(0);
        } catch (Throwable t) {
            System.err.println("TinyidProtocolSelfCheck: " + t);
            t.printStackTrace();
            System.exit(1);
        }
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    private static void parsing() throws IOException {
        TinyidProtocolClient.Segment s = TinyidProtocolClient.Segment.parse("100,120,200,1,0\n");
        check(s.currentId == 100 && s.loadingId == 120 && s.maxId == 200 && s.delta == 1 && s.remainder == 0,
                "parsed " + s);
        check(s.take() == 101, "the first ID of (100, 200] is 101");
        check(TinyidProtocolClient.Segment.firstAbove(10, 3, 2) == 11, "first above 10, ≡ 2 (mod 3)");
        check(TinyidProtocolClient.Segment.firstAbove(11, 3, 2) == 14, "first above 11, ≡ 2 (mod 3)");
        check(TinyidProtocolClient.Segment.firstAbove(0, 4, 0) == 4, "first above 0, ≡ 0 (mod 4)");
        for (String bad : new String[] {"", "error: no such tag", "1,2,3,4", "1,2,3,4,5,6", "1,2,x,1,0",
                "0,0,10,0,0", "0,0,10,2,2", "10,10,11,3,0"}) {
            try {
                TinyidProtocolClient.Segment.parse(bad);
                throw new AssertionError("accepted " + bad);
            } catch (IOException expected) {
                // refused, as it should be
            }
        }
    }

    /** A port nothing listens on. */
    private static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static HttpServer server(int status, AtomicLong counter, AtomicInteger requests) throws IOException {
        HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        http.createContext("/tinyid/id/nextSegmentIdSimple", exchange -> {
            requests.incrementAndGet();
            String query = exchange.getRequestURI().getRawQuery();
            byte[] body;
            int code = status;
            if (!"POST".equals(exchange.getRequestMethod())
                    || !("token=" + TOKEN + "&bizType=" + BIZ).equals(query)) {
                code = 400;
                body = ("error: unexpected " + exchange.getRequestMethod() + " ?" + query).getBytes();
            } else if (code == 200) {
                long current = counter.getAndAdd(300);
                body = (current + "," + (current + 60) + "," + (current + 300) + ",3,2").getBytes();
            } else {
                body = "error: the store is down\n".getBytes(StandardCharsets.UTF_8);
            }
            exchange.getRequestBody().readAllBytes();
            exchange.sendResponseHeaders(code, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        http.setExecutor(Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "fake-server");
            t.setDaemon(true);
            return t;
        }));
        http.start();
        return http;
    }

    private static void handingOut() throws Exception {
        AtomicLong counter = new AtomicLong(1000);
        AtomicInteger goodRequests = new AtomicInteger();
        AtomicInteger badRequests = new AtomicInteger();
        HttpServer good = server(200, counter, goodRequests);
        HttpServer broken = server(500, counter, badRequests);
        String servers = "127.0.0.1:" + closedPort() + ",127.0.0.1:" + broken.getAddress().getPort()
                + ",127.0.0.1:" + good.getAddress().getPort();
        List<TinyidProtocolClient.Segment> segments = new CopyOnWriteArrayList<>();
        AtomicInteger preloaded = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        TinyidProtocolClient.Listener listener = new TinyidProtocolClient.Listener() {
            @Override
            public void fetched(String server, String biz, TinyidProtocolClient.Segment segment) {
                segments.add(segment);
                if (Thread.currentThread().getName().startsWith("tinyid-preload-")) {
                    preloaded.incrementAndGet();
                }
            }

            @Override
            public void failed(String server, String biz, Exception error) {
                failures.incrementAndGet();
            }
        };
        int threads = 8;
        int perThread = 5000;
        long[][] ids = new long[threads][perThread];
        try (TinyidProtocolClient client = new TinyidProtocolClient(servers, TOKEN, 1000, 1000, 3, listener)) {
            CountDownLatch start = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread[] workers = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                long[] mine = ids[t];
                workers[t] = new Thread(() -> {
                    try {
                        start.await();
                        for (int i = 0; i < perThread; i++) {
                            mine[i] = client.nextId(BIZ);
                        }
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
                throw new AssertionError("a taker failed", failure.get());
            }
        } finally {
            good.stop(0);
            broken.stop(0);
        }
        Set<Long> seen = new HashSet<>();
        for (long[] mine : ids) {
            for (long id : mine) {
                check(seen.add(id), "ID " + id + " handed out twice");
                check(id % 3 == 2, "ID " + id + " is not ≡ 2 (mod 3)");
                boolean inside = false;
                for (TinyidProtocolClient.Segment s : segments) {
                    if (id > s.currentId && id <= s.maxId) {
                        inside = true;
                        break;
                    }
                }
                check(inside, "ID " + id + " is in no segment fetched");
            }
        }
        check(seen.size() == threads * perThread, "count " + seen.size());
        // (A preload still in flight at close may have reached the server unrecorded.)
        check(segments.size() <= goodRequests.get(), segments.size() + " segments from "
                + goodRequests.get() + " good answers");
        check(preloaded.get() > 0, "no segment was fetched ahead of time");
        check(failures.get() > 0 && badRequests.get() > 0, "the unreachable and the broken server were never tried");
        System.out.println("handing out: " + seen.size() + " IDs from " + segments.size() + " segments ("
                + preloaded.get() + " fetched ahead), " + failures.get() + " failed fetches retried");
    }

    private static void givingUp() throws IOException {
        String servers = "127.0.0.1:" + closedPort() + ",127.0.0.1:" + closedPort();
        AtomicInteger failures = new AtomicInteger();
        TinyidProtocolClient.Listener listener = new TinyidProtocolClient.Listener() {
            @Override
            public void fetched(String server, String biz, TinyidProtocolClient.Segment segment) {
                throw new AssertionError("fetched from " + server);
            }

            @Override
            public void failed(String server, String biz, Exception error) {
                failures.incrementAndGet();
            }
        };
        try (TinyidProtocolClient client = new TinyidProtocolClient(servers, TOKEN, 1000, 1000, 4, listener)) {
            client.nextId(BIZ);
            throw new AssertionError("an ID without a server");
        } catch (TinyidProtocolClient.FetchException expected) {
            check(failures.get() == 4, failures.get() + " attempts, not 4");
            check(expected.getSuppressed().length == 3, "the earlier failures are not attached");
        }
    }
}
