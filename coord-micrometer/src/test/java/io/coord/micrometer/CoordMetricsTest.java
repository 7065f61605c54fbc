package io.coord.micrometer;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.election.LeaderLatch;
import io.coord.mutex.ReentrantMutex;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import io.coord.testkit.CapturedLog;
import io.coord.testkit.ZooKeeperFixture;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.search.Search;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(60)
class CoordMetricsTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final CoordMetrics metrics = new CoordMetrics();

    @BeforeEach
    void bind() {
        metrics.bindTo(registry);
    }

    @AfterEach
    void unbind() {
        metrics.close();
    }

    @Test
    void metersFollowGrantTimeoutCancelLostLeaseAndQueueCalls() throws Exception {
        String path = ZooKeeperFixture.uniquePath("metered-mutex");
        CuratorFramework one = zk.newClient();
        CuratorFramework two = zk.newClient();
        ReentrantMutex holder = new ReentrantMutex(one, path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(two, path, "waiter");

        holder.acquire();
        assertFalse(waiter.acquire(Duration.ofMillis(100)));
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        assertEquals(1.0, gauge("coord.acquire.pending", path), "one acquisition under way");
        pending.cancel(true);
        await().until(() -> gauge("coord.acquire.pending", path) == 0.0);
        holder.release();

        Lease doomed = waiter.acquireAsync().get(10, TimeUnit.SECONDS);
        zk.expireSession(two);
        assertEquals(LeaseState.LOST, doomed.ended().get(20, TimeUnit.SECONDS));

        await().until(() -> outcomes(path, "cancelled") == 1);
        assertEquals(2, outcomes(path, "granted"));
        assertEquals(1, outcomes(path, "timed_out"));
        assertEquals(0, outcomes(path, "failed"));
        Timer timedOut =
                find("coord.acquire.wait", path).tag("outcome", "timed_out").timer();
        assertEquals(1, timedOut.count());
        assertTrue(timedOut.totalTime(TimeUnit.NANOSECONDS) > 0, "a wait was timed");

        assertEquals(
                1, find("coord.lease.hold", path).tag("end", "released").timer().count());
        assertEquals(
                1, find("coord.lease.hold", path).tag("end", "lost").timer().count());
        assertEquals(
                1.0,
                find("coord.lease.lost", path).tag("cause", "lost").counter().count());
        assertNull(find("coord.lease.lost", path).tag("cause", "revoked").counter(), "nothing was revoked");
        assertEquals(
                1.0,
                find("coord.lease.states", path).tag("state", "LOST").counter().count());
        assertEquals(0.0, gauge("coord.acquire.pending", path));
        zk.assertNoLeaks(path);

        String jobs = ZooKeeperFixture.uniquePath("metered-queue");
        DistributedQueue<String> queue =
                DistributedQueue.builder(one, jobs, QueueSerializer.utf8()).build();
        assertTrue(queue.offer("a"));
        queue.putAll(List.of("b", "c"));
        assertEquals("a", queue.poll());
        assertEquals(2, queue.drainTo(new ArrayList<>(), 10));
        assertEquals(
                2,
                find("coord.queue.calls", jobs)
                        .tag("operation", "offer")
                        .timer()
                        .count());
        assertEquals(
                3.0,
                find("coord.queue.items", jobs)
                        .tag("operation", "offer")
                        .counter()
                        .count());
        assertEquals(
                1.0,
                find("coord.queue.items", jobs)
                        .tag("operation", "poll")
                        .counter()
                        .count());
        assertEquals(
                2.0,
                find("coord.queue.items", jobs)
                        .tag("operation", "drain")
                        .counter()
                        .count());
        assertEquals("queue", find("coord.queue.calls", jobs).timer().getId().getTag("primitive"));
    }

    @Test
    void aQueueCallThatThrowsIsTimedAsACallThatMovedNothing() throws Exception {
        String jobs = ZooKeeperFixture.uniquePath("metered-interrupted-queue");
        DistributedQueue<String> queue = DistributedQueue.builder(zk.newClient(), jobs, QueueSerializer.utf8())
                .build();
        Thread.currentThread().interrupt(); // how consumers are usually stopped
        assertThrows(InterruptedException.class, queue::take);
        assertEquals(
                1,
                find("coord.queue.calls", jobs).tag("operation", "poll").timer().count());
        assertEquals(0.0, find("coord.queue.items", jobs).counter().count(), "nothing taken");
        zk.assertNoLeaks(jobs);
    }

    @Test
    void leadershipChangesAreCountedAndPathsCanBeTaggedCoarsely() throws Exception {
        metrics.close();
        CoordMetrics coarse = new CoordMetrics(path -> path.substring(0, path.lastIndexOf('/')) + "/*");
        coarse.bindTo(registry);
        try {
            String path = ZooKeeperFixture.uniquePath("metered-election");
            try (LeaderLatch latch = new LeaderLatch(zk.newClient(), path, "candidate")) {
                latch.start();
                assertTrue(latch.await(Duration.ofSeconds(10)));
            }
            await().until(() -> leadership("lost") != null);
            assertEquals(1.0, leadership("gained").count());
            assertEquals(1.0, leadership("lost").count());
            assertEquals(
                    1,
                    find("coord.lease.hold", "/test/*")
                            .tag("end", "released")
                            .timer()
                            .count());
            zk.assertNoLeaks(path);
        } finally {
            coarse.close();
        }
    }

    @Test
    void closedMetricsStopCounting() throws Exception {
        String path = ZooKeeperFixture.uniquePath("unmetered");
        metrics.close();
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        mutex.release();
        assertNull(find("coord.acquire.outcomes", path).counter(), "no meter after close");
        zk.assertNoLeaks(path);
    }

    @Test
    void thePendingGaugeIsRegisteredOnceSoTheRegistryHasNothingToWarnAbout() throws Exception {
        String path = ZooKeeperFixture.uniquePath("registered-once");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        rearmDoubleRegistrationWarning();
        List<String> lines;
        try (CapturedLog log = new CapturedLog()) {
            for (int i = 0; i < 2; i++) {
                mutex.acquire();
                mutex.release();
            }
            lines = log.linesOf("io.micrometer");
        }
        assertEquals(List.of(), lines, "a gauge registered twice makes Micrometer warn");
        assertEquals(2, outcomes(path, "granted"));
        zk.assertNoLeaks(path);
    }

    @Test
    void aPendingGaugeThatAFilterFoldsPathsIntoCountsEveryPath() throws Exception {
        metrics.close();
        SimpleMeterRegistry folding = new SimpleMeterRegistry();
        folding.config().meterFilter(MeterFilter.ignoreTags("path"));
        String first = ZooKeeperFixture.uniquePath("folded-first");
        String second = ZooKeeperFixture.uniquePath("folded-second");
        try (CoordMetrics bound = new CoordMetrics()) {
            bound.bindTo(folding);
            ReentrantMutex once = new ReentrantMutex(zk.newClient(), first);
            once.acquire(); // registers the folded gauge, counting the first path
            once.release();
            Queued queued = queueBehindAHolder(second);
            Gauge gauge = folding.find("coord.acquire.pending").gauge();
            assertEquals(1.0, gauge.value(), "the waiter on the second path is under way");
            queued.waiting().cancel(true);
            await().until(() -> gauge.value() == 0.0);
            queued.holder().release();
        }
        zk.assertNoLeaks(first);
        zk.assertNoLeaks(second);
    }

    @Test
    void closedMetricsLeaveAnAcquisitionUnderWayUncountedButNotPending() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-under-way");
        Queued queued = queueBehindAHolder(path);
        assertEquals(1.0, gauge("coord.acquire.pending", path));
        metrics.close();

        queued.holder().release();
        queued.waiting().get(10, TimeUnit.SECONDS).close();
        assertEquals(1, outcomes(path, "granted"), "the waiter was granted after close, and not counted");
        assertNull(find("coord.lease.hold", path).timer(), "nor the holds that ended after it");
        assertEquals(0.0, gauge("coord.acquire.pending", path), "but no longer pending, for a later binding");
        zk.assertNoLeaks(path);
    }

    @Test
    void bindingTwiceToOneRegistryCountsEverythingOnce() throws Exception {
        metrics.bindTo(registry);
        String path = ZooKeeperFixture.uniquePath("bound-twice");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        mutex.release();
        assertEquals(1, outcomes(path, "granted"));
        assertEquals(1, find("coord.lease.hold", path).timer().count());
        zk.assertNoLeaks(path);
    }

    @Test
    void aPendingGaugeReadsTheLiveCountAfterCloseAndBindAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("rebound");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path, "waiter");
        holder.acquire(); // registers the path's pending gauge
        holder.release();
        metrics.close();
        metrics.bindTo(registry);

        holder.acquire();
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        assertEquals(1.0, gauge("coord.acquire.pending", path), "one acquisition under way");
        pending.cancel(true);
        await().until(() -> gauge("coord.acquire.pending", path) == 0.0);
        holder.release();
        assertEquals(2, outcomes(path, "granted"));
        zk.assertNoLeaks(path);
    }

    @Test
    void aPendingGaugeReadsTheLiveCountWhenAnotherInstanceTookOverOrTheRegistryWasCleared() throws Exception {
        String path = ZooKeeperFixture.uniquePath("taken-over");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path, "waiter");
        holder.acquire(); // registers the path's pending gauge
        holder.release();
        metrics.close();
        try (CoordMetrics next = new CoordMetrics()) {
            next.bindTo(registry);
            holder.acquire();
            CompletableFuture<Lease> pending = waiter.acquireAsync();
            await().until(() -> holder.participants().size() == 2);
            assertEquals(1.0, gauge("coord.acquire.pending", path), "one acquisition under way, counted by the next");

            registry.clear();
            CompletableFuture<Lease> another = waiter.acquireAsync();
            await().until(() -> holder.participants().size() == 3);
            assertEquals(2.0, gauge("coord.acquire.pending", path), "the gauge is back, with the live count");
            pending.cancel(true);
            another.cancel(true);
            await().until(() -> gauge("coord.acquire.pending", path) == 0.0);
            holder.release();
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void thePathTagIsAskedEachTimeSoNothingIsKeptPerRawPath() throws Exception {
        metrics.close();
        List<String> asked = new CopyOnWriteArrayList<>();
        CoordMetrics folded = new CoordMetrics(path -> {
            asked.add(path);
            return "/orders/*";
        });
        folded.bindTo(registry);
        try {
            String path = ZooKeeperFixture.uniquePath("folded");
            ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
            mutex.acquire();
            mutex.release();
            int once = asked.size();
            assertTrue(once > 0, "the function maps the path");
            mutex.acquire();
            mutex.release();
            await().until(() -> asked.size() > once); // asked again: nothing remembered per raw path
            assertEquals(
                    2.0,
                    find("coord.acquire.outcomes", "/orders/*")
                            .tag("outcome", "granted")
                            .counter()
                            .count());
            zk.assertNoLeaks(path);
        } finally {
            folded.close();
        }
    }

    /** A holder of a path, and a waiter's acquisition queued behind it. */
    private record Queued(ReentrantMutex holder, CompletableFuture<Lease> waiting) {}

    private static Queued queueBehindAHolder(String path) throws Exception {
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path, "waiter");
        holder.acquire();
        CompletableFuture<Lease> waiting = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        return new Queued(holder, waiting);
    }

    /**
     * Micrometer warns of a meter registered twice once per JVM, and then only at DEBUG: its flag is cleared so that a
     * test sees the warning its own registrations would cause.
     */
    private static void rearmDoubleRegistrationWarning() throws ReflectiveOperationException {
        Field loggerField = MeterRegistry.class.getDeclaredField("doubleRegistrationLogger");
        loggerField.setAccessible(true);
        Object logger = loggerField.get(null);
        Field warned = logger.getClass().getDeclaredField("warnLogged");
        warned.setAccessible(true);
        ((AtomicBoolean) warned.get(logger)).set(false);
    }

    private Search find(String name, String path) {
        return registry.find(name).tag("path", path);
    }

    /** Searches are builders: a new one for each question. */
    private Counter leadership(String change) {
        return find("coord.leadership.changes", "/test/*")
                .tag("primitive", "leader-latch")
                .tag("change", change)
                .counter();
    }

    private long outcomes(String path, String outcome) {
        Counter counter =
                find("coord.acquire.outcomes", path).tag("outcome", outcome).counter();
        return counter == null ? 0 : (long) counter.count();
    }

    /** The gauge's value; fails if it is not registered, so that a missing gauge never reads as 0. */
    private double gauge(String name, String path) {
        return registry.get(name).tag("path", path).gauge().value();
    }
}
