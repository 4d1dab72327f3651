// A client for CosId's "proxy" HTTP protocol, written for uidgen's tests (see ../README.md).
//
//   CosIdProtocolClient client = new CosIdProtocolClient("h1:8080,h2:8080", "orders",
//           "10.0.0.7:8080", new CosIdProtocolClient.Options());
//   client.distribute();                                // a machine ID, guarded from now on
//   long id = client.nextId();                          // a snowflake ID made here
//   long n = client.segment("order_no", 0, 100).nextId();  // an ID of a segment
//   client.close();                                     // stops guarding, gives it back
//
// Machine IDs: POST /machines/{ns} distributes one (idempotent per instanceId), PATCH
// guards it every D/3, DELETE reverts it. Snowflake IDs are made here with CosId's
// millisecond layout. Segments: POST /segments/distributor/{ns}/{name} creates the
// distributor, PATCH /segments/{ns}/{name}?step=S answers a maximum M and the IDs
// (M−S, M] are this client's. Each request starts at a random server and moves on to the
// next one on failure, at most `attempts` tries in all. Everything is thread-safe.

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

public final class CosIdProtocolClient implements AutoCloseable {

    /** CosId's snowflake epoch: 2019-12-24T16:00:00Z, in Unix ms. */
    public static final long EPOCH = 1577203200000L;
    /** CosId's millisecond snowflake: 12 bits of sequence. */
    public static final int SEQUENCE_BITS = 12;
    private static final long SEQUENCE_MASK = (1L << SEQUENCE_BITS) - 1;

    /** Told about every remote call, on the thread that made it. All default to nothing. */
    public interface Listener {
        default void distributed(String server, long machineId, long lastTimeStamp) {
        }

        default void guarded(String server) {
        }

        default void reverted(String server) {
        }

        default void distributorCreated(String server, String name, long offset, long step) {
        }

        default void segment(String server, String name, long maxId, long step) {
        }

        /** One attempt failed (the call may still succeed on another server). */
        default void failed(String server, Exception error) {
        }

        /** A whole guard round failed (every attempt), or the state file could not be written. */
        default void guardFailed(Exception error) {
        }
    }

    /** The server answered 400 with one of CosId's machine codes (M-01, M-02, M-03). */
    public static final class CosIdErrorException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        public final String code;
        public final String msg;
        public final String server;

        CosIdErrorException(String server, String code, String msg) {
            super(code + " " + msg + " (from " + server + ")");
            this.server = server;
            this.code = code;
            this.msg = msg;
        }
    }

    /** Every attempt of a call failed; the message names each server tried and its answer. */
    public static final class CallFailedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CallFailedException(String message, List<Exception> errors) {
            super(message, errors.isEmpty() ? null : errors.get(errors.size() - 1));
            for (Exception earlier : errors.subList(0, Math.max(0, errors.size() - 1))) {
                addSuppressed(earlier);
            }
        }
    }

    /**
     * nextId refuses: the machine ID may be another instance's (a guard answered M-02 or
     * M-03: the cause), or it went unguarded past its fence.
     */
    public static final class MachineFencedException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        MachineFencedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** A server's answer to distribute: `{"machineId":…,"lastTimeStamp":…}`. */
    public static final class MachineState {
        public final long machineId;
        /** Unix ms; this instance's IDs must be made after it. */
        public final long lastTimeStamp;

        MachineState(long machineId, long lastTimeStamp) {
            this.machineId = machineId;
            this.lastTimeStamp = lastTimeStamp;
        }

        static MachineState parse(String body) throws IOException {
            Object json = Json.parse(body);
            if (!(json instanceof Map)) {
                throw new IOException("expected {\"machineId\":…,\"lastTimeStamp\":…}, got " + quote(body));
            }
            Map<?, ?> map = (Map<?, ?>) json;
            return new MachineState(Json.whole(map.get("machineId"), "machineId", body),
                    Json.whole(map.get("lastTimeStamp"), "lastTimeStamp", body));
        }

        @Override
        public String toString() {
            return "machineId " + machineId + ", lastTimeStamp " + lastTimeStamp;
        }
    }

    /** Settings; each setter returns this. Defaults as in the README. */
    public static final class Options {
        int machineBit = 10;
        Duration safeGuard = Duration.ofMinutes(5);
        boolean stable;
        Duration guardInterval; // null: safeGuard / 3
        Duration clockWait = Duration.ofSeconds(10);
        Path stateDir = Path.of(System.getProperty("java.io.tmpdir"), "cosid-protocol-client");
        String token;
        Duration connectTimeout = Duration.ofSeconds(5);
        Duration readTimeout = Duration.ofSeconds(5);
        int attempts = 3;
        boolean revertOnClose = true;
        Listener listener;

        public Options machineBit(int bits) {
            machineBit = bits;
            return this;
        }

        public Options safeGuard(Duration d) {
            safeGuard = d;
            return this;
        }

        public Options stable(boolean s) {
            stable = s;
            return this;
        }

        public Options guardInterval(Duration d) {
            guardInterval = d;
            return this;
        }

        /** How long a clock behind the machine ID's last time may be waited out. */
        public Options clockWait(Duration d) {
            clockWait = d;
            return this;
        }

        public Options stateDir(Path dir) {
            stateDir = dir;
            return this;
        }

        /** Sent as `Authorization: Bearer TOKEN`; null or empty: none. */
        public Options token(String t) {
            token = t;
            return this;
        }

        public Options connectTimeout(Duration d) {
            connectTimeout = d;
            return this;
        }

        public Options readTimeout(Duration d) {
            readTimeout = d;
            return this;
        }

        /** Tries in all, across the servers, before a call gives up (at least 1). */
        public Options attempts(int n) {
            attempts = n;
            return this;
        }

        public Options revertOnClose(boolean r) {
            revertOnClose = r;
            return this;
        }

        public Options listener(Listener l) {
            listener = l;
            return this;
        }
    }

    private static final Listener SILENT = new Listener() {
    };

    private final List<String> servers;
    private final String namespace;
    private final String instanceId;
    private final int machineBit;
    private final int timestampBits;
    private final Duration safeGuard;
    private final boolean stable;
    private final long guardIntervalMs;
    /** D − D/5: how long after a guard (or distribute) was sent the machine ID is used. */
    private final long leaseNanos;
    private final long clockWaitMs;
    private final Path stateDir;
    private final String token;
    private final Duration readTimeout;
    private final int attempts;
    private final boolean revertOnClose;
    private final Listener listener;
    private final HttpClient http;
    private final ExecutorService background;

    /** Serializes distribute and close. */
    private final Object lifecycle = new Object();
    /** Guards the generator: machineId, lastMs, sequence. */
    private final Object idLock = new Object();
    private final Object stateFileLock = new Object();
    private long machineId = -1;
    private long lastMs;
    private long sequence;
    /** System.nanoTime() past which nextId refuses; moved only by distribute and the guard. */
    private volatile long fenceAtNanos;
    /** The guard's M-02/M-03 answer, once there was one. */
    private volatile CosIdErrorException lost;
    private volatile boolean closed;
    private Thread guardThread;

    public CosIdProtocolClient(String servers, String namespace, String instanceId, Options options) {
        List<String> list = new ArrayList<>();
        for (String s : servers.split(",")) {
            s = s.trim();
            if (s.startsWith("http://")) {
                s = s.substring("http://".length());
            }
            while (s.endsWith("/")) {
                s = s.substring(0, s.length() - 1);
            }
            if (!s.isEmpty()) {
                list.add(s);
            }
        }
        if (list.isEmpty()) {
            throw new IllegalArgumentException("no server in " + quote(servers));
        }
        if (options.attempts < 1) {
            throw new IllegalArgumentException("attempts must be at least 1, not " + options.attempts);
        }
        if (options.machineBit < 1 || options.machineBit > 31) {
            throw new IllegalArgumentException("machineBit must be from 1 to 31, not " + options.machineBit);
        }
        // CosId's millisecond layout: the sign bit stays 0, the time takes what is left.
        this.timestampBits = 63 - options.machineBit - SEQUENCE_BITS;
        if (System.currentTimeMillis() - EPOCH >= 1L << timestampBits) {
            throw new IllegalArgumentException("machineBit " + options.machineBit + " leaves " + timestampBits
                    + " bits of time, too few to hold today");
        }
        long guardMs = options.safeGuard.toMillis();
        if (guardMs < 5) {
            throw new IllegalArgumentException("safeGuard " + options.safeGuard + " is too short");
        }
        this.servers = List.copyOf(list);
        this.namespace = namespace;
        this.instanceId = instanceId;
        this.machineBit = options.machineBit;
        this.safeGuard = options.safeGuard;
        this.stable = options.stable;
        this.guardIntervalMs = options.guardInterval != null ? Math.max(1, options.guardInterval.toMillis())
                : Math.max(1, guardMs / 3);
        this.leaseNanos = TimeUnit.MILLISECONDS.toNanos(guardMs - guardMs / 5);
        this.clockWaitMs = options.clockWait.toMillis();
        this.stateDir = options.stateDir;
        this.token = options.token == null || options.token.isEmpty() ? null : options.token;
        this.readTimeout = options.readTimeout;
        this.attempts = options.attempts;
        this.revertOnClose = options.revertOnClose;
        this.listener = options.listener != null ? options.listener : SILENT;
        // HTTP/1.1 only: the JDK's default (HTTP/2) would first ask plain-HTTP servers to upgrade.
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(options.connectTimeout).build();
        AtomicInteger threadNumber = new AtomicInteger();
        this.background = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "cosid-segment-" + threadNumber.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    // ---------------------------------------------------------------- machine ID

    /**
     * Asks a server for a machine ID, starts guarding it, and waits until the clock is past
     * the time its IDs must start after. Always asks the server, even when a local state
     * exists: the server is the authority, and a cached machine ID may have been given away.
     */
    public MachineState distribute() {
        synchronized (lifecycle) {
            if (closed) {
                throw new IllegalStateException("closed");
            }
            if (guardThread != null) {
                throw new IllegalStateException("a machine ID was distributed already");
            }
            long sentNanos = System.nanoTime();
            Reply<MachineState> reply = call("POST", machinesPath(),
                    query("machineBit", Integer.toString(machineBit), "instanceId", instanceId, "stable",
                            Boolean.toString(stable), "safeGuardDuration", safeGuard.toString()),
                    MachineState::parse);
            MachineState state = reply.value;
            listener.distributed(reply.server, state.machineId, state.lastTimeStamp);
            if (state.machineId < 0 || state.machineId >= 1L << machineBit || state.lastTimeStamp < 0) {
                revertQuietly();
                throw new IllegalStateException(reply.server + " distributed " + state
                        + ", which does not fit " + machineBit + " machine bits");
            }
            // Our own record of how far this machine ID was used, if it is the same machine ID:
            // the server may not have seen our last IDs (we were killed between guards).
            long local = readState(state.machineId);
            long floor = Math.max(state.lastTimeStamp, local);
            synchronized (idLock) {
                machineId = state.machineId;
                lastMs = floor;
                // As if `floor` were used up: the first ID is made after it, never at it.
                sequence = SEQUENCE_MASK;
            }
            fenceAtNanos = sentNanos + leaseNanos;
            // Guarding starts before the wait: a short safeGuard could lapse during it.
            guardThread = new Thread(this::guardLoop, "cosid-guard");
            guardThread.setDaemon(true);
            guardThread.start();
            try {
                waitForClock(floor, state.lastTimeStamp, local);
            } catch (RuntimeException e) {
                stopGuard();
                guardThread = null;
                revertQuietly();
                synchronized (idLock) {
                    machineId = -1;
                }
                throw e;
            }
            return state;
        }
    }

    /** Waits until System.currentTimeMillis() > floor, unless that takes longer than allowed. */
    private void waitForClock(long floor, long serverTs, long localTs) {
        long started = System.nanoTime();
        while (true) {
            long now = System.currentTimeMillis();
            if (now > floor) {
                return;
            }
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            // Fails at once when the gap alone is over the bound: waiting could not help.
            if (floor - now + waited > clockWaitMs) {
                throw new IllegalStateException("the clock reads " + now + " ms but the machine ID was last used at "
                        + floor + " ms (server's lastTimeStamp " + serverTs + ", local state "
                        + (localTs < 0 ? "none" : Long.toString(localTs)) + "): more than the allowed "
                        + clockWaitMs + " ms behind");
            }
            sleep(Math.min(floor - now + 1, 50));
        }
    }

    /** The next snowflake ID. Throws once the machine ID may no longer be this client's. */
    public long nextId() {
        synchronized (idLock) {
            long waitStarted = 0;
            boolean waiting = false;
            while (true) {
                // The time first, then the fence: a pause between the two is caught by the
                // fence, and an ID stamped before the check is one the lease covered.
                long now = System.currentTimeMillis();
                checkUsable();
                if (now > lastMs) {
                    lastMs = now;
                    sequence = 0;
                    return compose(now, 0);
                }
                if (now == lastMs && sequence < SEQUENCE_MASK) {
                    sequence++;
                    return compose(now, sequence);
                }
                // This ms's sequence is used up, or the clock is behind the last ID's time
                // (it stepped back): wait for it, bounded, rather than reuse a time.
                if (!waiting) {
                    waiting = true;
                    waitStarted = System.nanoTime();
                }
                long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - waitStarted);
                if (lastMs - now + waited > clockWaitMs) {
                    throw new IllegalStateException("the clock reads " + now + " ms, behind the last ID's time "
                            + lastMs + " ms by more than the allowed " + clockWaitMs + " ms");
                }
                if (lastMs - now > 1) {
                    sleep(Math.min(lastMs - now, 20));
                } else {
                    Thread.onSpinWait();
                }
            }
        }
    }

    private void checkUsable() {
        if (closed) {
            throw new IllegalStateException("closed");
        }
        if (machineId < 0) {
            throw new IllegalStateException("no machine ID: call distribute() first");
        }
        CosIdErrorException gone = lost;
        if (gone != null) {
            throw new MachineFencedException("machine ID " + machineId + " may be another instance's now: a guard was"
                    + " answered " + gone.code + " " + gone.msg, gone);
        }
        if (System.nanoTime() - fenceAtNanos >= 0) {
            throw new MachineFencedException("machine ID " + machineId + " went unguarded: no guard sent in the last "
                    + TimeUnit.NANOSECONDS.toMillis(leaseNanos) + " ms (safeGuard " + safeGuard
                    + " less a fifth) succeeded", null);
        }
    }

    private long compose(long ms, long seq) {
        long time = ms - EPOCH;
        if (time < 0 || time >= 1L << timestampBits) {
            throw new IllegalStateException("time " + ms + " ms does not fit " + timestampBits + " bits from the epoch");
        }
        return (time << (machineBit + SEQUENCE_BITS)) | (machineId << SEQUENCE_BITS) | seq;
    }

    private void guardLoop() {
        while (!closed) {
            try {
                Thread.sleep(guardIntervalMs);
            } catch (InterruptedException e) {
                return;
            }
            long sentNanos = System.nanoTime();
            try {
                Reply<Void> reply = call("PATCH", machinesPath(), query("instanceId", instanceId, "stable",
                        Boolean.toString(stable), "safeGuardDuration", safeGuard.toString()), CosIdProtocolClient::none);
                // Counted from when it was sent: the server may have received it at once.
                long fence = sentNanos + leaseNanos;
                if (fence - fenceAtNanos > 0) {
                    fenceAtNanos = fence;
                }
                listener.guarded(reply.server);
            } catch (CosIdErrorException e) {
                if (e.code.equals("M-02") || e.code.equals("M-03")) {
                    lost = e;
                    listener.guardFailed(e);
                    writeStateLogged();
                    return; // it is not ours to guard any more
                }
                listener.guardFailed(e);
            } catch (RuntimeException e) {
                if (closed || Thread.currentThread().isInterrupted()) {
                    return;
                }
                listener.guardFailed(e);
            }
            writeStateLogged();
        }
    }

    private void writeStateLogged() {
        try {
            writeState();
        } catch (IOException e) {
            listener.guardFailed(e);
        }
    }

    private void stopGuard() {
        Thread t = guardThread;
        if (t == null) {
            return;
        }
        t.interrupt();
        try {
            t.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops guarding, writes the local state and reverts unless the options say not to. */
    @Override
    public void close() {
        close(revertOnClose);
    }

    /**
     * Stops guarding, writes the local state and, when revert is true, gives the machine
     * ID back (not when a guard learned it is no longer ours). Throws CosIdErrorException or
     * CallFailedException if the revert fails.
     */
    public void close(boolean revert) {
        synchronized (lifecycle) {
            if (closed) {
                return;
            }
            closed = true;
            background.shutdownNow();
            stopGuard();
            long id;
            synchronized (idLock) {
                id = machineId;
            }
            if (id < 0) {
                return;
            }
            IOException stateError = null;
            try {
                writeState();
            } catch (IOException e) {
                stateError = e;
            }
            if (revert && lost == null) {
                listener.reverted(revertCall().server);
            }
            if (stateError != null) {
                throw new UncheckedIOException("writing " + stateFile(), stateError);
            }
        }
    }

    private Reply<Void> revertCall() {
        return call("DELETE", machinesPath(), query("instanceId", instanceId, "stable", Boolean.toString(stable),
                "safeGuardDuration", safeGuard.toString()), CosIdProtocolClient::none);
    }

    private void revertQuietly() {
        try {
            listener.reverted(revertCall().server);
        } catch (RuntimeException e) {
            // Already told to the listener, attempt by attempt; the lease lapses anyway.
        }
    }

    /** The machine ID, or -1 before distribute. */
    public long machineId() {
        synchronized (idLock) {
            return machineId;
        }
    }

    /** Milliseconds until nextId refuses for want of a guard (negative: past it). */
    public long millisUntilFence() {
        return TimeUnit.NANOSECONDS.toMillis(fenceAtNanos - System.nanoTime());
    }

    /** The guard's M-02/M-03 answer, or null. */
    public CosIdErrorException lost() {
        return lost;
    }

    public int machineBit() {
        return machineBit;
    }

    // ---------------------------------------------------------------- local state

    /** `{stateDir}/{ns}/{instance}.state`, both URL-encoded. */
    public Path stateFile() {
        return stateDir.resolve(fileName(namespace)).resolve(fileName(instanceId) + ".state");
    }

    private static String fileName(String s) {
        String e = encode(s);
        // "." and ".." are the only encoded names a path would not take literally.
        return e.equals(".") || e.equals("..") ? e.replace(".", "%2E") : e;
    }

    /** The saved lastTimeStamp if the local state names this machine ID, else -1. */
    private long readState(long id) {
        String text;
        try {
            text = Files.readString(stateFile(), StandardCharsets.UTF_8).trim();
        } catch (NoSuchFileException e) {
            return -1;
        } catch (IOException e) {
            listener.guardFailed(e);
            return -1;
        }
        String[] parts = text.split("\\|", -1);
        try {
            if (parts.length == 2 && Long.parseLong(parts[0].trim()) == id) {
                return Long.parseLong(parts[1].trim());
            }
        } catch (NumberFormatException e) {
            // A damaged file says nothing; the server's lastTimeStamp stands.
        }
        return -1;
    }

    /** `machineId|lastTimeStamp`, the latter the time of the last ID made (or the start floor). */
    private void writeState() throws IOException {
        long id;
        long ms;
        synchronized (idLock) {
            id = machineId;
            ms = lastMs;
        }
        if (id < 0) {
            return;
        }
        synchronized (stateFileLock) {
            Path file = stateFile();
            Files.createDirectories(file.getParent());
            // Written aside and moved over, so a kill never leaves half a file.
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.writeString(tmp, id + "|" + ms, StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
    }

    // ---------------------------------------------------------------- segments

    /** A handle on the segment {namespace}/{name}; its distributor is created on first use. */
    public Segment segment(String name, long offset, long step) {
        if (step < 1) {
            throw new IllegalArgumentException("step must be at least 1, not " + step);
        }
        if (offset < 0) {
            throw new IllegalArgumentException("offset must not be negative, not " + offset);
        }
        return new Segment(name, offset, step);
    }

    /** Not an ID: no range reaches down to it. */
    private static final long NONE = Long.MIN_VALUE;

    /** The IDs (low, max], handed out in order. */
    private static final class Range {
        final long low;
        final long max;
        final String server;
        final AtomicLong next;
        final AtomicBoolean aheadAsked = new AtomicBoolean();

        Range(long low, long max, String server) {
            this.low = low;
            this.max = max;
            this.server = server;
            this.next = new AtomicLong(low + 1);
        }

        long take() {
            // Checked first so that takers of a used-up range do not push `next` on forever.
            if (next.get() > max) {
                return NONE;
            }
            long id = next.getAndIncrement();
            return id <= max ? id : NONE;
        }

        @Override
        public String toString() {
            return "(" + low + ", " + max + "] from " + server;
        }
    }

    /** One segment's ranges: the one handed out and the one fetched after it. Thread-safe. */
    public final class Segment {
        private final String name;
        private final long offset;
        private final long step;
        private final Object createLock = new Object();
        private boolean created; // guarded by createLock
        private volatile Range current;
        private CompletableFuture<Range> following; // guarded by this

        Segment(String name, long offset, long step) {
            this.name = name;
            this.offset = offset;
            this.step = step;
        }

        public String name() {
            return name;
        }

        /** The next ID of the segment: strictly above every earlier one of this handle. */
        public long nextId() {
            while (true) {
                if (closed) {
                    throw new IllegalStateException("closed");
                }
                Range r = current;
                long id = r == null ? NONE : r.take();
                if (id != NONE) {
                    // Half used: fetch the next range now, so takers seldom wait on the network.
                    if ((id - r.low) * 2 >= step && r.aheadAsked.compareAndSet(false, true)) {
                        fetchAhead(r);
                    }
                    return id;
                }
                moveOn(r);
            }
        }

        private synchronized void fetchAhead(Range r) {
            if (current == r && following == null) {
                try {
                    following = CompletableFuture.supplyAsync(this::fetch, background);
                } catch (RejectedExecutionException e) {
                    // Closing: nextId says so.
                }
            }
        }

        /** Replaces the used-up range (null: none yet) unless another thread did. */
        private synchronized void moveOn(Range used) {
            if (current != used) {
                return;
            }
            Range next = null;
            if (following != null) {
                try {
                    next = following.get();
                } catch (ExecutionException e) {
                    // The background fetch failed (the listener heard why): fetch here instead.
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for a range of " + name, e);
                } finally {
                    following = null;
                }
            }
            if (next == null) {
                next = fetch();
            }
            // The server's counter only grows, so this holds; a range below would repeat IDs.
            if (used != null && next.low < used.max) {
                throw new IllegalStateException("segment " + namespace + "/" + name + ": range " + next
                        + " is not above the previous range " + used + "; refused");
            }
            current = next;
        }

        private Range fetch() {
            synchronized (createLock) {
                if (!created) {
                    Reply<Void> reply = call("POST", "/segments/distributor/" + encode(namespace) + "/" + encode(name),
                            query("offset", Long.toString(offset), "step", Long.toString(step)),
                            CosIdProtocolClient::none);
                    listener.distributorCreated(reply.server, name, offset, step);
                    created = true;
                }
            }
            Reply<Long> reply = call("PATCH", "/segments/" + encode(namespace) + "/" + encode(name),
                    query("step", Long.toString(step)), CosIdProtocolClient::maxId);
            listener.segment(reply.server, name, reply.value, step);
            return new Range(reply.value - step, reply.value, reply.server);
        }
    }

    // ---------------------------------------------------------------- transport

    private static final class Reply<T> {
        final String server;
        final T value;

        Reply(String server, T value) {
            this.server = server;
            this.value = value;
        }
    }

    private interface BodyParser<T> {
        T parse(String body) throws IOException;
    }

    /** A non-200 answer that is no CosId machine error. */
    private static final class StatusException extends IOException {
        private static final long serialVersionUID = 1L;

        StatusException(int status, String body) {
            super("answered " + status + " " + quote(body.trim()));
        }
    }

    private static Void none(String body) {
        return null;
    }

    private static Long maxId(String body) throws IOException {
        try {
            return Long.parseLong(body.trim());
        } catch (NumberFormatException e) {
            throw new IOException("expected a maximum ID, got " + quote(body), e);
        }
    }

    /**
     * Sends the request to a random server first, then to the following ones, at most
     * `attempts` tries with a short backoff between them. A 200 whose body parses is the
     * answer; a 400 with code M-0x is thrown at once (another server would say the same);
     * anything else moves on.
     */
    private <T> Reply<T> call(String method, String path, String query, BodyParser<T> parser) {
        String target = method + " " + path + (query.isEmpty() ? "" : "?" + query);
        int start = ThreadLocalRandom.current().nextInt(servers.size());
        List<Exception> errors = new ArrayList<>();
        List<String> answers = new ArrayList<>();
        long backoffMs = 50;
        for (int attempt = 0; attempt < attempts; attempt++) {
            if (attempt > 0) {
                sleep(backoffMs);
                backoffMs = Math.min(backoffMs * 2, 1000);
            }
            String server = servers.get((start + attempt) % servers.size());
            try {
                HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://" + server + path
                        + (query.isEmpty() ? "" : "?" + query))).timeout(readTimeout)
                        .method(method, HttpRequest.BodyPublishers.noBody());
                if (token != null) {
                    request.header("Authorization", "Bearer " + token);
                }
                HttpResponse<String> response = http.send(request.build(),
                        HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
                int status = response.statusCode();
                String body = response.body();
                if (status == 200) {
                    return new Reply<>(server, parser.parse(body));
                }
                CosIdErrorException cosId = cosIdError(server, status, body);
                if (cosId != null) {
                    listener.failed(server, cosId);
                    throw cosId;
                }
                throw new StatusException(status, body);
            } catch (IOException e) {
                listener.failed(server, e);
                errors.add(e);
                answers.add(server + " " + describe(e));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(target + ": interrupted", e);
            }
        }
        throw new CallFailedException(target + " failed on every attempt (" + attempts + "): "
                + String.join("; ", answers), errors);
    }

    /** A 400 with `{"code":"M-0x",…}`, or null. */
    private static CosIdErrorException cosIdError(String server, int status, String body) {
        if (status != 400) {
            return null;
        }
        try {
            Object json = Json.parse(body);
            if (json instanceof Map) {
                Object code = ((Map<?, ?>) json).get("code");
                Object msg = ((Map<?, ?>) json).get("msg");
                if (code instanceof String && ((String) code).matches("M-0\\d")) {
                    return new CosIdErrorException(server, (String) code, msg == null ? "" : oneLine(msg.toString()));
                }
            }
        } catch (IOException e) {
            // Not JSON: a plain failure.
        }
        return null;
    }

    /** One line: the exception and the causes that say something more. */
    public static String describe(Throwable e) {
        String head;
        if (e instanceof StatusException) {
            head = e.getMessage();
        } else if (e instanceof CosIdErrorException) {
            CosIdErrorException c = (CosIdErrorException) e;
            head = "CosId error " + c.code + " " + c.msg;
        } else if (e instanceof ConnectException && e.getMessage() == null) {
            // The JDK's client says nothing more when the port is closed.
            head = "connection refused (java.net.ConnectException)";
        } else {
            head = e.toString();
        }
        StringBuilder s = new StringBuilder(head);
        int depth = 0;
        for (Throwable c = e.getCause(); c != null && depth < 4; c = c.getCause(), depth++) {
            String m = c.getMessage();
            if (m != null && s.indexOf(m) < 0) {
                s.append(" (").append(m).append(')');
            }
        }
        return oneLine(s.toString());
    }

    private String machinesPath() {
        return "/machines/" + encode(namespace);
    }

    /** name=value&… from pairs, values URL-encoded. */
    private static String query(String... pairs) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < pairs.length; i += 2) {
            if (s.length() > 0) {
                s.append('&');
            }
            s.append(pairs[i]).append('=').append(encode(pairs[i + 1]));
        }
        return s.toString();
    }

    /** Percent-encoding fit for a path part as well as a query value (a space is %20, not +). */
    static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static String oneLine(String s) {
        return s.replaceAll("[\\r\\n\\t]+", " ");
    }

    private static String quote(String s) {
        s = oneLine(s);
        return s.length() > 200 ? '"' + s.substring(0, 200) + "...\"" : '"' + s + '"';
    }

    // ---------------------------------------------------------------- JSON

    /** Just enough JSON for CosId's two bodies: objects, arrays, strings, numbers, literals. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String text) throws IOException {
            Json j = new Json(text);
            Object v = j.value();
            j.space();
            if (j.i != text.length()) {
                throw j.error("text after the value");
            }
            return v;
        }

        /** A whole number field, or an IOException naming it. */
        static long whole(Object v, String field, String body) throws IOException {
            if (!(v instanceof BigDecimal)) {
                throw new IOException("no number " + field + " in " + quote(body));
            }
            try {
                return ((BigDecimal) v).longValueExact();
            } catch (ArithmeticException e) {
                throw new IOException(field + " is no whole number in " + quote(body), e);
            }
        }

        private IOException error(String what) {
            return new IOException("bad JSON at " + i + " (" + what + "): " + quote(s));
        }

        private void space() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private Object value() throws IOException {
            space();
            if (i >= s.length()) {
                throw error("no value");
            }
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> map = new LinkedHashMap<>();
                i++;
                space();
                if (i < s.length() && s.charAt(i) == '}') {
                    i++;
                    return map;
                }
                while (true) {
                    space();
                    if (i >= s.length() || s.charAt(i) != '"') {
                        throw error("expected a key");
                    }
                    String key = string();
                    space();
                    expect(':');
                    map.put(key, value());
                    space();
                    if (i < s.length() && s.charAt(i) == ',') {
                        i++;
                        continue;
                    }
                    expect('}');
                    return map;
                }
            }
            if (c == '[') {
                List<Object> list = new ArrayList<>();
                i++;
                space();
                if (i < s.length() && s.charAt(i) == ']') {
                    i++;
                    return list;
                }
                while (true) {
                    list.add(value());
                    space();
                    if (i < s.length() && s.charAt(i) == ',') {
                        i++;
                        continue;
                    }
                    expect(']');
                    return list;
                }
            }
            if (c == '"') {
                return string();
            }
            for (String literal : new String[] {"true", "false", "null"}) {
                if (s.startsWith(literal, i)) {
                    i += literal.length();
                    return literal.equals("null") ? null : Boolean.valueOf(literal);
                }
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            try {
                return new BigDecimal(s.substring(start, i));
            } catch (NumberFormatException e) {
                i = start;
                throw error("not a value");
            }
        }

        private void expect(char c) throws IOException {
            if (i >= s.length() || s.charAt(i) != c) {
                throw error("expected '" + c + "'");
            }
            i++;
        }

        private String string() throws IOException {
            i++; // the opening quote
            StringBuilder out = new StringBuilder();
            while (i < s.length()) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return out.toString();
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    break;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n':
                        out.append('\n');
                        break;
                    case 't':
                        out.append('\t');
                        break;
                    case 'r':
                        out.append('\r');
                        break;
                    case 'b':
                        out.append('\b');
                        break;
                    case 'f':
                        out.append('\f');
                        break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw error("short \\u escape");
                        }
                        try {
                            out.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw error("bad \\u escape");
                        }
                        i += 4;
                        break;
                    default: // \" \\ \/
                        out.append(e);
                }
            }
            throw error("unterminated string");
        }
    }
}
