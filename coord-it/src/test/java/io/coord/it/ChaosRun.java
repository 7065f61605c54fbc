package io.coord.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.DistributedLock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;

/**
 * One bounded fault run: clients that log their connection states to the timeline and are the targets of the faults,
 * workers that start together and stop by the deadline, and a {@link Chaos} thread that injects one fault at a time
 * for as long as the run lasts.
 */
final class ChaosRun {
    /** A worker's body; it returns by {@code deadlineNanos} (a {@link System#nanoTime()} value). */
    @FunctionalInterface
    interface Worker {
        void run(long deadlineNanos) throws Exception;
    }

    /**
     * A holder that vanished frees its place within one session timeout at worst; twice that, plus time for a server
     * election, is the longest a healthy run goes without granting anybody a turn once the last fault is over (faults
     * that follow one another can hold turns up for as long as they go on).
     */
    static final Duration STALL_LIMIT =
            ClusterFixture.SESSION_TIMEOUT.multipliedBy(2).plusSeconds(2);

    /**
     * How long the faults go on in a safety run of each engine mode: long enough for some twenty faults, each kind
     * at least once (see {@link Chaos}), short enough for the suite to run every safety check in both modes. Each
     * run's floor on how much work makes it mean anything is sized for this length.
     */
    static final Duration LENGTH = Duration.ofSeconds(20);

    // Room for the workers' last acquisitions, and for the restart of a server killed just before the end.
    private static final Duration GRACE = Duration.ofSeconds(30);

    private final ClusterFixture cluster;
    private final Timeline timeline;
    private final Duration length;
    private final long seed = System.nanoTime();
    private final List<CuratorFramework> clients = new ArrayList<>();
    private final List<String> labels = new ArrayList<>();
    private final Map<String, Worker> workers = new LinkedHashMap<>();
    private Chaos chaos;
    private long start;
    private long deadline;

    ChaosRun(ClusterFixture cluster, Timeline timeline, Duration length) {
        this.cluster = cluster;
        this.timeline = timeline;
        this.length = length;
    }

    /** A connected client whose states go to the timeline; the faults pick among these. */
    CuratorFramework newClient(String label) throws InterruptedException {
        CuratorFramework client = cluster.newClient();
        timeline.add(label + " starts on session 0x" + Long.toHexString(ClusterFixture.sessionId(client)));
        client.getConnectionStateListenable()
                .addListener((c, state) -> timeline.add(
                        label + " is " + state + ", session 0x" + Long.toHexString(ClusterFixture.sessionId(c))));
        clients.add(client);
        labels.add(label);
        return client;
    }

    /** Adds a worker that runs on its own thread, named {@code name}, once {@link #run()} starts. */
    void addWorker(String name, Worker worker) {
        workers.put(name, worker);
    }

    /**
     * Starts the workers and the faults together, waits for the workers (or for the run's length if there are none),
     * then stops the faults and waits until every server is back.
     */
    void run() throws Exception {
        chaos = new Chaos(cluster, clients, labels, timeline, seed);
        ExecutorService pool = Executors.newFixedThreadPool(workers.size() + 1);
        CountDownLatch go = new CountDownLatch(1);
        start = System.nanoTime();
        deadline = start + length.toNanos();
        try {
            List<Future<?>> running = new ArrayList<>();
            workers.forEach((name, worker) -> running.add(pool.submit(() -> {
                Thread.currentThread().setName(name);
                go.await();
                worker.run(deadline);
                return null;
            })));
            Future<?> faults = pool.submit(chaos);
            go.countDown();
            long limit = deadline + GRACE.toNanos();
            for (Future<?> worker : running) {
                worker.get(limit - System.nanoTime(), TimeUnit.NANOSECONDS);
            }
            if (running.isEmpty()) {
                try {
                    // The faults go on for the run's length; a failing fault ends it early.
                    faults.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                } catch (TimeoutException expected) {
                    // the run is over
                }
            }
            chaos.stop();
            faults.get(GRACE.toSeconds(), TimeUnit.SECONDS);
        } finally {
            chaos.stop();
            pool.shutdownNow();
        }
        timeline.add("run over: " + describe());
    }

    /** The clients made by {@link #newClient}, in order. */
    List<CuratorFramework> clients() {
        return List.copyOf(clients);
    }

    long startNanos() {
        return start;
    }

    long deadlineNanos() {
        return deadline;
    }

    Chaos chaos() {
        return chaos;
    }

    /**
     * Fails if nobody entered {@code checker} for longer than {@link #STALL_LIMIT} during the run, counted from the end
     * of the last fault before each turn.
     */
    void assertNoStall(ExclusionChecker checker, String summary) {
        long[] stall = checker.longestStall(start, deadline, chaos.faultEnds());
        assertTrue(
                stall[1] - stall[0] <= STALL_LIMIT.toNanos(),
                () -> "nobody had a turn from " + timeline.at(stall[0]) + " to " + timeline.at(stall[1]) + ": "
                        + summary + "\n" + timeline.around(stall[0] + (stall[1] - stall[0]) / 2, length, 80));
    }

    /** One client's turn after the faults: false if it was not granted within the timeout. */
    @FunctionalInterface
    interface Turn {
        boolean take(Duration timeout) throws Exception;

        /** A turn of {@code lock}: acquired, and released at once. */
        static Turn of(DistributedLock lock) {
            return timeout -> {
                boolean granted = lock.acquire(timeout);
                if (granted) {
                    lock.release();
                }
                return granted;
            };
        }
    }

    /**
     * Once the faults are over, every client is granted a turn within {@link #STALL_LIMIT}, one after another. During
     * the run a waiter that a fault left stuck for good (its wake-up lost with a connection, say) only times out, and
     * each later turn of its client queues afresh; this finds it.
     */
    void assertEveryClientIsGrantedAfterTheFaults(Map<String, Turn> turns, String summary) throws Exception {
        for (Map.Entry<String, Turn> client : turns.entrySet()) {
            long asked = System.nanoTime();
            assertTrue(
                    client.getValue().take(STALL_LIMIT),
                    () -> client.getKey() + " was not granted within " + STALL_LIMIT + " once the faults were over: "
                            + summary + "\n" + timeline.around(asked, length, 80));
        }
    }

    /** The seed and the faults injected, for failure messages. */
    String describe() {
        return "seed " + seed + ", " + chaos.kills() + " kills, " + chaos.serverExpiries()
                + " expiries on the servers, " + chaos.clientExpiries() + " on clients";
    }
}
