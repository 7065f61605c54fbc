package io.coord.core.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.core.LeaseState;
import io.coord.core.internal.Observer.AcquireOutcome;
import io.coord.core.internal.Observer.QueueOperation;
import io.coord.testkit.ZooKeeperFixture;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(60)
class ObservationsTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    /** Writes down what it hears about one path, as "kind detail". */
    private static final class Notes implements Observer {
        final String path;
        final List<String> heard = new CopyOnWriteArrayList<>();

        Notes(String path) {
            this.path = path;
        }

        @Override
        public void acquisitionStarted(String p, String primitive) {
            note(p, "started " + primitive);
        }

        @Override
        public void acquisitionEnded(
                String p, String primitive, String participant, long waitNanos, AcquireOutcome outcome) {
            note(p, "ended " + outcome.tag() + " by " + participant);
        }

        @Override
        public void holdEnded(
                String p, String primitive, String participant, long fencingToken, long holdNanos, HoldEnd end) {
            note(p, "hold " + end.tag());
        }

        private void note(String p, String what) {
            if (p.equals(path)) {
                heard.add(what);
            }
        }
    }

    private static final Observer THROWING = new Observer() {
        @Override
        public void acquisitionStarted(String path, String primitive) {
            throw new IllegalStateException("a broken observer");
        }

        @Override
        public void holdEnded(
                String path, String primitive, String participant, long fencingToken, long holdNanos, HoldEnd end) {
            throw new IllegalStateException("a broken observer");
        }
    };

    private final List<Observer> added = new CopyOnWriteArrayList<>();

    @AfterEach
    void removeObservers() {
        added.forEach(Observations::remove);
    }

    @Test
    void anObserverThatThrowsIsIgnoredAndTheOthersStillHear() throws Exception {
        String path = ZooKeeperFixture.uniquePath("observed");
        Notes notes = add(new Notes(path));
        add(THROWING);
        LeaseEngine engine = engine(zk.newClient(), path, "observed-one");

        Lease lease = engine.acquire(Duration.ofSeconds(10));
        assertNotNull(lease, "granted although an observer throws");
        lease.close();

        await().until(() -> notes.heard.size() == 3);
        assertEquals(List.of("started mutex", "ended granted by observed-one", "hold released"), notes.heard);
        zk.assertNoLeaks(path);
    }

    @Test
    void aSessionLostWhileTheHandleStillReportsItEndsItsHoldsAsLostNotRevoked() throws Exception {
        String path = ZooKeeperFixture.uniquePath("lost-not-revoked");
        Notes notes = add(new Notes(path));
        CuratorFramework client = zk.newClient();
        Lease lease = engine(client, path, "lost-one").acquire(Duration.ofSeconds(10));

        // Curator's LOST, heard before the handle is replaced: the handle still reports the session that ended.
        ClientContext context = ClientContext.of(client);
        context.stateChanged(client, ConnectionState.SUSPENDED);
        context.stateChanged(client, ConnectionState.LOST);

        assertEquals(LeaseState.LOST, lease.ended().get(10, TimeUnit.SECONDS));
        await().until(() -> notes.heard.stream().anyMatch(note -> note.startsWith("hold ")));
        assertEquals("hold lost", notes.heard.get(notes.heard.size() - 1));
    }

    @Test
    void anObserverThatThrowsAnErrorStopsNoLeaseFromEnding() throws Exception {
        String path = ZooKeeperFixture.uniquePath("observed-error");
        Notes notes = add(new Notes(path));
        add(new Observer() {
            @Override
            public void leaseStateChanged(
                    String p, String primitive, String participant, long fencingToken, LeaseState from, LeaseState to) {
                throw new AssertionError("a broken observer");
            }
        });
        CuratorFramework client = zk.newClient();
        LeaseEngine engine = new LeaseEngine(
                client, path, "lock-", LeasePredicate.maxLeases(2), "two".getBytes(StandardCharsets.UTF_8));
        Lease first = engine.acquire(Duration.ofSeconds(10));
        Lease second = engine.acquire(Duration.ofSeconds(10));

        zk.expireSession(client);

        assertEquals(LeaseState.LOST, first.ended().get(10, TimeUnit.SECONDS));
        assertEquals(LeaseState.LOST, second.ended().get(10, TimeUnit.SECONDS));
        await().until(() -> notes.heard.stream().filter("hold lost"::equals).count() == 2);
        zk.assertNoLeaks(path);
    }

    @Test
    void anObserverHearsTheEndOfExactlyTheAcquisitionsItHeardStart() throws Exception {
        String path = ZooKeeperFixture.uniquePath("paired");
        LeaseEngine holder = engine(zk.newClient(), path, "holder");
        LeaseEngine waiter = engine(zk.newClient(), path, "waiter");
        Lease held = holder.acquire(Duration.ofSeconds(10));

        CompletableFuture<Lease> unheard = waiter.acquireAsync();
        Notes notes = add(new Notes(path));
        CompletableFuture<Lease> heard = waiter.acquireAsync().orTimeout(100, TimeUnit.MILLISECONDS);
        Observations.remove(notes);
        await().until(heard::isDone);
        unheard.cancel(true);
        held.close();

        await().until(() -> notes.heard.size() == 2);
        assertEquals(List.of("started mutex", "ended timed_out by waiter"), notes.heard);
        assertFalse(Observations.remove(notes), "removed already");
        zk.assertNoLeaks(path);
    }

    @Test
    void reportsAllocateNothingWhileNobodyListensAndNothingRecords() throws Exception {
        LeaseEngine engine = engine(zk.newClient(), ZooKeeperFixture.uniquePath("quiet"), "quiet");
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long thread = Thread.currentThread().getId();
        for (int i = 0; i < 10_000; i++) { // warm: the participant id is decoded once, on first use
            report(engine);
        }
        long before = threads.getThreadAllocatedBytes(thread);
        for (int i = 0; i < 100_000; i++) {
            report(engine);
        }
        long allocated = threads.getThreadAllocatedBytes(thread) - before;
        assertTrue(allocated < 100_000, "100,000 rounds of reports allocated " + allocated + " bytes");
    }

    private static void report(LeaseEngine engine) {
        Observer[] told = Observations.acquisitionStarted(engine);
        Observations.acquisitionEnded(engine, told, System.nanoTime(), null, null, null);
        Observations.leadershipChanged(engine, true);
        Observations.queueOperation(engine.path(), QueueOperation.POLL, 1, 0, System.nanoTime());
    }

    private <O extends Observer> O add(O observer) {
        Observations.add(observer);
        added.add(observer);
        return observer;
    }

    private static LeaseEngine engine(CuratorFramework client, String path, String participant) {
        return new LeaseEngine(
                client, path, "lock-", LeasePredicate.maxLeases(1), participant.getBytes(StandardCharsets.UTF_8));
    }
}
