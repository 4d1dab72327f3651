// Draws IDs through CosIdProtocolClient from several threads at once (see ../README.md).
//
//   java -cp OUTDIR CosIdProtocolDriver SERVERS NAMESPACE INSTANCE_ID THREADS IDS_PER_THREAD
//
// SERVERS is `host:port` or a comma list of them. The driver distributes a machine ID and
// prints `machine <machineId> <lastTimeStamp>` as the first stdout line (flushed at once).
// Then THREADS threads start together; each draws IDS_PER_THREAD snowflake IDs and as many
// IDs of the segment (alternately: snowflake, segment, snowflake, ...). When all are done,
// stdout gets, thread after thread, that thread's snowflake IDs as `s <thread#> <id>` in the
// order drawn, then its segment IDs as `g <thread#> <id>`. Then, with -Dcosid.holdMillis=N
// > 0, it prints `holding` on stderr and keeps guarding for N ms (so a test can kill it
// while it holds its machine ID). Then it closes (reverts unless -Dcosid.revert=false) and
// exits 0. stderr gets one line per remote call:
//
//   distributed SERVER machineId lastTimeStamp
//   guarded SERVER
//   reverted SERVER
//   distributor SERVER offset step
//   segment SERVER maxId step
//   failed SERVER ERROR
//
// and `guard-failed ERROR` when a whole guard round fails. A CosId error (M-01, M-02,
// M-03), thrown or the cause of what was thrown, prints `cosid-error CODE MSG` on stderr
// and exits 3, as does a guard told M-02/M-03 while the driver held its machine ID. Any
// other failure prints the exception and exits 1, as does the watchdog; bad arguments
// exit 2. Properties are listed in the README.

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

public final class CosIdProtocolDriver {

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            fail(t);
        }
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: java -cp OUTDIR CosIdProtocolDriver SERVERS NAMESPACE INSTANCE_ID THREADS"
                    + " IDS_PER_THREAD");
            System.exit(2);
        }
        final String servers = args[0];
        final String namespace = args[1];
        final String instanceId = args[2];
        final int threads;
        final int perThread;
        try {
            threads = Integer.parseInt(args[3]);
            perThread = Integer.parseInt(args[4]);
        } catch (NumberFormatException e) {
            System.err.println("THREADS and IDS_PER_THREAD must be numbers: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (threads < 1 || perThread < 0) {
            System.err.println("THREADS must be >= 1 and IDS_PER_THREAD >= 0");
            System.exit(2);
        }
        startWatchdog(Long.getLong("cosid.driver.timeoutSeconds", 300L));

        final PrintStream err = System.err;
        CosIdProtocolClient.Listener log = new CosIdProtocolClient.Listener() {
            @Override
            public void distributed(String server, long machineId, long lastTimeStamp) {
                line("distributed " + server + " " + machineId + " " + lastTimeStamp);
            }

            @Override
            public void guarded(String server) {
                line("guarded " + server);
            }

            @Override
            public void reverted(String server) {
                line("reverted " + server);
            }

            @Override
            public void distributorCreated(String server, String name, long offset, long step) {
                line("distributor " + server + " " + offset + " " + step);
            }

            @Override
            public void segment(String server, String name, long maxId, long step) {
                line("segment " + server + " " + maxId + " " + step);
            }

            @Override
            public void failed(String server, Exception error) {
                line("failed " + server + " " + CosIdProtocolClient.describe(error));
            }

            @Override
            public void guardFailed(Exception error) {
                line("guard-failed " + CosIdProtocolClient.describe(error));
            }

            private void line(String s) {
                synchronized (err) {
                    err.println(s);
                    err.flush();
                }
            }
        };

        Duration safeGuard = Duration.parse(System.getProperty("cosid.safeGuard", "PT5M"));
        CosIdProtocolClient.Options options = new CosIdProtocolClient.Options()
                .machineBit(Integer.getInteger("cosid.machineBit", 10))
                .safeGuard(safeGuard)
                .stable(Boolean.parseBoolean(System.getProperty("cosid.stable", "false")))
                .stateDir(Path.of(System.getProperty("cosid.stateDir",
                        Path.of(System.getProperty("java.io.tmpdir"), "cosid-protocol-client").toString())))
                .token(System.getProperty("cosid.token"))
                .connectTimeout(Duration.ofMillis(Long.getLong("cosid.connectTimeout", 5000L)))
                .readTimeout(Duration.ofMillis(Long.getLong("cosid.readTimeout", 5000L)))
                .attempts(Integer.getInteger("cosid.attempts", 3))
                .clockWait(Duration.ofMillis(Long.getLong("cosid.clockWaitMillis", 10_000L)))
                .revertOnClose(Boolean.parseBoolean(System.getProperty("cosid.revert", "true")))
                .listener(log);
        Long guardMillis = Long.getLong("cosid.guardMillis");
        if (guardMillis != null) {
            options.guardInterval(Duration.ofMillis(guardMillis));
        }
        final CosIdProtocolClient client = new CosIdProtocolClient(servers, namespace, instanceId, options);

        CosIdProtocolClient.MachineState state = client.distribute();
        System.out.println("machine " + state.machineId + " " + state.lastTimeStamp);
        System.out.flush();

        final CosIdProtocolClient.Segment segment = client.segment(System.getProperty("cosid.segment", "order"),
                Long.getLong("cosid.segmentOffset", 0L), Long.getLong("cosid.segmentStep", 100L));
        final long[][] snowflakes = new long[threads][perThread];
        final long[][] segmentIds = new long[threads][perThread];
        final CountDownLatch start = new CountDownLatch(1);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final long[] s = snowflakes[t];
            final long[] g = segmentIds[t];
            workers[t] = new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < perThread; i++) {
                        s[i] = client.nextId();
                        g[i] = segment.nextId();
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

        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.US_ASCII), 1 << 16);
        for (int t = 0; t < threads; t++) {
            for (long id : snowflakes[t]) {
                out.write("s " + t + " " + id + "\n");
            }
            for (long id : segmentIds[t]) {
                out.write("g " + t + " " + id + "\n");
            }
        }
        out.flush();
        if (System.out.checkError()) {
            throw new IOException("error writing to stdout");
        }

        long holdMillis = Long.getLong("cosid.holdMillis", 0L);
        if (holdMillis > 0) {
            synchronized (err) {
                err.println("holding");
                err.flush();
            }
            Thread.sleep(holdMillis); // the guard thread keeps guarding meanwhile
        }
        client.close();
        CosIdProtocolClient.CosIdErrorException lost = client.lost();
        if (lost != null) {
            fail(lost);
        }
        System.exit(0);
    }

    private static void fail(Throwable t) {
        PrintStream err = System.err;
        synchronized (err) {
            for (Throwable c = t; c != null; c = c.getCause()) {
                if (c instanceof CosIdProtocolClient.CosIdErrorException) {
                    CosIdProtocolClient.CosIdErrorException e = (CosIdProtocolClient.CosIdErrorException) c;
                    err.println("cosid-error " + e.code + " " + e.msg);
                    err.flush();
                    System.exit(3);
                }
            }
            err.println("CosIdProtocolDriver: failed: " + t);
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
            System.err.println("CosIdProtocolDriver: timed out after " + seconds + " s");
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }, "watchdog");
        dog.setDaemon(true);
        dog.start();
    }
}
