// A client for Tinyid's segment protocol, written for uidgen's tests (see ../README.md).
//
//   TinyidProtocolClient client = new TinyidProtocolClient("h1:8080,h2:8080", token);
//   long id = client.nextId("order");
//
// For each biz type it fetches a segment with
//   POST http://SERVER/tinyid/id/nextSegmentIdSimple?token=T&bizType=B   (empty body)
// whose 200 answer is the line `currentId,loadingId,maxId,delta,remainder`, hands out
// the IDs in (currentId, maxId] that are ≡ remainder (mod delta), fetches the next
// segment on a background thread once an ID it hands out reaches loadingId, and moves
// to that segment when the current one is used up. Each fetch starts at a server picked
// at random from the list and, if it fails, tries the following servers in turn, at most
// `attempts` tries in all. nextId may be called from any number of threads.

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

public final class TinyidProtocolClient implements AutoCloseable {

    /** Told about every fetch, on the thread that made it (a taker or a preload thread). */
    public interface Listener {
        void fetched(String server, String bizType, Segment segment);

        void failed(String server, String bizType, Exception error);
    }

    /** No server gave a segment within the allowed attempts. */
    public static final class FetchException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        FetchException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** A range a server handed out: the IDs in (currentId, maxId] that are ≡ remainder (mod delta). */
    public static final class Segment {
        public final long currentId;
        public final long loadingId;
        public final long maxId;
        public final long delta;
        public final long remainder;
        private final AtomicLong next;
        private final AtomicBoolean preloadAsked = new AtomicBoolean();

        Segment(long currentId, long loadingId, long maxId, long delta, long remainder) {
            if (delta < 1) {
                throw new IllegalArgumentException("delta must be at least 1, not " + delta);
            }
            if (remainder < 0 || remainder >= delta) {
                throw new IllegalArgumentException("remainder must be in [0, delta), not " + remainder);
            }
            this.currentId = currentId;
            this.loadingId = loadingId;
            this.maxId = maxId;
            this.delta = delta;
            this.remainder = remainder;
            long first = firstAbove(currentId, delta, remainder);
            if (first > maxId) {
                throw new IllegalArgumentException("(" + currentId + ", " + maxId + "] holds no ID");
            }
            this.next = new AtomicLong(first);
        }

        /** The smallest id > after with id ≡ remainder (mod delta). */
        static long firstAbove(long after, long delta, long remainder) {
            long id = after + 1;
            return id + Math.floorMod(remainder - Math.floorMod(id, delta), delta);
        }

        /** Parses `currentId,loadingId,maxId,delta,remainder`. */
        static Segment parse(String line) throws IOException {
            String[] parts = line.trim().split(",", -1);
            if (parts.length != 5) {
                throw new IOException("expected currentId,loadingId,maxId,delta,remainder, got " + quote(line));
            }
            long[] v = new long[5];
            try {
                for (int i = 0; i < 5; i++) {
                    v[i] = Long.parseLong(parts[i].trim());
                }
                return new Segment(v[0], v[1], v[2], v[3], v[4]);
            } catch (IllegalArgumentException e) {
                throw new IOException("not a segment: " + quote(line) + " (" + e.getMessage() + ")", e);
            }
        }

        /** The next ID, or NONE once the segment is used up. */
        long take() {
            // Checked first so that takers of a used-up segment do not push `next` on forever.
            if (next.get() > maxId) {
                return NONE;
            }
            long id = next.getAndAdd(delta);
            return id <= maxId ? id : NONE;
        }

        @Override
        public String toString() {
            return currentId + "," + loadingId + "," + maxId + "," + delta + "," + remainder;
        }
    }

    /** Not an ID: every ID is above a currentId. */
    private static final long NONE = Long.MIN_VALUE;

    private final List<String> servers;
    private final String token;
    private final int connectTimeoutMs;
    private final int readTimeoutMs;
    private final int attempts;
    private final Listener listener;
    private final ExecutorService preloader;
    private final Map<String, BizType> bizTypes = new ConcurrentHashMap<>();

    public TinyidProtocolClient(String servers, String token) {
        this(servers, token, 5000, 5000, 3, null);
    }

    /**
     * @param servers   `host:port` entries (optionally `host:port/prefix`), comma-separated
     * @param attempts  fetch tries in all before nextId gives up (at least 1)
     * @param listener  told about each fetch, or null
     */
    public TinyidProtocolClient(String servers, String token, int connectTimeoutMs, int readTimeoutMs,
            int attempts, Listener listener) {
        List<String> list = new ArrayList<>();
        for (String s : servers.split(",")) {
            s = s.trim();
            if (!s.isEmpty()) {
                list.add(s.startsWith("http://") ? s.substring("http://".length()) : s);
            }
        }
        if (list.isEmpty()) {
            throw new IllegalArgumentException("no server in " + quote(servers));
        }
        if (attempts < 1) {
            throw new IllegalArgumentException("attempts must be at least 1");
        }
        this.servers = List.copyOf(list);
        this.token = token;
        this.connectTimeoutMs = connectTimeoutMs;
        this.readTimeoutMs = readTimeoutMs;
        this.attempts = attempts;
        this.listener = listener;
        AtomicInteger threadNumber = new AtomicInteger();
        this.preloader = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "tinyid-preload-" + threadNumber.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /** The next ID of bizType. Throws FetchException when no server gives a segment. */
    public long nextId(String bizType) {
        return bizTypes.computeIfAbsent(bizType, BizType::new).nextId();
    }

    @Override
    public void close() {
        preloader.shutdownNow();
    }

    /** One biz type's segments: the one handed out now and the one being fetched after it. */
    private final class BizType {
        private final String name;
        private volatile Segment current;
        /** The segment after `current`, once asked for; guarded by `this`. */
        private CompletableFuture<Segment> following;

        BizType(String name) {
            this.name = name;
        }

        long nextId() {
            while (true) {
                Segment s = current;
                long id = s == null ? NONE : s.take();
                if (id != NONE) {
                    if (id >= s.loadingId && s.preloadAsked.compareAndSet(false, true)) {
                        preload(s);
                    }
                    return id;
                }
                moveOn(s);
            }
        }

        /** Starts fetching the segment after s in the background. */
        private synchronized void preload(Segment s) {
            if (current == s && following == null) {
                following = CompletableFuture.supplyAsync(() -> fetch(name), preloader);
            }
        }

        /** Replaces the used-up segment s (null: none yet) unless another thread did. */
        private synchronized void moveOn(Segment s) {
            if (current != s) {
                return;
            }
            Segment after = null;
            if (following != null) {
                try {
                    after = following.get();
                } catch (ExecutionException e) {
                    // The background fetch failed (its failures went to the listener);
                    // fetch here instead, which throws if that fails too.
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new FetchException("interrupted while waiting for a segment of " + name, e);
                } finally {
                    following = null;
                }
            }
            current = after != null ? after : fetch(name);
        }
    }

    /** A segment of bizType, from a random server first and then the following ones. */
    Segment fetch(String bizType) {
        int start = ThreadLocalRandom.current().nextInt(servers.size());
        List<Exception> errors = new ArrayList<>();
        for (int attempt = 0; attempt < attempts; attempt++) {
            String server = servers.get((start + attempt) % servers.size());
            Segment segment;
            try {
                segment = Segment.parse(post(server, bizType));
            } catch (IOException | RuntimeException e) {
                errors.add(e);
                if (listener != null) {
                    listener.failed(server, bizType, e);
                }
                continue;
            }
            if (listener != null) {
                listener.fetched(server, bizType, segment);
            }
            return segment;
        }
        FetchException e = new FetchException("no segment of " + quote(bizType) + " after " + attempts
                + " attempt(s) on " + servers + ": " + errors.get(errors.size() - 1), errors.get(errors.size() - 1));
        for (Exception earlier : errors.subList(0, errors.size() - 1)) {
            e.addSuppressed(earlier);
        }
        throw e;
    }

    private String post(String server, String bizType) throws IOException {
        String url = "http://" + server + "/tinyid/id/nextSegmentIdSimple?token="
                + URLEncoder.encode(token, StandardCharsets.UTF_8) + "&bizType="
                + URLEncoder.encode(bizType, StandardCharsets.UTF_8);
        HttpURLConnection http = (HttpURLConnection) URI.create(url).toURL().openConnection();
        http.setConnectTimeout(connectTimeoutMs);
        http.setReadTimeout(readTimeoutMs);
        http.setRequestMethod("POST");
        http.setDoOutput(true);
        http.setFixedLengthStreamingMode(0);
        // An empty body: every parameter is in the query.
        http.getOutputStream().close();
        int status = http.getResponseCode();
        if (status != 200) {
            InputStream err = http.getErrorStream();
            String text = err == null ? "" : readAll(err);
            throw new IOException(server + " answered " + status + ": " + quote(text.trim()));
        }
        // Read to the end and not disconnect()ed, so the connection can be reused.
        return readAll(http.getInputStream());
    }

    private static String readAll(InputStream in) throws IOException {
        try (InputStream stream = in) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            stream.transferTo(out);
            return out.toString(StandardCharsets.UTF_8);
        }
    }

    private static String quote(String s) {
        return s.length() > 200 ? '"' + s.substring(0, 200) + "...\"" : '"' + s + '"';
    }
}
