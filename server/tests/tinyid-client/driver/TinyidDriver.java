// uidgen's own test driver for didi/tinyid's unmodified Java client (see ../README.md).
//
//   java -cp OUTDIR TinyidDriver SERVER TOKEN BIZTYPE THREADS IDS_PER_THREAD
//
// SERVER is what Tinyid's client reads from `tinyid.server`: host:port, optionally
// with a path prefix (host:port/prefix), or a comma list of such entries (the client
// picks one at random for each segment it fetches).
//
// The client is configured exactly as its README tells a user to: a file named
// tinyid_client.properties on the classpath holding tinyid.server and tinyid.token
// (and, if given here as -Dtinyid.readTimeout=MS / -Dtinyid.connectTimeout=MS, those
// two; the client's default for both is 5000 ms). The client reads that file through
// its own class loader, so the driver writes it into a fresh temporary directory and
// loads the client's classes (compiled into OUTDIR by build.sh, next to this class)
// through a URLClassLoader over [that directory, OUTDIR] whose parent is the platform
// loader. IDs are then drawn through the client's public API,
// com.xiaoju.uemc.tinyid.client.utils.TinyId.nextId(String bizType).
//
// THREADS threads start together and each draws IDS_PER_THREAD IDs. When all are done,
// every ID is printed to stdout, one per line (thread 0's IDs in the order it drew them,
// then thread 1's, ...), and the driver exits 0. On any exception it prints the stack
// trace to stderr and exits 1. A watchdog (-Dtinyid.driver.timeoutSeconds, default 300)
// makes a hung run exit 1 too. The client itself logs through java.util.logging to
// stderr (one INFO line per segment fetched); stdout carries only IDs.
//
// System.exit is always used: the client's CachedIdGenerator keeps a non-daemon
// executor thread alive, so the JVM would not end on its own.

import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

public final class TinyidDriver {

    private static final String CLIENT_CLASS = "com.xiaoju.uemc.tinyid.client.utils.TinyId";
    private static final String PROPERTIES_NAME = "tinyid_client.properties";

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            fail(t);
        }
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: java -cp OUTDIR TinyidDriver SERVER TOKEN BIZTYPE THREADS IDS_PER_THREAD");
            System.exit(2);
        }
        final String server = args[0];
        final String token = args[1];
        final String bizType = args[2];
        final int threads = Integer.parseInt(args[3]);
        final int perThread = Integer.parseInt(args[4]);
        if (threads < 1 || perThread < 0) {
            throw new IllegalArgumentException("THREADS must be >= 1 and IDS_PER_THREAD >= 0");
        }

        startWatchdog(Long.getLong("tinyid.driver.timeoutSeconds", 300L));

        // tinyid_client.properties, as a user would put it on the classpath.
        Path confDir = Files.createTempDirectory("tinyid-driver-conf");
        Properties props = new Properties();
        props.setProperty("tinyid.server", server);
        props.setProperty("tinyid.token", token);
        for (String key : new String[] {"tinyid.readTimeout", "tinyid.connectTimeout"}) {
            String v = System.getProperty(key);
            if (v != null) {
                props.setProperty(key, v);
            }
        }
        File propsFile = confDir.resolve(PROPERTIES_NAME).toFile();
        try (Writer w = new OutputStreamWriter(Files.newOutputStream(propsFile.toPath()), StandardCharsets.UTF_8)) {
            props.store(w, "written by uidgen's TinyidDriver");
        }
        propsFile.deleteOnExit();
        confDir.toFile().deleteOnExit();

        // The client's classes sit in the same directory (or jar) as this class.
        URL outDir = TinyidDriver.class.getProtectionDomain().getCodeSource().getLocation();
        URLClassLoader loader = new URLClassLoader(
                new URL[] {confDir.toUri().toURL(), outDir}, ClassLoader.getPlatformClassLoader());
        Class<?> tinyId = Class.forName(CLIENT_CLASS, true, loader);
        if (tinyId.getClassLoader() != loader) {
            throw new IllegalStateException(CLIENT_CLASS + " was not loaded by the driver's class loader");
        }
        final Method nextId = tinyId.getMethod("nextId", String.class);

        final long[][] ids = new long[threads][perThread];
        final CountDownLatch start = new CountDownLatch(1);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final long[] mine = ids[t];
            workers[t] = new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < perThread; i++) {
                        Object id = nextId.invoke(null, bizType);
                        if (id == null) {
                            throw new IllegalStateException("TinyId.nextId returned null");
                        }
                        mine[i] = (Long) id;
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, unwrap(e));
                }
            }, "tinyid-driver-" + t);
            workers[t].start();
        }
        start.countDown();
        for (Thread w : workers) {
            w.join();
        }
        if (failure.get() != null) {
            fail(failure.get());
        }

        BufferedWriter out = new BufferedWriter(
                new OutputStreamWriter(System.out, StandardCharsets.US_ASCII), 1 << 16);
        for (long[] mine : ids) {
            for (long id : mine) {
                out.write(Long.toString(id));
                out.write('\n');
            }
        }
        out.flush();
        if (System.out.checkError()) {
            throw new IOException("error writing to stdout");
        }
        System.exit(0);
    }

    private static Throwable unwrap(Throwable e) {
        while (e instanceof InvocationTargetException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    private static void fail(Throwable t) {
        PrintStream err = System.err;
        err.println("TinyidDriver: failed: " + unwrap(t));
        unwrap(t).printStackTrace(err);
        err.flush();
        System.exit(1);
    }

    private static void startWatchdog(final long seconds) {
        if (seconds <= 0) {
            return;
        }
        Thread dog = new Thread(() -> {
            try {
                Thread.sleep(seconds * 1000L);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("TinyidDriver: timed out after " + seconds + " s");
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }, "tinyid-driver-watchdog");
        dog.setDaemon(true);
        dog.start();
    }
}
