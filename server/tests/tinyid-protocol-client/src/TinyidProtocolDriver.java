// Draws IDs through TinyidProtocolClient from several threads at once (see ../README.md).
//
//   java -cp OUTDIR TinyidProtocolDriver SERVER TOKEN BIZTYPE THREADS IDS_PER_THREAD
//
// SERVER is `host:port` or a comma list of them. THREADS threads start together and
// each draws IDS_PER_THREAD IDs. When all are done, every ID is printed to stdout, one
// per line (thread 0's in the order it drew them, then thread 1's, ...), and the driver
// exits 0. stderr gets one line per fetch:
//
//   segment SERVER currentId,loadingId,maxId,delta,remainder THREAD
//   failed SERVER ERROR
//
// (THREAD is the thread that fetched: a taker, or tinyid-preload-N for a fetch made
// ahead in the background). On any exception the driver prints it to stderr and exits 1,
// as it does when the watchdog fires. System properties (milliseconds unless said):
// tinyid.connectTimeout (5000), tinyid.readTimeout (5000), tinyid.attempts (3, fetch
// tries in all across the servers), tinyid.driver.timeoutSeconds (300, 0: none).

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

public final class TinyidProtocolDriver {

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            fail(t);
        }
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println(
                    "usage: java -cp OUTDIR TinyidProtocolDriver SERVER TOKEN BIZTYPE THREADS IDS_PER_THREAD");
            System.exit(2);
        }
        final String servers = args[0];
        final String token = args[1];
        final String bizType = args[2];
        final int threads = Integer.parseInt(args[3]);
        final int perThread = Integer.parseInt(args[4]);
        if (threads < 1 || perThread < 0) {
            throw new IllegalArgumentException("THREADS must be >= 1 and IDS_PER_THREAD >= 0");
        }
        startWatchdog(Long.getLong("tinyid.driver.timeoutSeconds", 300L));

        final PrintStream err = System.err;
        TinyidProtocolClient.Listener log = new TinyidProtocolClient.Listener() {
            @Override
            public void fetched(String server, String biz, TinyidProtocolClient.Segment segment) {
                synchronized (err) {
                    err.println("segment " + server + " " + segment + " " + Thread.currentThread().getName());
                }
            }

            @Override
            public void failed(String server, String biz, Exception error) {
                synchronized (err) {
                    err.println("failed " + server + " " + error);
                }
            }
        };
        final TinyidProtocolClient client = new TinyidProtocolClient(servers, token,
                Integer.getInteger("tinyid.connectTimeout", 5000), Integer.getInteger("tinyid.readTimeout", 5000),
                Integer.getInteger("tinyid.attempts", 3), log);

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
                        mine[i] = client.nextId(bizType);
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "taker-" + t);
            workers[t].start();
        }
        start.countDown();
        for (Thread w : workers) {
            w.join();
        }
        if (failure.get() != null) {
            fail(failure.get());
        }
        client.close();

        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.US_ASCII), 1 << 16);
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

    private static void fail(Throwable t) {
        PrintStream err = System.err;
        synchronized (err) {
            err.println("TinyidProtocolDriver: failed: " + t);
            t.printStackTrace(err);
            err.flush();
        }
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
            System.err.println("TinyidProtocolDriver: timed out after " + seconds + " s");
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }, "watchdog");
        dog.setDaemon(true);
        dog.start();
    }
}
