package io.coord.bench.demo;

import io.coord.bench.Safety;
import io.coord.core.DistributedLock;
import io.coord.rwlock.ReadWriteMutex;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;

/**
 * Readers and writers share a config znode behind one ReadWriteMutex. Readers overlap one another; a writer is alone;
 * and because the queue is FIFO, every reader sees the versions in the order they were published.
 */
final class ReadersWritersDemo implements DemoScenario {
    private static final int READERS = 6;
    private static final int READS_EACH = 4;
    private static final int WRITERS = 2;
    private static final int WRITES_EACH = 2;
    private static final int SESSIONS = 4;
    // The readers' and writers' simulated work. Without it every hold is so short that overlap would be luck, and
    // the demo's point is to show readers sharing while writers are alone.
    private static final long WORK_MILLIS = 25;
    private static final Duration PATIENCE = Duration.ofSeconds(30);

    @Override
    public String title() {
        return "2. Readers and writers share a ReadWriteMutex";
    }

    @Override
    public Verdict run(DemoContext ctx) throws Exception {
        List<CuratorFramework> clients = ctx.clients(SESSIONS);
        String config = ctx.path("catalog/config");
        String lock = ctx.path("catalog/lock");
        clients.get(0).create().creatingParentsIfNeeded().forPath(config, bytes(0));
        ctx.say(
                "%d readers read the config %d times each while %d writers publish %d versions each",
                READERS, READS_EACH, WRITERS, WRITES_EACH);

        Safety safety = new Safety();
        Safety.ReadWriteGuard guard = safety.readWriteGuard("catalog");
        AtomicInteger reads = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int w = 1; w <= WRITERS; w++) {
            int writer = w;
            CuratorFramework client = clients.get(w % SESSIONS);
            ReadWriteMutex rw = new ReadWriteMutex(client, lock, "writer-" + w);
            threads.add(thread("writer-" + w, start, safety, () -> {
                for (int i = 0; i < WRITES_EACH; i++) {
                    DistributedLock write = rw.writeLock();
                    held(write, safety, "writer " + writer, () -> {
                        guard.enterWrite();
                        try {
                            int version = number(client.getData().forPath(config)) + 1;
                            client.transaction()
                                    .forOperations(
                                            write.lease().fencedCheck(),
                                            client.transactionOp().setData().forPath(config, bytes(version)));
                            ctx.say(
                                    "writer %d publishes config v%d, alone (fencing token 0x%x)",
                                    writer, version, write.lease().fencingToken());
                            TimeUnit.MILLISECONDS.sleep(WORK_MILLIS);
                        } finally {
                            guard.exitWrite();
                        }
                    });
                }
            }));
        }
        for (int r = 1; r <= READERS; r++) {
            int reader = r;
            CuratorFramework client = clients.get(r % SESSIONS);
            ReadWriteMutex rw = new ReadWriteMutex(client, lock, "reader-" + r);
            threads.add(thread("reader-" + r, start, safety, () -> {
                int lastSeen = -1;
                for (int i = 0; i < READS_EACH; i++) {
                    int[] seen = new int[1];
                    held(rw.readLock(), safety, "reader " + reader, () -> {
                        guard.enterRead();
                        try {
                            seen[0] = number(client.getData().forPath(config));
                            reads.incrementAndGet();
                            TimeUnit.MILLISECONDS.sleep(WORK_MILLIS);
                        } finally {
                            guard.exitRead();
                        }
                    });
                    safety.check(
                            seen[0] >= lastSeen,
                            "reader " + reader + " saw v" + seen[0] + " after v" + lastSeen + ", out of order");
                    lastSeen = seen[0];
                }
                ctx.say("reader %d done, last saw config v%d", reader, lastSeen);
            }));
        }
        start.countDown();
        for (Thread t : threads) {
            t.join(PATIENCE.toMillis() * 2);
        }
        int version = number(clients.get(0).getData().forPath(config));
        boolean pass = safety.violations().isEmpty()
                && version == WRITERS * WRITES_EACH
                && reads.get() == READERS * READS_EACH;
        String summary = reads.get() + " reads with up to " + guard.peakReaders() + " readers at once, " + version
                + " versions published, no writer ever beside anyone, versions seen in order";
        return Verdict.of("readers/writers", pass, pass ? summary : summary + "; " + safety.violations());
    }

    @FunctionalInterface
    private interface Body {
        void run() throws Exception;
    }

    /** Runs {@code body} holding {@code lock}; a lock not granted within the patience is a failed check. */
    private static void held(DistributedLock lock, Safety safety, String who, Body body) throws Exception {
        if (!lock.acquire(PATIENCE)) {
            safety.check(false, who + " never got the lock");
            return;
        }
        try {
            body.run();
        } finally {
            lock.release();
        }
    }

    private static Thread thread(String name, CountDownLatch start, Safety safety, Body body) {
        Thread t = new Thread(
                () -> {
                    try {
                        start.await();
                        body.run();
                    } catch (Exception e) {
                        safety.check(false, name + " failed: " + e);
                    }
                },
                name);
        t.start();
        return t;
    }

    private static byte[] bytes(int n) {
        return Integer.toString(n).getBytes(StandardCharsets.UTF_8);
    }

    private static int number(byte[] data) {
        return Integer.parseInt(new String(data, StandardCharsets.UTF_8));
    }
}
