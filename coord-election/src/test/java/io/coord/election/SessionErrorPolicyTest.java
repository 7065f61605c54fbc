package io.coord.election;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.SessionConnectionStateErrorPolicy;
import org.apache.curator.retry.RetryNTimes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/**
 * Leadership under Curator's {@code SessionConnectionStateErrorPolicy}: it lasts through a suspended connection and
 * ends only when the session is lost. The standard policy's behaviour is covered by {@link LeaderLatchFaultTest} and
 * {@link LeaderSelectorTest}.
 *
 * <p>Run in each engine mode by {@link SessionErrorPolicyInViewModeTest} and {@link SessionErrorPolicyInWatchModeTest},
 * two classes so that the two modes run side by side.
 */
@Timeout(60)
abstract class SessionErrorPolicyTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void latchKeepsLeadershipThroughSuspensionUnderSessionPolicy() throws Exception {
        String path = ZooKeeperFixture.uniquePath("latch-suspended");
        CuratorFramework client = outageProofSessionPolicyClient();
        try {
            List<String> heard = new CopyOnWriteArrayList<>();
            LeaderLatch latch = leadingLatch(client, path, heard);
            Lease term = latch.term().orElseThrow();

            // Shorter than the session: the server keeps the session and its znode.
            zk.stopServer();
            await().until(() -> term.state() == LeaseState.SUSPECT);
            assertTrue(latch.hasLeadership());
            assertSame(term, latch.term().orElseThrow());
            assertTrue(latch.await(Duration.ZERO));
            zk.restartServer();

            await().atMost(Duration.ofSeconds(20)).until(() -> term.state() == LeaseState.HELD);
            assertTrue(latch.hasLeadership());
            assertSame(term, latch.term().orElseThrow());
            latch.close();
            // Listeners hear changes in order, so the close's notLeader comes after anything the suspension caused.
            await().until(() -> heard.contains("latch notLeader"));
            assertEquals(List.of("latch isLeader", "latch notLeader"), heard);
            zk.assertNoLeaks(path);
        } finally {
            client.close();
        }
    }

    @Test
    void latchStepsDownWhenTheSessionIsLostUnderSessionPolicy() throws Exception {
        String path = ZooKeeperFixture.uniquePath("latch-lost");
        CuratorFramework client = sessionPolicyClient();
        try {
            List<String> heard = new CopyOnWriteArrayList<>();
            LeaderLatch latch = leadingLatch(client, path, heard);
            Lease lost = latch.term().orElseThrow();

            zk.expireSession(client);
            await().atMost(Duration.ofSeconds(20)).until(() -> lost.state() == LeaseState.LOST);
            await().until(() -> heard.contains("latch notLeader"));

            // It queues again on the new session and, alone on the path, leads with a later term.
            assertTrue(latch.await(Duration.ofSeconds(20)));
            Lease next = latch.term().orElseThrow();
            assertNotEquals(lost.path(), next.path());
            assertTrue(next.fencingToken() > lost.fencingToken(), next + " after " + lost);
            await().until(() -> heard.size() == 3);
            assertEquals(List.of("latch isLeader", "latch notLeader", "latch isLeader"), heard);
            latch.close();
            zk.assertNoLeaks(path);
        } finally {
            client.close();
        }
    }

    @Test
    void selectorKeepsLeadershipThroughSuspensionUnderSessionPolicy() throws Exception {
        String path = ZooKeeperFixture.uniquePath("selector-suspended");
        CuratorFramework client = outageProofSessionPolicyClient();
        try {
            List<Lease> terms = new CopyOnWriteArrayList<>();
            CountDownLatch interrupted = new CountDownLatch(1);
            LeaderSelector selector = leadingUntilInterrupted(client, path, terms::add, interrupted);
            selector.autoRequeue();
            selector.start();
            await().until(() -> selector.hasLeadership() && terms.size() == 1);
            Lease term = terms.get(0);

            zk.stopServer();
            await().until(() -> term.state() == LeaseState.SUSPECT);
            assertTrue(selector.hasLeadership());
            zk.restartServer();

            await().atMost(Duration.ofSeconds(20)).until(() -> term.state() == LeaseState.HELD);
            assertTrue(selector.hasLeadership());
            assertEquals(1, interrupted.getCount(), "the task was interrupted");
            assertEquals(List.of(term), terms);
            selector.close();
            assertTrue(interrupted.await(10, TimeUnit.SECONDS));
            await().until(() -> !selector.hasLeadership());
            zk.assertNoLeaks(path);
        } finally {
            client.close();
        }
    }

    @Test
    void selectorInterruptsTheTaskWhenTheSessionIsLostUnderSessionPolicy() throws Exception {
        String path = ZooKeeperFixture.uniquePath("selector-lost");
        CuratorFramework client = sessionPolicyClient();
        try {
            Leading leading = leadingSelector(client, path);
            LeaderSelector selector = leading.selector();
            Lease term = leading.term();
            CountDownLatch interrupted = leading.interrupted();

            zk.expireSession(client);
            assertTrue(interrupted.await(20, TimeUnit.SECONDS));
            assertEquals(LeaseState.LOST, term.state());
            await().until(() -> !selector.hasLeadership());
            selector.close();
            zk.assertNoLeaks(path);
        } finally {
            client.close();
        }
    }

    @Test
    void theTaskIsInterruptedWhenTheSessionIsLostEvenWhileAListenerOnItsTermBlocks() throws Exception {
        String path = ZooKeeperFixture.uniquePath("selector-blocked-listener");
        CuratorFramework client = sessionPolicyClient();
        CountDownLatch listenerMayReturn = new CountDownLatch(1);
        try {
            CompletableFuture<Lease> granted = new CompletableFuture<>();
            CountDownLatch interrupted = new CountDownLatch(1);
            LeaderSelector selector = leadingUntilInterrupted(
                    client,
                    path,
                    term -> {
                        blockOnSuspect(term, listenerMayReturn);
                        granted.complete(term);
                    },
                    interrupted);
            selector.start();
            Lease term = granted.get(10, TimeUnit.SECONDS);

            zk.stopServer(); // SUSPECT, which this policy leads through; LOST once the client gives the session up
            await().atMost(Duration.ofSeconds(20)).until(() -> term.state() == LeaseState.LOST);
            assertTrue(interrupted.await(10, TimeUnit.SECONDS), "the task leads on while its term is LOST");
            assertEquals(1, listenerMayReturn.getCount());
            listenerMayReturn.countDown();
            zk.restartServer();
            selector.close();
            await().until(() -> !selector.hasLeadership());
            zk.assertNoLeaks(path);
        } finally {
            listenerMayReturn.countDown();
            client.close();
        }
    }

    @Test
    void latchStepsDownWhenTheSessionIsLostEvenWhileAListenerOnItsTermBlocks() throws Exception {
        String path = ZooKeeperFixture.uniquePath("latch-blocked-listener");
        CuratorFramework client = sessionPolicyClient();
        CountDownLatch listenerMayReturn = new CountDownLatch(1);
        try {
            List<String> heard = new CopyOnWriteArrayList<>();
            LeaderLatch latch = leadingLatch(client, path, heard);
            Lease lost = latch.term().orElseThrow();
            blockOnSuspect(lost, listenerMayReturn);

            zk.stopServer(); // SUSPECT, which this policy leads through; LOST once the client gives the session up
            await().atMost(Duration.ofSeconds(20)).until(() -> lost.state() == LeaseState.LOST);
            await().atMost(Duration.ofSeconds(10)).until(() -> heard.contains("latch notLeader"));
            assertEquals(1, listenerMayReturn.getCount());
            listenerMayReturn.countDown();
            zk.restartServer();

            // It queues again on the new session and leads with a later term.
            assertTrue(latch.await(Duration.ofSeconds(20)));
            assertTrue(latch.term().orElseThrow().fencingToken() > lost.fencingToken());
            latch.close();
            zk.assertNoLeaks(path);
        } finally {
            listenerMayReturn.countDown();
            client.close();
        }
    }

    @Test
    void theTaskIsInterruptedOnceTheSessionTimesOutEvenWhileCuratorsListenerThreadIsHeldUp() throws Exception {
        String path = ZooKeeperFixture.uniquePath("selector-listener-thread-held");
        AtomicReference<CountDownLatch> letGo = new AtomicReference<>();
        // An application's listener that blocks holds Curator's listener thread, and with it Curator's own check
        // that gives the session up once the connection has been down for its timeout.
        CuratorFramework client = sessionPolicyClient(
                ZooKeeperFixture.SESSION_TIMEOUT, c -> letGo.set(ZooKeeperFixture.holdUpListenerThread(c)));
        try {
            Leading leading = leadingSelector(client, path);
            LeaderSelector selector = leading.selector();
            Lease term = leading.term();
            CountDownLatch interrupted = leading.interrupted();

            zk.stopServer(); // SUSPECT, which this policy leads through; LOST once the session's time is up
            await().until(() -> term.state() == LeaseState.SUSPECT);
            assertTrue(selector.hasLeadership());
            await().atMost(Duration.ofSeconds(20)).until(() -> term.state() == LeaseState.LOST);
            assertTrue(interrupted.await(10, TimeUnit.SECONDS), "the task leads on while its term is LOST");
            letGo.get().countDown();
            zk.restartServer();
            selector.close();
            await().until(() -> !selector.hasLeadership());
            zk.assertNoLeaks(path);
        } finally {
            letGo.get().countDown();
            if (!zk.ensemble().servers().get(0).isRunning()) {
                zk.restartServer();
            }
            client.close();
        }
    }

    /** A started latch, leading alone at {@code path}, whose listener records into {@code heard}. */
    private static LeaderLatch leadingLatch(CuratorFramework client, String path, List<String> heard)
            throws InterruptedException {
        LeaderLatch latch = new LeaderLatch(client, path, "only");
        latch.addListener(LeaderLatchTest.recorder("latch", heard), Runnable::run);
        latch.start();
        assertTrue(latch.await(Duration.ofSeconds(10)));
        return latch;
    }

    /** On the term's own thread, a listener that waits for {@code mayReturn} once the term turns SUSPECT. */
    private static void blockOnSuspect(Lease term, CountDownLatch mayReturn) {
        term.addStateListener(
                state -> {
                    if (state == LeaseState.SUSPECT) {
                        awaitUninterruptibly(mayReturn);
                    }
                },
                Runnable::run);
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                latch.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** A client like the fixture's, whose holds end only when its session is lost. */
    private static CuratorFramework sessionPolicyClient() throws InterruptedException {
        return sessionPolicyClient(ZooKeeperFixture.SESSION_TIMEOUT);
    }

    /** One whose session outlives a server restart. */
    private static CuratorFramework outageProofSessionPolicyClient() throws InterruptedException {
        return sessionPolicyClient(ZooKeeperFixture.OUTAGE_PROOF_SESSION);
    }

    private static CuratorFramework sessionPolicyClient(Duration session) throws InterruptedException {
        return sessionPolicyClient(session, c -> {});
    }

    private static CuratorFramework sessionPolicyClient(Duration session, Consumer<CuratorFramework> beforeStart)
            throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(zk.connectString())
                .sessionTimeoutMs((int) session.toMillis())
                .connectionTimeoutMs(2_000)
                .retryPolicy(new RetryNTimes(20, 100))
                .ensembleTracker(false) // it keeps a config watch that would read as a leak
                .connectionStateErrorPolicy(new SessionConnectionStateErrorPolicy())
                .build();
        zk.mode().apply(client);
        beforeStart.accept(client);
        client.start();
        if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("could not connect to " + zk.connectString());
        }
        return client;
    }

    /** A started selector's first term, and what its task counts down once interrupted. */
    private record Leading(LeaderSelector selector, Lease term, CountDownLatch interrupted) {}

    private static Leading leadingSelector(CuratorFramework client, String path) throws Exception {
        CompletableFuture<Lease> granted = new CompletableFuture<>();
        CountDownLatch interrupted = new CountDownLatch(1);
        LeaderSelector selector = leadingUntilInterrupted(client, path, granted::complete, interrupted);
        selector.start();
        return new Leading(selector, granted.get(10, TimeUnit.SECONDS), interrupted);
    }

    /** A selector whose task hands each term to {@code granted}, leads until interrupted, then counts down. */
    private static LeaderSelector leadingUntilInterrupted(
            CuratorFramework client, String path, Consumer<Lease> granted, CountDownLatch interrupted) {
        return new LeaderSelector(client, path, "only", term -> {
            granted.accept(term);
            try {
                LeaderSelectorTest.leadUntilInterrupted(term);
            } finally {
                interrupted.countDown();
            }
        });
    }
}
