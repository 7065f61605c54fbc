package io.coord.election;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.Participant;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** Election, hand-over, listeners and leaving, against one embedded server. */
@InBothEngineModes
@Timeout(60)
class LeaderLatchTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void tenLatchesElectOneLeaderAndClosingItHandsOverToTheEarliestRemaining() throws Exception {
        String path = ZooKeeperFixture.uniquePath("ten");
        List<LeaderLatch> latches = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            LeaderLatch latch = new LeaderLatch(zk.newClient(), path, "p" + i);
            latch.start();
            int joined = i + 1;
            // One at a time, so that queue order is start order.
            await().until(() -> latch.participants().size() == joined);
            latches.add(latch);
        }
        assertTrue(latches.get(0).await(Duration.ofSeconds(10)));
        assertEquals(List.of("p0"), leaders(latches));
        assertEquals("p0", latches.get(5).leader().orElseThrow().id());
        long epoch = latches.get(0).term().orElseThrow().fencingToken();

        latches.get(2).close(); // a waiter leaves: the queue closes up
        latches.get(0).close();
        assertFalse(latches.get(0).hasLeadership());
        assertTrue(latches.get(1).await(Duration.ofSeconds(10)));
        assertEquals(List.of("p1"), leaders(latches));
        latches.get(1).close();
        for (int next = 3; next < 10; next++) {
            LeaderLatch successor = latches.get(next);
            assertTrue(successor.await(Duration.ofSeconds(10)), successor.toString());
            assertEquals(List.of(successor.id()), leaders(latches));
            long term = successor.term().orElseThrow().fencingToken();
            assertTrue(term > epoch, "epoch " + term + " after " + epoch);
            epoch = term;
            successor.close();
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void listenersHearLeadershipInOrderAndOneThatThrowsIsIgnored() throws Exception {
        String path = ZooKeeperFixture.uniquePath("listeners");
        CuratorFramework client = zk.newClient();
        LeaderLatch first = new LeaderLatch(client, path, "first");
        LeaderLatch second = new LeaderLatch(client, path, "second");
        List<String> heard = new CopyOnWriteArrayList<>();
        first.addListener(recorder("first", heard), Runnable::run);
        second.addListener(throwing(), Runnable::run);
        second.addListener(recorder("second", heard), Runnable::run);
        first.start();
        assertTrue(first.await(Duration.ofSeconds(10)));
        second.start();
        await().until(() -> first.participants().size() == 2);

        first.close();
        assertTrue(second.await(Duration.ofSeconds(10)));
        await().until(() -> heard.size() == 3);
        // Each latch's listeners hear it in order; the two latches' calls run on different threads.
        assertEquals(List.of("first isLeader", "first notLeader"), only("first", heard));
        assertEquals(List.of("second isLeader"), only("second", heard));
        second.close();
        await().until(() -> heard.size() == 4);
        assertEquals("second notLeader", heard.get(3));
        zk.assertNoLeaks(path);
    }

    @Test
    void aListenerAddedWhileTheLatchLeadsHearsIsLeaderBeforeTheNotLeaderThatEndsTheTerm() throws Exception {
        String path = ZooKeeperFixture.uniquePath("listener-added-late");
        LeaderLatch latch = new LeaderLatch(zk.newClient(), path, "late");
        latch.start();
        assertTrue(latch.await(Duration.ofSeconds(10)));
        List<String> heard = new CopyOnWriteArrayList<>();

        latch.addListener(recorder("late", heard), Runnable::run);
        latch.close();

        await().until(() -> heard.size() == 2);
        assertEquals(List.of("late isLeader", "late notLeader"), heard);
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaderThatClosesItsLatchFromItsOwnListenerHandsOver() throws Exception {
        String path = ZooKeeperFixture.uniquePath("close-in-listener");
        LeaderLatch first = new LeaderLatch(zk.newClient(), path, "first");
        LeaderLatch second = new LeaderLatch(zk.newClient(), path, "second");
        List<String> heard = new CopyOnWriteArrayList<>();
        LeaderListener recording = recorder("first", heard);
        first.addListener(
                new LeaderListener() {
                    @Override
                    public void isLeader(Lease term) {
                        recording.isLeader(term);
                        first.close(); // on the thread that delivers the news, which runs listeners in order
                    }

                    @Override
                    public void notLeader() {
                        recording.notLeader();
                    }
                },
                Runnable::run);
        first.start();
        await().until(() -> heard.size() == 2);
        assertEquals(List.of("first isLeader", "first notLeader"), heard);

        second.start();
        assertTrue(second.await(Duration.ofSeconds(10)));
        assertEquals(List.of("first isLeader", "first notLeader"), heard, "nothing more for a closed latch");
        second.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aListenerOnADirectExecutorThatAwaitsLeadershipAgainDoesNotHoldBackTheGrant() throws Exception {
        String path = ZooKeeperFixture.uniquePath("await-in-listener");
        LeaderLatch latch = new LeaderLatch(zk.newClient(), path, "only");
        AtomicBoolean ledAgain = new AtomicBoolean();
        latch.addListener(
                new LeaderListener() {
                    @Override
                    public void isLeader(Lease term) {}

                    @Override
                    public void notLeader() {
                        try {
                            ledAgain.set(latch.await(Duration.ofSeconds(30)));
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                },
                Runnable::run);
        latch.start();
        assertTrue(latch.await(Duration.ofSeconds(10)));

        latch.term().orElseThrow().close(); // gives the term up: the latch queues again, alone, and leads again
        await().until(ledAgain::get);
        latch.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLatchStartedBeforeItsClientIsRefusedAndCanBeStartedOnceTheClientIs() throws Exception {
        String path = ZooKeeperFixture.uniquePath("start-before-client");
        CuratorFramework client = zk.unstartedClient();
        LeaderLatch latch = new LeaderLatch(client, path, "early");
        IllegalStateException early = assertThrows(IllegalStateException.class, latch::start);
        assertEquals("the client must be started before joining the election at " + path, early.getMessage());

        client.start();
        latch.start();
        assertTrue(latch.await(Duration.ofSeconds(10)));
        latch.close();
        client.close();
        assertThrows(
                IllegalStateException.class, latch::start, "started once, and closed: whatever the client's state");
        zk.assertNoLeaks(path);
    }

    @Test
    void aLatchStartedWhileTheServerIsDownLeadsOnceItIsBack() throws Exception {
        String path = ZooKeeperFixture.uniquePath("start-offline");
        LeaderLatch latch = new LeaderLatch(zk.newOutageProofClient(), path, "only");
        List<String> heard = new CopyOnWriteArrayList<>();
        latch.addListener(recorder("only", heard), Runnable::run);
        zk.stopServer();
        try {
            latch.start();
            assertFalse(latch.hasLeadership());
        } finally {
            zk.restartServer();
        }
        assertTrue(latch.await(Duration.ofSeconds(20)));
        await().until(() -> !heard.isEmpty()); // listeners hear it after the latch's state changed
        assertEquals(List.of("only isLeader"), heard);
        latch.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void closingWhileWaitingLeavesNoZnode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("leave");
        LeaderLatch leader = new LeaderLatch(zk.newClient(), path, "leader");
        LeaderLatch waiter = new LeaderLatch(zk.newClient(), path, "waiter");
        List<String> heard = new CopyOnWriteArrayList<>();
        waiter.addListener(recorder("waiter", heard), Runnable::run);
        leader.start();
        assertTrue(leader.await(Duration.ofSeconds(10)));
        waiter.start();
        await().until(() -> leader.participants().size() == 2);

        waiter.close();
        waiter.close(); // idempotent
        await().until(() -> leader.participants().size() == 1);
        assertEquals("leader", leader.participants().get(0).id());
        assertTrue(heard.isEmpty(), heard.toString());
        IllegalStateException closed = assertThrows(IllegalStateException.class, waiter::await);
        assertEquals("closed: " + waiter, closed.getMessage());
        leader.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void awaitTimesOutWhileAnotherLeads() throws Exception {
        String path = ZooKeeperFixture.uniquePath("timeout");
        LeaderLatch leader = new LeaderLatch(zk.newClient(), path, "leader");
        LeaderLatch waiter = new LeaderLatch(zk.newClient(), path, "waiter");
        leader.start();
        assertTrue(leader.await(Duration.ofSeconds(10)));
        waiter.start();
        await().until(() -> waiter.participants().size() == 2);
        assertFalse(waiter.await(Duration.ofMillis(200)));
        assertFalse(waiter.await(Duration.ZERO));
        assertTrue(waiter.term().isEmpty());
        assertEquals(List.of("leader", "waiter"), ids(waiter.participants()));
        leader.close();
        waiter.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void awaitWithAForeverTimeoutWaitsUntilTheLatchLeads() throws Exception {
        String path = ZooKeeperFixture.uniquePath("forever");
        LeaderLatch leader = new LeaderLatch(zk.newClient(), path, "leader");
        LeaderLatch waiter = new LeaderLatch(zk.newClient(), path, "waiter");
        leader.start();
        assertTrue(leader.await(Duration.ofSeconds(10)));
        waiter.start();
        await().until(() -> waiter.participants().size() == 2);
        // A thread of its own: the latch's events run on the common pool, which a blocked waiter there could starve.
        FutureTask<Boolean> forever = new FutureTask<>(() -> waiter.await(ChronoUnit.FOREVER.getDuration()));
        new Thread(forever, "await-forever").start();

        leader.close();
        assertTrue(forever.get(20, TimeUnit.SECONDS));
        assertTrue(waiter.hasLeadership());
        waiter.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void latchQueuesBehindANodeInCuratorsLayout() throws Exception {
        String path = ZooKeeperFixture.uniquePath("interop");
        CuratorFramework other = zk.newClient();
        // What Curator's LeaderLatch creates: a protected EPHEMERAL_SEQUENTIAL "latch-" node with the id as data.
        String foreign = other.create()
                .creatingParentContainersIfNeeded()
                .withProtection()
                .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                .forPath(path + "/latch-", "curator".getBytes(StandardCharsets.UTF_8));
        LeaderLatch latch = new LeaderLatch(zk.newClient(), path, "coord");
        latch.start();
        await().until(() -> latch.participants().size() == 2);
        assertFalse(latch.await(Duration.ofMillis(100)));
        assertEquals("curator", latch.leader().orElseThrow().id());

        other.delete().forPath(foreign);
        assertTrue(latch.await(Duration.ofSeconds(10)));
        Lease term = latch.term().orElseThrow();
        assertTrue(term.path().contains("-latch-"), term.path());
        latch.close();
        zk.assertNoLeaks(path);
    }

    private static List<String> leaders(List<LeaderLatch> latches) {
        return latches.stream()
                .filter(LeaderLatch::hasLeadership)
                .map(LeaderLatch::id)
                .toList();
    }

    private static List<String> only(String name, List<String> heard) {
        return heard.stream().filter(h -> h.startsWith(name + " ")).toList();
    }

    private static List<String> ids(List<Participant> participants) {
        return participants.stream().map(Participant::id).toList();
    }

    @Test
    void participantsWhoseIdsTogetherExceedOneReplyAreListedWithoutBreakingTheConnection() throws Exception {
        String path = ZooKeeperFixture.uniquePath("large-ids");
        CuratorFramework client = zk.newClient();
        List<String> heard = new CopyOnWriteArrayList<>();
        LeaderLatch leader = new LeaderLatch(client, path, "leader");
        leader.addListener(recorder("leader", heard), Runnable::run);
        leader.start();
        assertTrue(leader.await(Duration.ofSeconds(10)));
        // 17 ids of almost the largest size allowed: one reply with all of them would exceed jute.maxbuffer.
        String large = "x".repeat(64 * 1024 - 8);
        List<LeaderLatch> others = new ArrayList<>();
        for (int i = 0; i < 17; i++) {
            LeaderLatch other = new LeaderLatch(client, path, large + i);
            other.start();
            others.add(other);
        }
        await().until(() -> client.getChildren().forPath(path).size() == 18);

        List<Participant> participants = leader.participants(); // hung, reconnecting for ever, before
        assertEquals(18, participants.size());
        assertEquals("leader", participants.get(0).id());
        assertEquals(large + 16, participants.get(17).id());
        assertEquals("leader", leader.leader().orElseThrow().id());
        assertEquals(List.of("leader isLeader"), heard); // the connection never dropped under the term
        others.forEach(LeaderLatch::close);
        leader.close();
    }

    static LeaderListener recorder(String name, List<String> heard) {
        return new LeaderListener() {
            @Override
            public void isLeader(Lease term) {
                heard.add(name + " isLeader");
            }

            @Override
            public void notLeader() {
                heard.add(name + " notLeader");
            }
        };
    }

    private static LeaderListener throwing() {
        return new LeaderListener() {
            @Override
            public void isLeader(Lease term) {
                throw new IllegalStateException("listener bug");
            }

            @Override
            public void notLeader() {
                throw new IllegalStateException("listener bug");
            }
        };
    }
}
