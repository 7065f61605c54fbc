package io.coord.election;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.core.internal.Observations;
import io.coord.core.internal.Observer;
import io.coord.testkit.CapturedLog;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperFixture.Session;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/**
 * Terms, requeueing, interruption and leaving, against one embedded server. Run in each engine mode by {@link
 * LeaderSelectorInViewModeTest} and {@link LeaderSelectorInWatchModeTest}, two classes so that the two modes run side
 * by side.
 */
@Timeout(60)
abstract class LeaderSelectorTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    private static final Id ANYONE = new Id("world", "anyone");

    @Parameter
    EngineMode mode;

    @Test
    void fiveAutoRequeueingSelectorsEachLeadOncePerRoundAndNeverTogether() throws Exception {
        String path = ZooKeeperFixture.uniquePath("rounds");
        int selectors = 5;
        int rounds = 3;
        CountDownLatch everyoneQueued = new CountDownLatch(1);
        AtomicInteger running = new AtomicInteger();
        AtomicInteger mostAtOnce = new AtomicInteger();
        List<String> leaders = new CopyOnWriteArrayList<>();
        List<Long> epochs = new CopyOnWriteArrayList<>();
        List<LeaderSelector> all = new ArrayList<>();
        for (int i = 0; i < selectors; i++) {
            String id = "s" + i;
            LeaderSelector selector = new LeaderSelector(zk.newClient(), path, id, term -> {
                mostAtOnce.accumulateAndGet(running.incrementAndGet(), Math::max);
                try {
                    everyoneQueued.await();
                    leaders.add(id);
                    epochs.add(term.fencingToken());
                } finally {
                    running.decrementAndGet();
                }
            });
            selector.autoRequeue();
            selector.start();
            int joined = i + 1;
            await().until(() -> selector.participants().size() == joined);
            all.add(selector);
        }
        everyoneQueued.countDown();

        await().until(() -> leaders.size() >= selectors * rounds);
        all.forEach(LeaderSelector::close);

        List<String> oneRound = List.of("s0", "s1", "s2", "s3", "s4");
        for (int round = 0; round < rounds; round++) {
            assertEquals(oneRound, leaders.subList(round * selectors, (round + 1) * selectors), "round " + round);
        }
        assertEquals(1, mostAtOnce.get(), "tasks running at once");
        for (int i = 1; i < epochs.size(); i++) {
            assertTrue(epochs.get(i) > epochs.get(i - 1), "epochs " + epochs);
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void aSelectorStartedBeforeItsClientIsRefusedAndCanBeStartedOnceTheClientIs() throws Exception {
        String path = ZooKeeperFixture.uniquePath("selector-before-client");
        CuratorFramework client = zk.unstartedClient();
        CompletableFuture<String> led = new CompletableFuture<>();
        LeaderSelector selector = new LeaderSelector(client, path, "early", term -> led.complete("led"));
        IllegalStateException early = assertThrows(IllegalStateException.class, selector::start);
        assertEquals("the client must be started before joining the election at " + path, early.getMessage());

        client.start();
        selector.start();
        assertEquals("led", led.get(10, TimeUnit.SECONDS));
        selector.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void interruptLeadershipEndsTheTaskAndItsTerm() throws Exception {
        String path = ZooKeeperFixture.uniquePath("interrupt");
        CompletableFuture<Throwable> ended = new CompletableFuture<>();
        LeaderSelector selector = new LeaderSelector(zk.newClient(), path, "x", term -> {
            try {
                new CountDownLatch(1).await();
            } catch (InterruptedException e) {
                ended.complete(e);
                throw e;
            }
        });
        selector.start();
        await().until(selector::hasLeadership);
        assertEquals("x", selector.leader().orElseThrow().id());

        selector.interruptLeadership();
        assertTrue(ended.get(10, TimeUnit.SECONDS) instanceof InterruptedException);
        await().until(() -> !selector.hasLeadership() && selector.participants().isEmpty());
        selector.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void twoInterruptsInARowLeaveAnAutoRequeueingSelectorLeadingAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("interrupt-twice");
        AtomicInteger terms = new AtomicInteger();
        LeaderSelector selector = new LeaderSelector(zk.newClient(), path, "x", term -> {
            terms.incrementAndGet();
            leadUntilInterrupted(term);
        });
        selector.autoRequeue();
        selector.start();
        await().until(selector::hasLeadership);

        // The second may reach the first term on its way out, or the next one as it starts: either way one of them
        // leads at the end.
        selector.interruptLeadership();
        selector.interruptLeadership();
        await().until(() ->
                terms.get() >= 2 && selector.hasLeadership() && ids(selector).equals(List.of("x")));
        selector.close();
        await().until(() -> !selector.hasLeadership());
        zk.assertNoLeaks(path);
    }

    @Test
    void aTaskThatThrowsEndsItsTermSaysWhyAndAutoRequeueLeadsAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("throws");
        List<Exception> checkedOrNot = List.of(new IllegalStateException("task bug"), new IOException("task bug"));
        AtomicInteger terms = new AtomicInteger();
        CountDownLatch lastTerm = new CountDownLatch(1);
        LeaderSelector selector = new LeaderSelector(zk.newClient(), path, "x", term -> {
            int n = terms.getAndIncrement();
            if (n < checkedOrNot.size()) {
                throw checkedOrNot.get(n);
            }
            if (n == checkedOrNot.size()) {
                throw new AssertionError("task bug"); // an Error, which no executor's thread should have to log
            }
            lastTerm.countDown();
            new CountDownLatch(1).await(); // lead until closed
        });
        List<String> lines;
        try (CapturedLog log = new CapturedLog()) {
            selector.autoRequeue();
            selector.start();
            assertTrue(lastTerm.await(10, TimeUnit.SECONDS));
            lines = log.linesOf("io.coord.election");
        }
        assertEquals(
                3,
                lines.stream()
                        .filter(l -> l.contains("takeLeadership failed, so its term ends"))
                        .count(),
                lines.toString());
        assertTrue(selector.hasLeadership());
        selector.close();
        await().until(() -> !selector.hasLeadership());
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaderWhoseSessionExpiresIsInterruptedAndRequeuesOnItsNewSession() throws Exception {
        String path = ZooKeeperFixture.uniquePath("expired");
        List<String> terms = new CopyOnWriteArrayList<>();
        List<Long> tokens = new CopyOnWriteArrayList<>();
        CuratorFramework firstClient = zk.newClient();
        LeaderSelector first = recordingSelector(firstClient, path, "first", terms, tokens);
        LeaderSelector second = recordingSelector(zk.newClient(), path, "second", terms, tokens);
        firstLeadsSecondWaits(first, second);

        zk.expireSession(firstClient);
        await().until(second::hasLeadership);
        await().until(() -> !first.hasLeadership()); // its client may hear of the expiry after the other's grant
        await().alias("the expired leader queued again on its new session")
                .atMost(Duration.ofSeconds(20))
                .until(() -> ids(second).equals(List.of("second", "first")));

        theFirstLeadsAgainOnceTheSecondLeaves(first, second, terms, tokens);
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaderWhoseClientGivesUpOnItsSessionHandsOverOnceBackWithoutWaitingForTheServersExpiry() throws Exception {
        String path = ZooKeeperFixture.uniquePath("given-up");
        List<String> terms = new CopyOnWriteArrayList<>();
        List<Long> tokens = new CopyOnWriteArrayList<>();
        CuratorFramework firstClient = zk.newClientGivingUpBeforeTheServer();
        Session old = Session.of(firstClient);
        LeaderSelector first = recordingSelector(firstClient, path, "first", terms, tokens);
        LeaderSelector second = recordingSelector(zk.newOutageProofClient(), path, "second", terms, tokens);
        firstLeadsSecondWaits(first, second);

        zk.stopServer();
        await().atMost(Duration.ofSeconds(20))
                .until(() -> firstClient.getZookeeperClient().getZooKeeper().getSessionId() != old.id());
        zk.restartServer();

        await().atMost(Duration.ofSeconds(20)).until(second::hasLeadership);
        await().alias("the first queued again on its new session, behind the second")
                .atMost(Duration.ofSeconds(20))
                .until(() -> ids(second).equals(List.of("second", "first")));
        assertTrue(zk.endSessionIfAlive(old), "the old session had already expired");
        theFirstLeadsAgainOnceTheSecondLeaves(first, second, terms, tokens);
        zk.assertNoLeaks(path);
    }

    /** Starts {@code first}, requeueing after each term, and {@code second} behind it once it leads. */
    @Test
    void closingTheClientOfAnAutoRequeueingLeaderLogsNoWarning() throws Exception {
        String path = ZooKeeperFixture.uniquePath("selector-client-closed");
        CuratorFramework client = zk.newClient();
        AtomicReference<Thread> leader = new AtomicReference<>();
        LeaderSelector selector = new LeaderSelector(client, path, "closing", term -> {
            leader.set(Thread.currentThread());
            new CountDownLatch(1).await(); // until interrupted
        });
        selector.autoRequeue();
        selector.start();
        await().until(() -> leader.get() != null);

        List<String> lines;
        try (CapturedLog log = new CapturedLog()) {
            client.close();
            // The selector's thread ends the term, fails to queue again (which it logs), and goes idle in its pool.
            await().until(() -> Arrays.stream(leader.get().getStackTrace())
                    .noneMatch(frame -> frame.getClassName().startsWith(SelectorTerms.class.getName())));
            lines = log.linesOf("io.coord.election");
        }
        assertEquals(List.of(), lines, "an orderly shutdown is no warning (the tests log WARN and up)");
        selector.close();
        zk.assertNoLeaks(path);
    }

    private static void firstLeadsSecondWaits(LeaderSelector first, LeaderSelector second) {
        first.autoRequeue();
        first.start();
        await().until(first::hasLeadership);
        second.start();
        await().until(() -> first.participants().size() == 2);
    }

    /** Closes the leading {@code second}, and checks the terms were the first's, the second's, then the first's. */
    private static void theFirstLeadsAgainOnceTheSecondLeaves(
            LeaderSelector first, LeaderSelector second, List<String> terms, List<Long> tokens) {
        second.close();
        // A task records its term as it starts, just after it leads.
        await().atMost(Duration.ofSeconds(20)).until(() -> terms.size() == 3);
        assertEquals(List.of("first", "second", "first"), terms);
        assertTrue(tokens.get(0) < tokens.get(1) && tokens.get(1) < tokens.get(2), tokens.toString());
        first.close();
    }

    private static LeaderSelector recordingSelector(
            CuratorFramework client, String path, String id, List<String> terms, List<Long> tokens) {
        return new LeaderSelector(client, path, id, term -> {
            tokens.add(term.fencingToken());
            terms.add(id); // last: a caller that sees the term sees its token
            leadUntilInterrupted(term);
        });
    }

    @Test
    void requeueEntersOnceAndOnlyWhenIdle() throws Exception {
        String path = ZooKeeperFixture.uniquePath("requeue");
        Semaphore release = new Semaphore(0);
        List<Long> epochs = new CopyOnWriteArrayList<>();
        LeaderSelector selector = new LeaderSelector(zk.newClient(), path, "x", term -> {
            epochs.add(term.fencingToken());
            release.acquire();
        });
        selector.start();
        await().until(() -> epochs.size() == 1);
        assertFalse(selector.requeue(), "leading");

        release.release();
        await().until(selector::requeue);
        await().until(() -> epochs.size() == 2);
        assertFalse(selector.requeue(), "leading again");
        assertTrue(epochs.get(1) > epochs.get(0), epochs.toString());
        selector.close();
        assertFalse(selector.requeue(), "closed");
        zk.assertNoLeaks(path);
    }

    @Test
    void closingWhileWaitingLeavesNoZnode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("leave");
        LeaderSelector holder =
                new LeaderSelector(zk.newClient(), path, "holder", LeaderSelectorTest::leadUntilInterrupted);
        LeaderSelector waiter = new LeaderSelector(zk.newClient(), path, "waiter", term -> {
            throw new AssertionError("the waiter never leads");
        });
        holder.start();
        await().until(holder::hasLeadership);
        waiter.start();
        await().until(() -> holder.participants().size() == 2);

        waiter.close();
        waiter.close(); // idempotent
        await().until(() -> holder.participants().size() == 1);
        assertTrue(holder.hasLeadership());
        holder.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaderWhoseNodeSomebodyElseDeletesIsInterrupted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("deleted");
        AtomicReference<Lease> oldTerm = new AtomicReference<>();
        CountDownLatch oldInterrupted = new CountDownLatch(1);
        LeaderSelector old = new LeaderSelector(zk.newClient(), path, "old", term -> {
            oldTerm.set(term);
            try {
                leadUntilInterrupted(term);
            } finally {
                oldInterrupted.countDown();
            }
        });
        CountDownLatch nextLeads = new CountDownLatch(1);
        LeaderSelector next = new LeaderSelector(zk.newClient(), path, "next", term -> {
            nextLeads.countDown();
            leadUntilInterrupted(term);
        });
        old.start(); // its first term on the path: granted from a read, without a view
        await().until(() -> oldTerm.get() != null);
        next.start();
        await().until(() -> next.participants().size() == 2);

        zk.newClient().delete().forPath(oldTerm.get().path()); // by hand, or by a forced revocation

        assertTrue(nextLeads.await(10, TimeUnit.SECONDS));
        assertTrue(oldInterrupted.await(10, TimeUnit.SECONDS), "two tasks lead at once");
        assertEquals(LeaseState.LOST, oldTerm.get().state());
        assertFalse(old.hasLeadership());
        old.close();
        next.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aSelectorWhoseWaitingNodeSomebodyElseDeletesNeverRunsItsTaskOnIt() throws Exception {
        deletedWaiterQueuesAgainBehindTheNext(true);
    }

    @Test
    void aSelectorThatDoesNotRequeueStillQueuesAgainWhenItsWaitingNodeWasDeleted() throws Exception {
        deletedWaiterQueuesAgainBehindTheNext(false); // its term never led, so it does not count as its one term
    }

    private static void deletedWaiterQueuesAgainBehindTheNext(boolean autoRequeue) throws Exception {
        String path = ZooKeeperFixture.uniquePath("deleted-waiter");
        CountDownLatch firstLeads = new CountDownLatch(1);
        CountDownLatch firstMayReturn = new CountDownLatch(1);
        LeaderSelector first = new LeaderSelector(zk.newClient(), path, "first", term -> {
            firstLeads.countDown();
            firstMayReturn.await();
        });
        AtomicInteger secondTerms = new AtomicInteger();
        LeaderSelector second =
                new LeaderSelector(zk.newClient(), path, "second", term -> secondTerms.incrementAndGet());
        if (autoRequeue) {
            second.autoRequeue();
        }
        CountDownLatch thirdLeads = new CountDownLatch(1);
        LeaderSelector third = new LeaderSelector(zk.newClient(), path, "third", term -> {
            thirdLeads.countDown();
            leadUntilInterrupted(term);
        });
        first.start();
        assertTrue(firstLeads.await(10, TimeUnit.SECONDS));
        DeletedWaiter.queueTwoAndDeleteTheSecond(zk, path, first::participants, second::start, third::start);
        firstMayReturn.countDown();

        assertTrue(thirdLeads.await(10, TimeUnit.SECONDS));
        // The second learns that its node is gone rather than run its task on it, and queues again behind the third.
        await().until(() -> third.participants().size() == 2
                && third.participants().get(1).id().equals("second"));
        assertEquals(0, secondTerms.get(), "the second's task never ran");
        assertFalse(second.hasLeadership());
        assertFalse(second.requeue(), "queued already");

        third.close(); // the second's turn comes
        await().until(() -> secondTerms.get() >= 1);
        first.close();
        second.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aTaskThatClosesItsOwnTermIsInterruptedForTheNextLeaderMayStart() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-by-task");
        CountDownLatch closedInterrupted = new CountDownLatch(1);
        AtomicReference<Lease> closedTerm = new AtomicReference<>();
        LeaderSelector closing = new LeaderSelector(zk.newClient(), path, "closing", term -> {
            closedTerm.set(term);
            term.close(); // hands over early, and goes on as if it still led
            try {
                leadUntilInterrupted(term);
            } finally {
                closedInterrupted.countDown();
            }
        });
        AtomicInteger nextTerms = new AtomicInteger();
        LeaderSelector next = new LeaderSelector(zk.newClient(), path, "next", term -> {
            nextTerms.incrementAndGet();
            leadUntilInterrupted(term);
        });
        next.autoRequeue();
        next.start();
        await().until(next::hasLeadership);
        closing.start();
        await().until(() -> next.participants().size() == 2);
        next.interruptLeadership(); // the closing selector leads, the next one queues behind it

        await().alias("the next leader starts once the term is closed").until(() -> nextTerms.get() == 2);
        assertTrue(closedInterrupted.await(10, TimeUnit.SECONDS), "the task goes on while the next leader leads");
        assertEquals(LeaseState.RELEASED, closedTerm.get().state());
        assertFalse(closing.hasLeadership());
        closing.close();
        next.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void observersHearThatASelectorLeadsWhileItsTaskRunsOnATermThatLeads() throws Exception {
        String path = ZooKeeperFixture.uniquePath("observed-selector");
        List<Boolean> heard = new CopyOnWriteArrayList<>();
        Observer observer = new Observer() {
            @Override
            public void leadershipChanged(String at, String primitive, String participant, boolean gained) {
                if (at.equals(path)) {
                    heard.add(gained);
                }
            }
        };
        Observations.add(observer);
        try {
            CountDownLatch taskEnded = new CountDownLatch(1);
            CountDownLatch mayReturn = new CountDownLatch(1);
            AtomicReference<Lease> term = new AtomicReference<>();
            LeaderSelector selector = new LeaderSelector(zk.newClient(), path, "observed", lease -> {
                term.set(lease);
                try {
                    leadUntilInterrupted(lease);
                } finally {
                    taskEnded.countDown();
                    mayReturn.await(); // the term goes on until the task returns
                }
            });
            selector.start();
            await().until(() -> heard.equals(List.of(true)));

            zk.newClient().delete().forPath(term.get().path()); // the term stops leading, the task is interrupted
            assertTrue(taskEnded.await(10, TimeUnit.SECONDS));
            await().until(() -> heard.equals(List.of(true, false)));
            mayReturn.countDown();
            selector.close();
            await().until(() -> !selector.hasLeadership());
            assertEquals(List.of(true, false), heard, "the task's return is the same end, told once");
            zk.assertNoLeaks(path);
        } finally {
            Observations.remove(observer);
        }
    }

    @Test
    void anAutoRequeueingSelectorWhoseAttemptsAreRefusedTriesAgainUntilItLeads() throws Exception {
        assumeTrue(mode == EngineMode.VIEW, "the retry is the selector's own, whatever the engine's mode");
        CuratorFramework client = zk.newClient();
        String path = refusingPath(client, "refused");
        try (AttemptCounter attempts = new AttemptCounter(path)) {
            CountDownLatch led = new CountDownLatch(1);
            LeaderSelector selector = new LeaderSelector(client, path, "refused", term -> led.countDown());
            selector.autoRequeue();
            selector.start();
            await("a refused attempt made again").until(() -> attempts.started() >= 2);
            assertFalse(selector.requeue(), "still queued while it waits to try again");

            openUp(client, path);
            assertTrue(led.await(20, TimeUnit.SECONDS));
            selector.close();
            zk.assertNoLeaks(path);
        }
    }

    @Test
    void aSelectorClosedWhileItWaitsToTryAgainSendsNothingMore() throws Exception {
        assumeTrue(mode == EngineMode.VIEW, "the retry is the selector's own, whatever the engine's mode");
        CuratorFramework client = zk.newClient();
        String path = refusingPath(client, "refused-then-closed");
        try (AttemptCounter attempts = new AttemptCounter(path)) {
            LeaderSelector selector = new LeaderSelector(client, path, "closed", term -> {});
            selector.autoRequeue();
            selector.start();
            await().until(() -> attempts.started() >= 2);
            selector.close();
            int made = attempts.started();
            openUp(client, path);

            // The next try was due 2 s after the last: give it 3 s to show itself.
            await().during(Duration.ofSeconds(3))
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> attempts.started() == made);
            zk.assertNoLeaks(path);
        }
    }

    /** A path anyone may read and set the ACL of, and nobody may create under until {@link #openUp} puts it right. */
    private static String refusingPath(CuratorFramework client, String name) throws Exception {
        String path = ZooKeeperFixture.uniquePath(name);
        client.create()
                .creatingParentsIfNeeded()
                .withACL(List.of(new ACL(ZooDefs.Perms.READ | ZooDefs.Perms.ADMIN, ANYONE)))
                .forPath(path);
        return path;
    }

    private static void openUp(CuratorFramework client, String path) throws Exception {
        client.setACL().withACL(List.of(new ACL(ZooDefs.Perms.ALL, ANYONE))).forPath(path);
    }

    /** Counts the acquisitions started at one path while it is open. */
    private static final class AttemptCounter implements Observer, AutoCloseable {
        private final String path;
        private final AtomicInteger started = new AtomicInteger();

        AttemptCounter(String path) {
            this.path = path;
            Observations.add(this);
        }

        int started() {
            return started.get();
        }

        @Override
        public void acquisitionStarted(String at, String primitive) {
            if (at.equals(path)) {
                started.incrementAndGet();
            }
        }

        @Override
        public void close() {
            Observations.remove(this);
        }
    }

    @Test
    void droppedConnectionInterruptsTheTaskAndTheSelectorLeadsAgainAfterReconnect() throws Exception {
        interruptedByADropAndLeadingAgainOnceBack(zk.newClient(), new CountDownLatch(0), "suspect");
    }

    @Test
    void droppedConnectionInterruptsTheTaskWhileCuratorsListenerThreadIsHeldUp() throws Exception {
        CuratorFramework client = zk.unstartedClient(ZooKeeperFixture::outageProof);
        // An application's listener that blocks: Curator's listener thread tells nobody of the drop while it does.
        CountDownLatch letGo = ZooKeeperFixture.holdUpListenerThread(client);
        client.start();
        interruptedByADropAndLeadingAgainOnceBack(client, letGo, "suspect-listener-held");
    }

    /**
     * A requeueing selector on {@code client} leads until interrupted: the server's stop interrupts its task, and once
     * the server is back and {@code letGo} counted down, it leads again with a later term.
     */
    private static void interruptedByADropAndLeadingAgainOnceBack(
            CuratorFramework client, CountDownLatch letGo, String name) throws Exception {
        String path = ZooKeeperFixture.uniquePath(name);
        List<Long> epochs = new CopyOnWriteArrayList<>();
        CountDownLatch interrupted = new CountDownLatch(1);
        LeaderSelector selector = new LeaderSelector(client, path, "x", term -> {
            epochs.add(term.fencingToken());
            try {
                leadUntilInterrupted(term);
            } finally {
                interrupted.countDown();
            }
        });
        selector.autoRequeue();
        try {
            selector.start();
            await().until(selector::hasLeadership);

            zk.stopServer();
            assertTrue(interrupted.await(10, TimeUnit.SECONDS));
            assertFalse(selector.hasLeadership());
        } finally {
            letGo.countDown();
            if (!zk.ensemble().servers().get(0).isRunning()) {
                zk.restartServer();
            }
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> epochs.size() >= 2 && selector.hasLeadership());
        assertTrue(epochs.get(1) > epochs.get(0), epochs.toString());
        selector.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void cancelQueuedWithdrawsTheAttemptUntilRequeueQueuesItAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("cancel");
        Semaphore endHolderTerm = new Semaphore(0);
        List<Long> holderTerms = new CopyOnWriteArrayList<>();
        LeaderSelector holder = new LeaderSelector(zk.newClient(), path, "holder", term -> {
            holderTerms.add(term.fencingToken());
            endHolderTerm.acquire();
        });
        List<Long> waiterTerms = new CopyOnWriteArrayList<>();
        LeaderSelector waiter = new LeaderSelector(zk.newClient(), path, "waiter", term -> {
            waiterTerms.add(term.fencingToken());
            leadUntilInterrupted(term);
        });
        holder.autoRequeue();
        holder.start();
        await().until(() -> holderTerms.size() == 1);
        waiter.start();
        await().until(() -> holder.participants().size() == 2);

        assertTrue(waiter.cancelQueued());
        assertFalse(waiter.cancelQueued(), "nothing is queued any more");
        await().until(() -> ids(waiter).equals(List.of("holder")));

        // The holder's term ends; it queues again and, with the waiter gone, leads again.
        endHolderTerm.release();
        await().until(() -> holderTerms.size() == 2);
        assertTrue(waiterTerms.isEmpty(), waiterTerms.toString());
        assertFalse(waiter.hasLeadership());

        assertTrue(waiter.requeue());
        await().until(() -> ids(waiter).equals(List.of("holder", "waiter")));
        endHolderTerm.release();
        await().until(() -> waiter.hasLeadership() && waiterTerms.size() == 1);
        assertTrue(waiterTerms.get(0) > holderTerms.get(1), waiterTerms + " after " + holderTerms);
        await().until(() -> ids(waiter).equals(List.of("waiter", "holder")));

        holder.close();
        waiter.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void cancelQueuedAnswersFalseWhenNothingIsQueued() throws Exception {
        String path = ZooKeeperFixture.uniquePath("cancel-nothing");
        LeaderSelector selector =
                new LeaderSelector(zk.newClient(), path, "x", LeaderSelectorTest::leadUntilInterrupted);
        assertFalse(selector.cancelQueued(), "not started");
        selector.start();
        await().until(selector::hasLeadership);

        assertFalse(selector.cancelQueued(), "leading");
        assertTrue(selector.hasLeadership());
        assertEquals(List.of("x"), ids(selector));
        selector.close();
        assertFalse(selector.cancelQueued(), "closed");
        await().until(() -> !selector.hasLeadership());
        zk.assertNoLeaks(path);
    }

    private static List<String> ids(LeaderSelector selector) {
        return selector.participants().stream().map(Participant::id).toList();
    }

    static void leadUntilInterrupted(Lease term) throws InterruptedException {
        new CountDownLatch(1).await();
    }
}
