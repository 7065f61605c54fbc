package io.coord.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.mutex.ReentrantMutex;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Mutual exclusion, fencing and progress of {@link ReentrantMutex} while servers die and sessions expire: five
 * clients with two worker threads each take turns on one path, and a chaos thread injects one fault at a time.
 */
class MutexSafetyIT {
    private static final int CLIENTS = 5;
    private static final int THREADS_PER_CLIENT = 2;
    private static final Duration RUN = Duration.ofSeconds(40);
    private static final int MAX_TURNS_PER_WORKER = 5_000;
    private static final Duration ACQUIRE_TIMEOUT = Duration.ofSeconds(5);
    private static final long WORK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    // A holder that vanished frees the lock within one session timeout at worst; twice that, plus time for a leader
    // election, is the longest a healthy run goes without granting the lock to anybody.
    private static final Duration STALL_LIMIT =
            ClusterFixture.SESSION_TIMEOUT.multipliedBy(2).plusSeconds(2);

    private static ClusterFixture cluster;

    private final Timeline timeline = new Timeline();
    private final ExclusionChecker checker = new ExclusionChecker(timeline);
    private final List<String> errors = new CopyOnWriteArrayList<>();
    private final AtomicInteger timeouts = new AtomicInteger();

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = ClusterFixture.start();
    }

    @AfterEach
    void closeClients() {
        cluster.closeClients();
    }

    @AfterAll
    static void stopCluster() throws Exception {
        cluster.close();
    }

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void atMostOneValidHolderWithRisingTokensWhileServersDieAndSessionsExpire() throws Exception {
        String path = ZooKeeperFixture.uniquePath("mutex-safety");
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < CLIENTS; i++) {
            clients.add(trackedClient("client-" + i));
        }
        long seed = System.nanoTime();
        Chaos chaos = new Chaos(cluster, clients, timeline, seed);
        ExecutorService pool = Executors.newFixedThreadPool(CLIENTS * THREADS_PER_CLIENT + 1);
        CountDownLatch go = new CountDownLatch(1);
        long start = System.nanoTime();
        long deadline = start + RUN.toNanos();
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                CuratorFramework client = clients.get(c);
                // Both threads of a client share one mutex: they contend like two processes.
                ReentrantMutex mutex = new ReentrantMutex(client, path, "client-" + c);
                for (int t = 0; t < THREADS_PER_CLIENT; t++) {
                    String name = "client-" + c + "/worker-" + t;
                    workers.add(pool.submit(() -> {
                        Thread.currentThread().setName(name);
                        go.await();
                        work(name, client, mutex, deadline);
                        return null;
                    }));
                }
            }
            Future<?> faults = pool.submit(chaos);
            go.countDown();
            for (Future<?> worker : workers) {
                worker.get(RUN.toSeconds() + 30, TimeUnit.SECONDS);
            }
            chaos.stop();
            faults.get(60, TimeUnit.SECONDS);
        } finally {
            chaos.stop();
            pool.shutdownNow();
        }

        String run = "seed " + seed + ", " + checker.entries() + " turns, " + checker.refusals()
                + " refused for an invalid lease, " + timeouts.get() + " timeouts, " + chaos.kills() + " kills, "
                + chaos.serverExpiries() + " expiries on the servers, " + chaos.clientExpiries() + " on clients";
        assertEquals(0, checker.violationCount(), () -> run + checker.report());
        assertEquals(List.of(), errors, run);
        assertTrue(checker.entries() > 50, "too few turns to mean anything: " + run);
        assertTrue(chaos.kills() >= 1, "no server was killed: " + run);
        assertTrue(chaos.serverExpiries() >= 1, "no session expired: " + run);
        long[] stall = checker.longestStall(start, deadline);
        assertTrue(
                stall[1] - stall[0] <= STALL_LIMIT.toNanos(),
                () -> "nobody got the lock from " + timeline.at(stall[0]) + " to " + timeline.at(stall[1]) + ": " + run
                        + "\n" + timeline.around(stall[0] + (stall[1] - stall[0]) / 2, RUN, 80));

        // Idle clients first: every released or withdrawn node is gone and no watch is left behind.
        cluster.assertNoLeaks(clients.get(0), path);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    private CuratorFramework trackedClient(String label) throws InterruptedException {
        CuratorFramework client = cluster.newClient();
        timeline.add(label + " starts on session 0x" + Long.toHexString(ClusterFixture.sessionId(client)));
        client.getConnectionStateListenable()
                .addListener((c, state) -> timeline.add(
                        label + " is " + state + ", session 0x" + Long.toHexString(ClusterFixture.sessionId(c))));
        return client;
    }

    private void work(String name, CuratorFramework client, ReentrantMutex mutex, long deadline)
            throws InterruptedException {
        for (int turn = 0; turn < MAX_TURNS_PER_WORKER && System.nanoTime() - deadline < 0; turn++) {
            boolean held;
            try {
                held = mutex.acquire(ACQUIRE_TIMEOUT);
            } catch (RuntimeException e) {
                // acquire() rides out connection loss and expiry; only a closed client or a hard error ends it.
                String error = name + " failed to acquire at " + timeline.at(System.nanoTime()) + ": " + e;
                timeline.add(error);
                errors.add(error);
                continue;
            }
            if (!held) {
                timeouts.incrementAndGet();
                timeline.add(name + " timed out; the queue is " + queue(mutex));
                continue;
            }
            try {
                Lease lease = mutex.lease();
                lease.addStateListener(
                        state -> timeline.add(name + ": " + lease.path() + " is " + state), Runnable::run);
                checker.enter(name, lease, ClusterFixture.sessionId(client)).ifPresent(holder -> {
                    // The protected work: tiny, and abandoned as soon as the lease is no longer valid.
                    if (lease.isValid()) {
                        LockSupport.parkNanos(WORK_NANOS);
                    }
                    checker.exit(holder);
                });
            } finally {
                mutex.release();
            }
        }
    }

    private static String queue(ReentrantMutex mutex) {
        try {
            return mutex.participants().toString();
        } catch (RuntimeException e) {
            return "unreadable (" + e + ")";
        }
    }
}
