package io.coord.election;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.testkit.Acls;
import io.coord.testkit.CapturedLog;
import io.coord.testkit.EngineMode;
import io.coord.testkit.KeptRequests;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperFixture.Session;
import io.coord.testkit.ZooKeeperProxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/**
 * Session expiry and connection loss under a leading latch. Run in each engine mode by {@link
 * LeaderLatchFaultInViewModeTest} and {@link LeaderLatchFaultInWatchModeTest}, two classes so that the two modes run
 * side by side.
 */
@Timeout(60)
abstract class LeaderLatchFaultTest {
    private static final Id ANYONE = new Id("world", "anyone");

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void expiredLeaderStepsDownAndTheNextLeadsWithAHigherEpoch() throws Exception {
        String path = ZooKeeperFixture.uniquePath("expiry");
        CuratorFramework leaderClient = zk.newClient();
        LeaderLatch old = new LeaderLatch(leaderClient, path, "old");
        LeaderLatch next = new LeaderLatch(zk.newClient(), path, "next");
        TermRecorder oldTerms = new TermRecorder();
        old.addListener(oldTerms, Runnable::run);
        old.start();
        assertTrue(old.await(Duration.ofSeconds(10)));
        Lease stale = old.term().orElseThrow();
        next.start();
        await().until(() -> next.participants().size() == 2);

        zk.expireSession(leaderClient);

        assertTrue(next.await(Duration.ofSeconds(20)));
        Lease successor = next.term().orElseThrow();
        assertTrue(successor.fencingToken() > stale.fencingToken(), successor + " after " + stale);
        await().until(() -> oldTerms.events.contains("notLeader"));
        assertFalse(old.hasLeadership());
        // SUSPECT until the old client hears that its session expired; never HELD again.
        await().atMost(Duration.ofSeconds(20)).until(() -> stale.state() == LeaseState.LOST);
        // The old leader queues again with a new znode, behind the new leader.
        await().atMost(Duration.ofSeconds(20)).until(() -> next.participants().size() == 2);
        assertEquals("old", next.participants().get(1).id());
        assertFalse(old.hasLeadership());

        next.close();
        assertTrue(old.await(Duration.ofSeconds(20)));
        Lease later = old.term().orElseThrow();
        assertNotEquals(stale.path(), later.path());
        assertTrue(later.fencingToken() > successor.fencingToken(), later + " after " + successor);
        await().until(() -> oldTerms.events.size() == 3); // listeners hear of it just after the state changed
        assertEquals(List.of("isLeader", "notLeader", "isLeader"), oldTerms.events);
        assertEquals(List.of(stale, later), oldTerms.terms);
        old.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaderWhoseNodeSomebodyElseDeletesStopsLeading() throws Exception {
        String path = ZooKeeperFixture.uniquePath("deleted");
        LeaderLatch old = new LeaderLatch(zk.newClient(), path, "old");
        LeaderLatch next = new LeaderLatch(zk.newClient(), path, "next");
        TermRecorder oldTerms = new TermRecorder();
        old.addListener(oldTerms, Runnable::run);
        old.start(); // its first term on the path: granted from a read, without a view
        assertTrue(old.await(Duration.ofSeconds(10)));
        Lease term = old.term().orElseThrow();
        next.start();
        await().until(() -> next.participants().size() == 2);

        zk.newClient().delete().forPath(term.path()); // by hand, or by a forced revocation

        assertTrue(next.await(Duration.ofSeconds(10)));
        await().until(() -> term.state() == LeaseState.LOST);
        await().until(() -> oldTerms.events.contains("notLeader"));
        assertFalse(old.hasLeadership());
        old.close();
        next.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aCandidateWhoseWaitingNodeSomebodyElseDeletesNeverLeadsOnItAndQueuesAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("deleted-waiter");
        LeaderLatch first = new LeaderLatch(zk.newClient(), path, "first");
        LeaderLatch second = new LeaderLatch(zk.newClient(), path, "second");
        LeaderLatch third = new LeaderLatch(zk.newClient(), path, "third");
        TermRecorder secondTerms = new TermRecorder();
        second.addListener(secondTerms, Runnable::run);
        first.start();
        assertTrue(first.await(Duration.ofSeconds(10)));
        DeletedWaiter.queueTwoAndDeleteTheSecond(zk, path, first::participants, second::start, third::start);
        first.close();

        assertTrue(third.await(Duration.ofSeconds(10)));
        // The second learns that its node is gone rather than lead on it, and queues again behind the third.
        await().until(() -> third.participants().size() == 2
                && third.participants().get(1).id().equals("second"));
        assertEquals(List.of(), secondTerms.events, "the second never led");
        assertFalse(second.hasLeadership());
        third.close();
        assertTrue(second.await(Duration.ofSeconds(10)));
        second.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aCandidateWhoseConfirmingReadIsThrottledReadsAgainAndLeads() throws Exception {
        String path = ZooKeeperFixture.uniquePath("throttled-confirmation");
        LeaderLatch first = new LeaderLatch(zk.newClient(), path, "first");
        first.start();
        assertTrue(first.await(Duration.ofSeconds(10)));
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // Its client's first term on the path waits on a watch of the leader's node, so its grant waits for the read
        // of its own node that confirms it.
        CuratorFramework secondClient = zk.newCustomClient(b -> b.connectString(proxy.connectString()));
        LeaderLatch second = new LeaderLatch(secondClient, path, "second");
        second.start();
        await().until(() -> first.participants().size() == 2);

        proxy.failNextReply(Code.THROTTLEDOP); // what a server with request throttling on answers when it is busy
        first.close();
        assertTrue(second.await(Duration.ofSeconds(10)), "the refused read was made again");
        second.close();
        secondClient.close();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aCandidateWhoseNodesItMayNotReadStillLeadsWhenItsTurnComes() throws Exception {
        String path = ZooKeeperFixture.uniquePath("unreadable");
        // The second's node gets every permission but READ: its create and delete work, a read of it does not. (A
        // candidate waits on a watch of the node before its own, so that one must be readable.)
        List<ACL> unreadable = List.of(new ACL(ZooDefs.Perms.ALL & ~ZooDefs.Perms.READ, new Id("world", "anyone")));
        List<ACL> open = List.of(new ACL(ZooDefs.Perms.ALL, new Id("world", "anyone")));
        LeaderLatch first = new LeaderLatch(zk.newClient(), path, "first");
        LeaderLatch second = new LeaderLatch(
                zk.newCustomClient(b -> b.aclProvider(Acls.byPath(p -> p.contains("-latch-"), unreadable, open))),
                path,
                "second");
        first.start();
        assertTrue(first.await(Duration.ofSeconds(10)));
        second.start();
        CuratorFramework observer = zk.newClient();
        await().until(() -> observer.getChildren().forPath(path).size() == 2);

        first.close();

        // Granted when the node before it went; no read of its own node can confirm it, but NOAUTH says it is there.
        assertTrue(second.await(Duration.ofSeconds(10)));
        second.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void droppedConnectionSuspendsLeadershipAndReconnectRestoresTheSameTerm() throws Exception {
        String path = ZooKeeperFixture.uniquePath("suspect");
        LeaderLatch latch = new LeaderLatch(zk.newOutageProofClient(), path, "only");
        TermRecorder recorder = new TermRecorder();
        latch.addListener(recorder, Runnable::run);
        latch.start();
        assertTrue(latch.await(Duration.ofSeconds(10)));
        Lease term = latch.term().orElseThrow();

        zk.stopServer();
        await().until(() -> term.state() == LeaseState.SUSPECT);
        assertFalse(latch.hasLeadership());
        assertTrue(latch.term().isEmpty());
        await().until(() -> recorder.events.equals(List.of("isLeader", "notLeader")));

        zk.restartServer();
        assertTrue(latch.await(Duration.ofSeconds(20)));
        await().until(() -> recorder.events.size() == 3);
        assertEquals(List.of("isLeader", "notLeader", "isLeader"), recorder.events);
        assertSame(term, latch.term().orElseThrow());
        assertSame(term, recorder.terms.get(1));
        latch.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaderStepsDownOnADropAndOnItsSessionsEndWhileCuratorsListenerThreadIsHeldUp() throws Exception {
        String path = ZooKeeperFixture.uniquePath("listener-held");
        CuratorFramework client = zk.unstartedClient(ZooKeeperFixture::outageProof); // the same session after a restart
        // An application's listener that blocks: Curator's listener thread tells nobody of what follows while it does.
        CountDownLatch letGo = ZooKeeperFixture.holdUpListenerThread(client);
        client.start();
        LeaderLatch latch = new LeaderLatch(client, path, "only");
        TermRecorder recorder = new TermRecorder();
        latch.addListener(recorder, Runnable::run);
        Lease first;
        try {
            latch.start();
            assertTrue(latch.await(Duration.ofSeconds(10)));
            first = latch.term().orElseThrow();

            zk.stopServer();
            await().until(() -> recorder.events.equals(List.of("isLeader", "notLeader")));
            assertFalse(latch.hasLeadership());
            zk.restartServer();
            // The same session: the same term leads again once its node is found still this session's.
            assertTrue(latch.await(Duration.ofSeconds(20)));
            assertSame(first, latch.term().orElseThrow());
            zk.expireSession(client);
            assertEquals(LeaseState.LOST, first.ended().get(10, TimeUnit.SECONDS));
        } finally {
            letGo.countDown();
            if (!zk.ensemble().servers().get(0).isRunning()) {
                zk.restartServer();
            }
        }
        // It queues again on its new session, and leads with a later term.
        assertTrue(latch.await(Duration.ofSeconds(20)));
        assertTrue(latch.term().orElseThrow().fencingToken() > first.fencingToken());
        latch.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaderDeclaredLostWhileCutOffHandsOverOnceBackWithoutWaitingForTheServersExpiry() throws Exception {
        String path = ZooKeeperFixture.uniquePath("lost-while-cut-off");
        CuratorFramework leaderClient = zk.newClientGivingUpBeforeTheServer();
        Session oldSession = Session.of(leaderClient);
        LeaderLatch old = new LeaderLatch(leaderClient, path, "old");
        TermRecorder oldTerms = new TermRecorder();
        old.addListener(oldTerms, Runnable::run);
        old.start();
        assertTrue(old.await(Duration.ofSeconds(10)));
        Lease stale = old.term().orElseThrow();
        LeaderLatch next = new LeaderLatch(zk.newOutageProofClient(), path, "next");
        next.start();
        await().until(() -> next.participants().size() == 2);

        zk.stopServer();
        await().atMost(Duration.ofSeconds(20)).until(() -> stale.state() == LeaseState.LOST);
        assertFalse(old.hasLeadership());
        zk.restartServer();

        // The old latch withdraws its node and queues again on its new session, behind the next leader.
        assertTrue(next.await(Duration.ofSeconds(20)));
        Lease successor = next.term().orElseThrow();
        assertTrue(successor.fencingToken() > stale.fencingToken(), successor + " after " + stale);
        await().atMost(Duration.ofSeconds(20))
                .until(
                        () -> next.participants().stream().map(Participant::id).toList(),
                        ids -> ids.equals(List.of("next", "old")));
        assertFalse(old.hasLeadership());
        // The hand-over did not wait for the server to expire the old session, which still lives.
        assertTrue(zk.endSessionIfAlive(oldSession), "the old session had already expired");

        next.close();
        assertTrue(old.await(Duration.ofSeconds(20)));
        assertTrue(old.term().orElseThrow().fencingToken() > successor.fencingToken());
        await().until(() -> oldTerms.events.size() == 3);
        assertEquals(List.of("isLeader", "notLeader", "isLeader"), oldTerms.events);
        old.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void closingTheClientEndsLeadershipAndAwaitSaysWhy() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-client");
        CuratorFramework client = zk.newClient();
        LeaderLatch latch = new LeaderLatch(client, path, "only");
        TermRecorder recorder = new TermRecorder();
        latch.addListener(recorder, Runnable::run);
        latch.start();
        assertTrue(latch.await(Duration.ofSeconds(10)));

        client.close();
        await().until(() -> recorder.events.equals(List.of("isLeader", "notLeader")));
        assertFalse(latch.hasLeadership());
        CoordinationException e = assertThrows(CoordinationException.class, () -> latch.await(Duration.ofSeconds(10)));
        assertTrue(e.getMessage().startsWith(latch + " left the election: "), e.getMessage());
        latch.close();
        zk.assertNoLeaks(path);
    }

    /** Records what a latch heard, and the terms it was given. */
    @Test
    void aLatchStartedAndClosedWhileCutOffNeverQueuesANode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("started-closed-cut-off");
        CuratorFramework leaderClient = zk.newClient();
        LeaderLatch leader = new LeaderLatch(leaderClient, path, "leader");
        leader.start();
        assertTrue(leader.await(Duration.ofSeconds(10)));
        long createdBefore = KeptRequests.createsUnder(leaderClient, path);
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // Retries that outlast the cut: Curator would keep a create sent meanwhile, and send it once connected.
        CuratorFramework client = zk.newOutageProofClient(proxy);
        LeaderLatch latch = new LeaderLatch(client, path, "cut-off");
        TermRecorder terms = new TermRecorder();
        latch.addListener(terms, Runnable::run);
        proxy.refuseConnections(true);
        proxy.cutConnections();
        await().until(() -> !client.getZookeeperClient().isConnected());

        latch.start();
        latch.close();
        KeptRequests.reconnectBehindThem(client, proxy, path);

        assertEquals(
                createdBefore,
                KeptRequests.createsUnder(leaderClient, path),
                "a node was queued for a latch closed while cut off");
        assertEquals(
                List.of("leader"),
                leader.participants().stream().map(Participant::id).toList());
        assertEquals(List.of(), terms.events);
        leader.close();
        client.close();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    private static final class TermRecorder implements LeaderListener {
        final List<String> events = new CopyOnWriteArrayList<>();
        final List<Lease> terms = new CopyOnWriteArrayList<>();

        @Override
        public void isLeader(Lease term) {
            terms.add(term);
            events.add("isLeader");
        }

        @Override
        public void notLeader() {
            events.add("notLeader");
        }
    }

    @Test
    void aLatchZooKeeperRefusesSaysWhyAndTriesAgainUntilItIsLetIn() throws Exception {
        String path = ZooKeeperFixture.uniquePath("refused");
        CuratorFramework client = zk.newClient();
        refusingCreates(client, path);
        LeaderLatch latch = new LeaderLatch(client, path, "latch");
        TermRecorder recorder = new TermRecorder();
        latch.addListener(recorder, Runnable::run);

        List<String> lines;
        try (CapturedLog log = new CapturedLog()) {
            latch.start();
            awaitRetry(log, latch, "PT1S");
            lines = log.linesOf(""); // with the cause's stack trace
        }
        assertTrue(lines.stream().anyMatch(l -> l.contains("NoAuth")), lines.toString());
        assertFalse(latch.hasLeadership());
        assertFalse(latch.await(Duration.ZERO), "still in the election, waiting to try again");

        client.setACL().withACL(List.of(new ACL(ZooDefs.Perms.ALL, ANYONE))).forPath(path);
        assertTrue(latch.await(Duration.ofSeconds(20)));
        await().until(() -> recorder.events.equals(List.of("isLeader")));
        latch.close();
        zk.assertNoLeaks(path);
    }

    /** Makes {@code path} with an ACL under which anyone may read it and set its ACL, and nobody may create. */
    private static void refusingCreates(CuratorFramework client, String path) throws Exception {
        client.create()
                .creatingParentsIfNeeded()
                .withACL(List.of(new ACL(ZooDefs.Perms.READ | ZooDefs.Perms.ADMIN, ANYONE)))
                .forPath(path);
    }

    /** Waits until {@code latch} has said it tries again after {@code delay}. */
    private static void awaitRetry(CapturedLog log, LeaderLatch latch, String delay) {
        await().atMost(Duration.ofSeconds(20))
                .until(() -> log.linesOf("io.coord.election").stream()
                        .anyMatch(l -> l.contains(latch + " could not join the election; it tries again in " + delay)));
    }

    @Test
    void aLatchWaitingToTryAgainLeavesTheElectionAsSoonAsItsClientCloses() throws Exception {
        String path = ZooKeeperFixture.uniquePath("refused-then-closed");
        CuratorFramework client = zk.newClient();
        refusingCreates(client, path);
        LeaderLatch latch = new LeaderLatch(client, path, "latch");
        try (CapturedLog log = new CapturedLog()) {
            latch.start();
            awaitRetry(log, latch, "PT2S");
        }

        // The next try is two seconds away: the close must not wait for it.
        client.close();
        CoordinationException closed =
                assertThrows(CoordinationException.class, () -> latch.await(Duration.ofMillis(1_500)));
        assertTrue(closed.getMessage().startsWith(latch + " left the election: "), closed.getMessage());
        latch.close();
    }

    @Test
    void aLatchWhoseRequeueZooKeeperRefusesLeadsOnceLetInAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("requeue-refused");
        CuratorFramework admin = zk.newClient();
        admin.create().creatingParentsIfNeeded().forPath(path); // not a container, which could be reaped with its ACL
        CuratorFramework client = zk.newClient();
        LeaderLatch latch = new LeaderLatch(client, path, "latch");
        TermRecorder recorder = new TermRecorder();
        latch.addListener(recorder, Runnable::run);
        latch.start();
        assertTrue(latch.await(Duration.ofSeconds(10)));

        // Its term is lost with its session; the latch queues again on the next one, where it may not create.
        admin.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.READ | ZooDefs.Perms.ADMIN, ANYONE)))
                .forPath(path);
        try (CapturedLog log = new CapturedLog()) {
            zk.expireSession(client);
            awaitRetry(log, latch, "PT1S");
        }
        assertEquals(List.of("isLeader", "notLeader"), recorder.events);
        assertFalse(latch.hasLeadership());

        admin.setACL().withACL(List.of(new ACL(ZooDefs.Perms.ALL, ANYONE))).forPath(path);
        assertTrue(latch.await(Duration.ofSeconds(20)));
        await().until(() -> recorder.events.equals(List.of("isLeader", "notLeader", "isLeader")));
        assertEquals(2, recorder.terms.size());
        assertTrue(recorder.terms.get(1).fencingToken() > recorder.terms.get(0).fencingToken());
        latch.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aSelectorZooKeeperRefusesThatDoesNotRequeueByItselfIsOutOfTheElection() throws Exception {
        String path = ZooKeeperFixture.uniquePath("refused-selector");
        List<ACL> creatorOnly = new ArrayList<>(List.of(new ACL(ZooDefs.Perms.ALL, new Id("auth", ""))));
        CuratorFramework owner =
                zk.newCustomClient(b -> b.authorization("digest", "owner:secret".getBytes(StandardCharsets.UTF_8)));
        owner.create().creatingParentsIfNeeded().withACL(creatorOnly).forPath(path);

        // requeue() finds it out of the election. (One that requeues by itself tries again later, as
        // LeaderSelectorTest shows.)
        LeaderSelector selector = new LeaderSelector(zk.newClient(), path, "selector", term -> {});
        selector.start();
        await().until(selector::requeue);
        assertFalse(selector.hasLeadership());
        selector.close();
    }

    @Test
    void closingTheClientOfALeaderLogsNoWarning() throws Exception {
        String path = ZooKeeperFixture.uniquePath("leader-client-closed");
        CuratorFramework client = zk.newClient();
        LeaderLatch latch = new LeaderLatch(client, path, "closing");
        latch.start();
        latch.await();

        List<String> lines;
        try (CapturedLog log = new CapturedLog()) {
            client.close();
            await().alias("the latch left the election, which it logs first").until(() -> {
                try {
                    latch.await(Duration.ZERO);
                    return false;
                } catch (CoordinationException e) {
                    return true;
                }
            });
            lines = log.linesOf("io.coord.election");
        }
        assertEquals(List.of(), lines, "an orderly shutdown is no warning (the tests log WARN and up)");
        latch.close();
        zk.assertNoLeaks(path);
    }
}
