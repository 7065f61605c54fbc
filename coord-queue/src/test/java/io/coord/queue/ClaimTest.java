package io.coord.queue;

import static io.coord.queue.TestQueues.queue;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.internal.ClientContext;
import io.coord.testkit.Acls;
import io.coord.testkit.Background;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperFixture.Session;
import io.coord.testkit.ZooKeeperProxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.curator.drivers.AdvancedTracerDriver;
import org.apache.curator.drivers.EventTrace;
import org.apache.curator.drivers.OperationTrace;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.CuratorWatcher;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** At-least-once delivery: claims hide items, acks remove them, closes and dead sessions give them back. */
@Timeout(60)
class ClaimTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void ackRemovesTheItemForGood() throws Exception {
        String path = ZooKeeperFixture.uniquePath("ack");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        queue.offer("job");

        Claim<String> claim = queue.claim(WAIT).orElseThrow();
        assertEquals("job", claim.item());
        assertEquals(1, queue.size(), "a claimed item is still in the queue");
        assertTrue(claim.ack());
        assertTrue(claim.ack(), "a second ack reports the first one's success");
        claim.close();

        assertEquals(0, queue.size());
        assertNull(queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void closeWithoutAckPutsTheItemBackAtTheHead() throws Exception {
        String path = ZooKeeperFixture.uniquePath("requeue");
        DistributedQueue<String> claimer = queue(zk.newClient(), path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        claimer.offer("first");
        claimer.offer("second");
        claimer.offer("third");

        Claim<String> claim = claimer.claim(WAIT).orElseThrow();
        assertEquals("first", claim.item());
        assertEquals("second", other.poll(), "a claimed item is skipped");
        claim.close();
        claim.close(); // idempotent
        assertFalse(claim.ack(), "a closed claim is no longer ours");

        // The other client learns of the release from its watch on the claim, a moment later.
        await().atMost(WAIT).until(() -> "first".equals(other.peek()));
        assertEquals("first", other.poll(), "the released item is at the head again");
        assertEquals("third", claimer.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void closeReturnsWithTheItemBackInPlayAlsoWhenItsReleaseNeedsANewWriteSlot() throws Exception {
        String path = ZooKeeperFixture.uniquePath("release-new-slot");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("job");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();

        // Another writer of this client has the only slot, so the release makes one first.
        Slots slots = SharedQueue.of(ClientContext.of(client), path).slots;
        Slots.Slot busy = slots.borrowFully();
        claim.close();
        assertEquals("job", queue.poll(), "close() returned before its release was answered");
        slots.giveBack(busy);
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void onZooKeepersEventThreadAckRefusesAtOnceAndCloseGoesOnOnAnotherThread() throws Exception {
        String path = ZooKeeperFixture.uniquePath("event-thread");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("job");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();

        // A background callback runs on ZooKeeper's event thread, which delivers the answers both calls wait for.
        Throwable refused = Background.thrownOnEventThread(client, claim::ack);
        assertInstanceOf(IllegalStateException.class, refused);
        assertEquals(
                "acknowledging " + path + "/items/" + itemName(client, path) + " waits for ZooKeeper's answers,"
                        + " which ZooKeeper's event thread delivers: call it from another thread than a watcher or a"
                        + " background callback",
                refused.getMessage());
        Throwable poll = Background.thrownOnEventThread(client, queue::poll);
        assertEquals(
                "using the queue at " + path + " waits for ZooKeeper's answers, which ZooKeeper's event thread"
                        + " delivers: call it from another thread than a watcher or a background callback",
                poll.getMessage());
        assertNull(Background.thrownOnEventThread(client, () -> {
            claim.close();
            return null;
        }));
        assertEquals("job", await().atMost(WAIT).until(queue::poll, "job"::equals), "the release went on");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aCloseOnTheEventThreadWhileAnAckHoldsTheClaimReturnsAtOnceAndGoesOnAfterTheAck() throws Exception {
        String path = ZooKeeperFixture.uniquePath("event-thread-busy");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(builder -> builder.connectString(proxy.connectString()));
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("job");
        Claim<String> claim = queue.claim(Duration.ZERO).orElseThrow();

        // A watcher hears the connection drop on ZooKeeper's event thread, and closes the claim there. It watches a
        // node of its own, made at the end so that its watch goes.
        String watched = path + "-watched";
        AtomicReference<CompletableFuture<Boolean>> ack = new AtomicReference<>();
        CompletableFuture<Boolean> ackDoneAtClose = new CompletableFuture<>();
        client.checkExists()
                .usingWatcher((CuratorWatcher) event -> {
                    if (event.getState() == Watcher.Event.KeeperState.Disconnected && !ackDoneAtClose.isDone()) {
                        claim.close();
                        ackDoneAtClose.complete(ack.get().isDone());
                    }
                })
                .forPath(watched);

        // The ack's transaction lands and its reply is lost: the ack holds the claim while it waits for the answer.
        proxy.dropNextReply();
        ack.set(Background.call(claim::ack));
        await().atMost(WAIT).until(() -> proxy.repliesLost() == 1);
        proxy.cutConnections();
        assertFalse(ackDoneAtClose.get(WAIT.toSeconds(), TimeUnit.SECONDS), "close() returned while the ack waited");
        assertTrue(ack.get().get(WAIT.toSeconds(), TimeUnit.SECONDS), "the ack removed the item");
        assertNull(queue.poll());
        client.create().forPath(watched);
        client.delete().forPath(watched);
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aCloseOnCuratorsListenerThreadWhileAnAckWaitsForTheConnectionReturnsAtOnceAndTheAckEnds() throws Exception {
        String path = ZooKeeperFixture.uniquePath("listener-thread-busy");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(builder -> builder.connectString(proxy.connectString())
                .connectionTimeoutMs(1_000)
                .retryPolicy(new RetryNTimes(0, 0)));
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("job");
        Claim<String> claim = queue.claim(Duration.ZERO).orElseThrow();

        // The application gives the work back when the connection is suspended, on Curator's listener thread, which
        // is also where the news that the connection is back comes from.
        AtomicReference<CompletableFuture<Boolean>> ack = new AtomicReference<>();
        CompletableFuture<Boolean> ackDoneAtClose = new CompletableFuture<>();
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.SUSPENDED && !ackDoneAtClose.isDone()) {
                claim.close();
                ackDoneAtClose.complete(ack.get().isDone());
            }
        });

        // The ack's transaction lands and its reply is lost: settling it waits for the connection, holding the claim.
        proxy.refuseConnections(true);
        proxy.dropNextReply();
        ack.set(Background.call(claim::ack));
        await().atMost(WAIT).until(() -> proxy.repliesLost() == 1);
        proxy.cutConnections();
        assertFalse(ackDoneAtClose.get(WAIT.toSeconds(), TimeUnit.SECONDS), "close() returned while the ack waited");
        proxy.refuseConnections(false);

        assertTrue(ack.get().get(WAIT.toSeconds(), TimeUnit.SECONDS), "the ack removed the item");
        assertNull(queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void anAckWhoseResendABusyServerRefusesKnowsItLandedThoughCuratorsListenerThreadIsHeldUp() throws Exception {
        String path = ZooKeeperFixture.uniquePath("resend-refused");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client =
                zk.ensemble().unstartedClient(builder -> builder.connectString(proxy.connectString()));
        // An application's listener that blocks holds Curator's one listener thread from the first news on: the
        // queue, made once connected, hears of no drop or reconnection on it while it does.
        CountDownLatch letGo = ZooKeeperFixture.holdUpListenerThread(client);
        client.start();
        try {
            assertTrue(client.blockUntilConnected(10, TimeUnit.SECONDS));
            DistributedQueue<String> queue = queue(client, path);
            queue.offer("first");
            queue.offer("second");
            Claim<String> claim = queue.claim(Duration.ZERO).orElseThrow();
            assertEquals("first", claim.item());

            // The ack's transaction lands and its reply is lost with the connection. Curator sends it again once
            // connected, and a busy server refuses that second send as a whole (THROTTLEDOP).
            proxy.refuseConnections(true);
            proxy.dropNextReply();
            CompletableFuture<Boolean> ack = Background.call(claim::ack);
            await().atMost(WAIT).until(() -> proxy.repliesLost() == 1);
            proxy.cutConnections();
            proxy.refuseNext(ZooDefs.OpCode.multi, KeeperException.Code.THROTTLEDOP);
            proxy.refuseConnections(false);

            // The refusal answers the second send: the first landed, and the write slot moved on with it.
            assertTrue(ack.get(WAIT.toSeconds(), TimeUnit.SECONDS), "the ack removed the item");
            assertEquals(1, proxy.requestsRefused());
            assertEquals("second", queue.poll());
            assertNull(queue.poll(), "the poll before removed the item it returned");
        } finally {
            letGo.countDown();
        }
        client.close();
        proxy.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    /** The name of the queue's only item. */
    private static String itemName(CuratorFramework client, String path) throws Exception {
        return client.getChildren().forPath(path + "/items").get(0);
    }

    @Test
    void anAckThatFindsItsItemDeletedByHandAnswersFalseAndLeavesNoClaim() throws Exception {
        String path = ZooKeeperFixture.uniquePath("ack-item-gone");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("gone");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();
        zk.newClient().delete().forPath(path + "/items/" + itemName(client, path));
        queue.offer("next");

        assertFalse(claim.ack(), "nothing was removed by this ack");
        claim.close();
        assertEquals("next", queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aReleaseThatABusyServerRefusesIsSentAgainAndTheItemComesBack() throws Exception {
        String path = ZooKeeperFixture.uniquePath("release-throttled");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(builder -> builder.connectString(proxy.connectString()));
        DistributedQueue<String> queue = queue(client, path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        queue.offer("job");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();

        // A server with request throttling on refuses the release's transaction (THROTTLEDOP) without carrying it
        // out, and Curator does not send it again. The claimer's session lives on: nothing else would end the claim.
        proxy.refuseNext(ZooDefs.OpCode.multi, KeeperException.Code.THROTTLEDOP);
        claim.close();

        assertEquals("job", other.poll(WAIT), "the release was sent again");
        client.close();
        proxy.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void closedClaimIsTakenFirstByTheSameClient() throws Exception {
        String path = ZooKeeperFixture.uniquePath("requeue-local");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        queue.offer("first");
        queue.offer("second");

        try (Claim<String> claim = queue.claim(WAIT).orElseThrow()) {
            assertEquals("first", claim.item());
        }

        assertEquals("first", queue.poll());
        assertEquals("second", queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void peekPassesByAClaimThisClientMayNotRead() throws Exception {
        String path = ZooKeeperFixture.uniquePath("unreadable-claim");
        // The claimer's claims are readable by the claimer alone; everything else is open.
        CuratorFramework claimerClient =
                zk.newCustomClient(b -> b.authorization("digest", "claimer:secret".getBytes(StandardCharsets.UTF_8))
                        .aclProvider(Acls.byPath(
                                node -> node.contains("/claims/"),
                                List.of(new ACL(ZooDefs.Perms.ALL, new Id("auth", ""))),
                                List.of(new ACL(ZooDefs.Perms.ALL, new Id("world", "anyone"))))));
        DistributedQueue<String> claimer = queue(claimerClient, path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        claimer.put("first");
        claimer.put("second");
        Claim<String> claim = claimer.claim(WAIT).orElseThrow();

        assertEquals("second", other.peek(), "the first item nobody holds");
        assertEquals("second", other.element());

        assertTrue(claim.ack());
        assertEquals("second", other.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void pollTakeAndPeekNeverHandOutAClaimedItem() throws Exception {
        String path = ZooKeeperFixture.uniquePath("hidden");
        DistributedQueue<String> claimer = queue(zk.newClient(), path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        claimer.offer("only");
        Claim<String> claim = claimer.claim(WAIT).orElseThrow();

        assertNull(other.poll());
        assertNull(other.peek());
        assertNull(other.poll(Duration.ofMillis(200)));
        assertEquals(Optional.empty(), other.claim(Duration.ZERO));
        assertNull(claimer.poll(), "nor to another consumer on the claimer's own client");

        assertTrue(claim.ack());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void blockedTakeGetsTheItemWhenItsClaimIsClosed() throws Exception {
        String path = ZooKeeperFixture.uniquePath("wake-on-close");
        DistributedQueue<String> claimer = queue(zk.newClient(), path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        claimer.offer("job");
        Claim<String> claim = claimer.claim(WAIT).orElseThrow();
        CompletableFuture<String> taken = CompletableFuture.supplyAsync(() -> {
            try {
                return other.take();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        // The taker has read the queue and left its watches.
        await().until(() -> zk.watchCount() > 0);
        assertFalse(taken.isDone());

        claim.close();

        assertEquals("job", taken.get(10, TimeUnit.SECONDS));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void claimersSessionExpiryHandsTheItemToAnotherConsumer() throws Exception {
        String path = ZooKeeperFixture.uniquePath("claim-expiry");
        CuratorFramework claimerClient = zk.newClient();
        DistributedQueue<String> claimer = queue(claimerClient, path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        claimer.offer("job");
        Claim<String> claim = claimer.claim(WAIT).orElseThrow();
        CompletableFuture<Optional<Claim<String>>> next = CompletableFuture.supplyAsync(() -> {
            try {
                return other.claim(Duration.ofSeconds(30));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().until(() -> zk.watchCount() > 0);

        zk.expireSession(claimerClient);

        Claim<String> handedOver = next.get(20, TimeUnit.SECONDS).orElseThrow();
        assertEquals("job", handedOver.item());
        assertFalse(claim.ack(), "the claim died with its session");
        claim.close();
        assertTrue(handedOver.ack());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void anAckThatFindsItsClaimDeletedPutsTheItemBackInPlayForItsOwnClient() throws Exception {
        String path = ZooKeeperFixture.uniquePath("ack-claim-gone");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        queue.offer("job");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();
        CuratorFramework hand = zk.newClient();
        for (String child : hand.getChildren().forPath(path + "/claims")) {
            hand.delete().forPath(path + "/claims/" + child);
        }

        assertFalse(claim.ack(), "the claim is gone");

        assertEquals("job", queue.poll(), "the item is back in play, on the claimer's client too");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aClaimHeldAcrossAResetByHandNeverRemovesTheNewItemOfTheSameName() throws Exception {
        String path = ZooKeeperFixture.uniquePath("claim-across-reset");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        queue.offer("old-0");
        queue.offer("old-1");
        Claim<String> first = queue.claim(WAIT).orElseThrow();
        Claim<String> second = queue.claim(WAIT).orElseThrow();

        // The reset deletes the claims and the session marker with the items; the new parent numbers from zero
        // again, and another consumer claims the new items, which have the old ones' names.
        zk.newClient().delete().deletingChildrenIfNeeded().forPath(path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        other.offer("new-0");
        other.offer("new-1");
        Claim<String> othersFirst = other.claim(WAIT).orElseThrow();
        Claim<String> othersSecond = other.claim(WAIT).orElseThrow();
        assertEquals("new-0", othersFirst.item());

        assertFalse(first.ack(), "the claim went with the reset");
        // The first ack made the session a new marker: the second claim must not take it as proof either.
        assertFalse(second.ack(), "the claim went with the reset");
        first.close();
        second.close();
        assertTrue(othersFirst.ack());
        assertTrue(othersSecond.ack());
        assertNull(queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aClaimClosedAfterAResetByHandNeverReleasesTheNewItemOfTheSameName() throws Exception {
        String path = ZooKeeperFixture.uniquePath("release-across-reset");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("old");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();

        zk.newClient().delete().deletingChildrenIfNeeded().forPath(path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        other.offer("new");
        Claim<String> othersClaim = other.claim(WAIT).orElseThrow();

        claim.close();
        NameCache names = SharedQueue.of(ClientContext.of(client), path).items.names();
        await().alias("the release is over: the name is back in play").until(() -> names.head() != null);
        assertTrue(othersClaim.ack(), "the other consumer's claim is still there");
        assertNull(queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aReleaseWhoseReplyWasLostNeverDeletesAClaimMadeSince() throws Exception {
        releaseWhoseReplyIsLost("release-replay", false);
    }

    @Test
    void aReleaseWhoseReplyWasLostAndWhoseSettlingABusyServerRefusedIsSettledAndNeverSentAgain() throws Exception {
        releaseWhoseReplyIsLost("release-settle-throttled", true);
    }

    /**
     * A release whose reply is lost while another consumer claims the item; {@code throttleSettle}: the write that
     * settles the release's outcome is refused once by a busy server (THROTTLEDOP).
     */
    private void releaseWhoseReplyIsLost(String name, boolean throttleSettle) throws Exception {
        String path = ZooKeeperFixture.uniquePath(name);
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // Without Curator's retries, the lost reply comes back in doubt at once, and the queue itself sends again.
        CuratorFramework closerClient = zk.newClientWithoutRetries(proxy);
        DistributedQueue<String> closer = queue(closerClient, path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        closer.offer("job");
        // A look without waiting leaves no watch, so that the next reply is the release's.
        Claim<String> claim = closer.claim(Duration.ZERO).orElseThrow();
        long session = closerClient.getZookeeperClient().getZooKeeper().getSessionId();

        // The release lands and its reply is lost; the closer reconnects only after another consumer claimed the item.
        proxy.refuseConnections(true);
        proxy.dropNextReply();
        if (throttleSettle) {
            proxy.refuseNext(ZooDefs.OpCode.setData, KeeperException.Code.THROTTLEDOP);
        }
        claim.close();
        Claim<String> othersClaim = other.claim(Duration.ZERO).orElseThrow();
        proxy.refuseConnections(false);

        // The name comes back into the closer's cache once it knows how its release ended.
        NameCache names =
                SharedQueue.of(ClientContext.of(closerClient), path).items.names();
        await().atMost(WAIT).until(() -> names.head() != null);
        assertEquals(
                session, closerClient.getZookeeperClient().getZooKeeper().getSessionId(), "the test needs one session");
        assertNull(queue(zk.newClient(), path).poll(), "the other consumer's claim still hides the item");
        assertNull(closer.poll(), "from the closer too");
        assertTrue(othersClaim.ack(), "the other consumer's claim is still theirs");
        assertEquals(throttleSettle ? 1 : 0, proxy.requestsRefused());
        closerClient.close();
        proxy.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aClaimWhoseOwnerReadLosesItsAnswerIsReadAgainAndHandedOut() throws Exception {
        String path = ZooKeeperFixture.uniquePath("owner-read-lost");
        LosingConsumer losing = losingConsumer(path, builder -> builder.retryPolicy(new RetryNTimes(0, 0)));
        ZooKeeperProxy proxy = losing.proxy();
        DistributedQueue<String> consumer = losing.consumer();
        // The slot and the session marker made, so that the claim below sends its read, then its transaction.
        consumer.offer("warm-up");
        try (Claim<String> warmUp = consumer.claim(Duration.ZERO).orElseThrow()) {
            assertTrue(warmUp.ack());
        }
        queue(zk.newClient(), path).offer("job");

        // The claim's reply is lost, so the slot tells that it landed and the owner must be read; that answer is
        // lost too.
        losing.replies().after(List.of("MultiReadImpl", "GetDataBuilderImpl"));
        Claim<String> claim = consumer.claim(Duration.ZERO).orElseThrow();

        assertEquals(2, proxy.repliesLost(), "the test needs both replies lost");
        assertEquals("job", claim.item());
        assertTrue(claim.ack());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aClaimWhoseOwnerReadIsLostUntilTheClientGaveUpItsSessionIsWithdrawnOnceBack() throws Exception {
        String path = ZooKeeperFixture.uniquePath("owner-read-lost-session");
        LosingConsumer losing = consumerThatGivesUpItsSessionsSoon(path);
        ZooKeeperProxy proxy = losing.proxy();
        DistributedQueue<String> consumer = losing.consumer();
        Session old = Session.of(losing.client());
        queue(zk.newClient(), path).offer("job");

        // The claim lands and its reply is lost; the slot says it landed, and the read of its owner is lost too, with
        // the client cut off until it has given up on its session. The server keeps that session, and the claim.
        losing.replies().afterThenCutOff(List.of("MultiReadImpl", "GetDataBuilderImpl"));
        CompletableFuture<Optional<Claim<String>>> claiming = Background.call(() -> consumer.claim(Duration.ZERO));
        await().atMost(WAIT).until(() -> proxy.repliesLost() == 2);
        awaitGivenUp(losing, old);

        // The owner is read again on the new session: the old one, so the claim is withdrawn, and the item is free
        // before the server ends that session.
        assertJobFreeBeforeTheSessionEnds(claiming.get(20, TimeUnit.SECONDS), path, old);
    }

    @Test
    void aSessionMarkerMadeOnALaterSessionThanItWasSentOnIsDeleted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("marker-orphan");
        LosingConsumer losing = losingConsumer(path, builder -> {});
        ZooKeeperProxy proxy = losing.proxy();
        DistributedQueue<String> consumer = losing.consumer();
        consumer.offer("job"); // the slot is made; the marker waits for the first claim

        // The marker's create lands and its reply is lost; the session expires before Curator sends it again, on the
        // next session, where it lands again. A timed claim waits for the connection (a zero timeout would not).
        proxy.refuseConnections(true);
        losing.replies().after(List.of("MultiReadImpl"));
        CompletableFuture<Optional<Claim<String>>> claiming = CompletableFuture.supplyAsync(() -> {
            try {
                return consumer.claim(WAIT);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().atMost(WAIT).until(() -> proxy.repliesLost() == 1);
        zk.expireSession(losing.client());
        proxy.refuseConnections(false);

        Claim<String> claim = claiming.get(30, TimeUnit.SECONDS).orElseThrow();
        assertTrue(claim.ack());
        CuratorFramework reader = zk.newClient();
        await("only the marker in use is left")
                .atMost(WAIT)
                .until(() -> reader.getChildren().forPath(path + "/sessions").size() == 1);
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aClaimThatLandedOnASessionItsClientThenGaveUpOnIsWithdrawnOnceBack() throws Exception {
        String path = ZooKeeperFixture.uniquePath("claim-landed-lost");
        LosingConsumer losing = consumerThatGivesUpItsSessionsSoon(path);
        ZooKeeperProxy proxy = losing.proxy();
        DistributedQueue<String> consumer = losing.consumer();
        Session old = Session.of(losing.client());
        queue(zk.newClient(), path).offer("job");

        // The claim lands and its reply is lost; the client is cut off until it has given up on its session.
        losing.replies().after(List.of("MultiReadImpl"));
        proxy.refuseConnections(true);
        CompletableFuture<Optional<Claim<String>>> claiming = Background.call(() -> consumer.claim(Duration.ZERO));
        await().atMost(WAIT).until(() -> proxy.repliesLost() == 1);
        proxy.cutConnections();
        awaitGivenUp(losing, old);

        // The claim died with its session. The item is free again before the server ends that session: the same call
        // may claim it anew on the new session, or the next consumer to look takes it.
        assertJobFreeBeforeTheSessionEnds(claiming.get(20, TimeUnit.SECONDS), path, old);
    }

    /**
     * A losing consumer whose client gives a session up after 2 s cut off, while the server keeps it for 20 s; its
     * write slot and session marker are made.
     */
    private static LosingConsumer consumerThatGivesUpItsSessionsSoon(String path) throws Exception {
        LosingConsumer losing = losingConsumer(
                path,
                builder -> builder.sessionTimeoutMs(20_000)
                        .simulatedSessionExpirationPercent(10)
                        .connectionTimeoutMs(1_000)
                        .retryPolicy(new RetryNTimes(0, 0)));
        losing.consumer().offer("warm-up");
        try (Claim<String> warmUp = losing.consumer().claim(Duration.ZERO).orElseThrow()) {
            assertTrue(warmUp.ack());
        }
        return losing;
    }

    /** Waits, cut off, until the client has given up on {@code old}, then lets it connect again. */
    private static void awaitGivenUp(LosingConsumer losing, Session old) {
        await().atMost(Duration.ofSeconds(20))
                .until(() -> losing.client().getZookeeperClient().getZooKeeper().getSessionId() != old.id());
        losing.proxy().refuseConnections(false);
    }

    /**
     * "job" is free before the server ends {@code old}, which still holds a claim on it: the claiming call took it anew
     * ({@code again}), or the next consumer to look takes it.
     */
    private static void assertJobFreeBeforeTheSessionEnds(Optional<Claim<String>> again, String path, Session old)
            throws Exception {
        if (again.isPresent()) {
            assertEquals("job", again.get().item());
            assertTrue(again.get().ack());
        } else {
            assertEquals("job", queue(zk.newOutageProofClient(), path).poll(Duration.ofSeconds(15)));
        }
        assertTrue(zk.endSessionIfAlive(old), "the old session had already expired");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    /** A consumer whose client talks through a proxy that loses the replies {@code replies} names. */
    private record LosingConsumer(
            ZooKeeperProxy proxy, LoseReplyAfter replies, CuratorFramework client, DistributedQueue<String> consumer) {}

    private static LosingConsumer losingConsumer(String path, Consumer<CuratorFrameworkFactory.Builder> options)
            throws Exception {
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        LoseReplyAfter replies = new LoseReplyAfter(proxy);
        CuratorFramework client =
                zk.unstartedClient(builder -> options.accept(builder.connectString(proxy.connectString())));
        client.getZookeeperClient().setTracerDriver(replies);
        return new LosingConsumer(proxy, replies, client, queue(zk.ensemble().connect(client), path));
    }

    /** Loses the reply that follows each of the named successful answers, in turn (names as Curator traces them). */
    private static final class LoseReplyAfter extends AdvancedTracerDriver {
        private final ZooKeeperProxy proxy;
        private final ConcurrentLinkedQueue<String> answers = new ConcurrentLinkedQueue<>();

        // Run as the last named reply is lost.
        private volatile Runnable atLast = () -> {};

        LoseReplyAfter(ZooKeeperProxy proxy) {
            this.proxy = proxy;
        }

        void after(List<String> names) {
            answers.addAll(names);
        }

        /** As {@link #after(List)}, refusing connections as the last reply is lost, so that it is never sent again. */
        void afterThenCutOff(List<String> names) {
            atLast = () -> proxy.refuseConnections(true);
            after(names);
        }

        @Override
        public void addTrace(OperationTrace trace) {
            String next = answers.peek();
            if (next != null && trace.getName().startsWith(next) && trace.getReturnCode() == 0) {
                answers.poll();
                if (answers.isEmpty()) {
                    atLast.run();
                }
                proxy.dropNextReply();
            }
        }

        @Override
        public void addEvent(EventTrace trace) {}
    }
}
