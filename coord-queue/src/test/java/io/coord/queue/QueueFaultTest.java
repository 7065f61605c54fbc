package io.coord.queue;

import static io.coord.queue.TestQueues.drain;
import static io.coord.queue.TestQueues.queue;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.testkit.Background;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.apache.curator.drivers.TracerDriver;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Lost connections and replies, replays, outages and write slots: what a write or a removal does when it cannot tell
 * whether it landed.
 */
@Timeout(90)
class QueueFaultTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    /**
     * Cuts the client behind {@code proxy} off, deletes the queue's write slots by hand meanwhile, and lets the client
     * back, with its replies: a write whose reply was lost is then sent again, onto a missing slot.
     */
    private static void deleteSlotsWhileCutOff(ZooKeeperProxy proxy, CuratorFramework admin, String path)
            throws Exception {
        proxy.refuseConnections(true);
        proxy.cutConnections();
        for (String slot : admin.getChildren().forPath(path + "/slots")) {
            admin.delete().forPath(path + "/slots/" + slot);
        }
        proxy.loseReplies(false);
        proxy.refuseConnections(false);
    }

    /** A claim on "x", held by a client that reaches the server through {@code proxy}; {@code admin} goes direct. */
    private record ClaimThroughProxy(
            ZooKeeperProxy proxy,
            CuratorFramework client,
            CuratorFramework admin,
            DistributedQueue<String> consumer,
            Claim<String> claim) {
        static ClaimThroughProxy of(String path) throws Exception {
            ZooKeeperProxy proxy = firstServersProxy();
            CuratorFramework client = zk.newOutageProofClient(proxy);
            CuratorFramework admin = zk.newClient();
            DistributedQueue<String> consumer = queue(client, path);
            queue(admin, path).offer("x");
            return new ClaimThroughProxy(
                    proxy,
                    client,
                    admin,
                    consumer,
                    consumer.claim(Duration.ofSeconds(10)).orElseThrow());
        }
    }

    /**
     * A queue at {@code path} whose client reaches the server through {@code proxy}, with "a" in it and a put of "b"
     * that has landed on the server while its reply is lost: the producer knows the count, so its writes need no read.
     */
    private record PutInFlight(
            ZooKeeperProxy proxy,
            CuratorFramework client,
            CuratorFramework admin,
            DistributedQueue<String> queue,
            CompletableFuture<Void> put) {
        static PutInFlight start(String path) throws Exception {
            return start(path, client -> TestQueues.queue(client, path));
        }

        /** "a" is in a queue of {@code capacity}, and "b" has landed, its reply lost. */
        static PutInFlight start(String path, int capacity) throws Exception {
            return start(
                    path,
                    client -> DistributedQueue.builder(client, path, QueueSerializer.utf8())
                            .capacity(capacity)
                            .build());
        }

        private static PutInFlight start(String path, Function<CuratorFramework, DistributedQueue<String>> build)
                throws Exception {
            ZooKeeperProxy proxy = firstServersProxy();
            CuratorFramework client = zk.newOutageProofClient(proxy);
            CuratorFramework admin = zk.newClient();
            DistributedQueue<String> queue = build.apply(client);
            queue.put("a");
            proxy.loseReplies(true);
            CompletableFuture<Void> put = Background.call(() -> {
                queue.put("b");
                return null;
            });
            await().until(() -> admin.checkExists().forPath(path + "/items").getNumChildren() == 2);
            return new PutInFlight(proxy, client, admin, queue, put);
        }
    }

    /** Puts item-0 to item-(count - 1) in one call, more than a drain takes in one round; returns them in order. */
    private static List<String> putNumbered(CuratorFramework client, String path, int count)
            throws InterruptedException {
        List<String> items =
                IntStream.range(0, count).mapToObj(i -> "item-" + i).toList();
        queue(client, path).putAll(items);
        return items;
    }

    @Test
    void aTimedDrainThatHasTakenItemsEndsWithThemWhenTheConnectionDrops() throws Exception {
        String path = ZooKeeperFixture.uniquePath("drain-timed-drop");
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newOutageProofClient(proxy);
        CuratorFramework admin = zk.newClient();
        List<String> items = putNumbered(admin, path, 150);
        DistributedQueue<String> consumer = queue(client, path);
        // The connection drops as the first round's last item reaches the sink, and stays down.
        List<String> sink = sinkThatAtItem(100, () -> {
            proxy.refuseConnections(true);
            proxy.cutConnections();
        });
        CompletableFuture<Integer> drained = Background.call(() -> consumer.drainTo(sink, 150, Duration.ofMinutes(5)));

        // It moves what it took without waiting for the connection, which the rest would need.
        await().atMost(Duration.ofSeconds(10)).until(drained::isDone);
        assertEquals(100, drained.get());
        assertEquals(items.subList(0, 100), sink);
        reconnect(proxy, client);
        List<String> rest = new ArrayList<>();
        assertEquals(50, consumer.drainTo(rest, 150, Duration.ofSeconds(10)));
        assertEquals(items.subList(100, 150), rest);
        closeAndAssertDrained(client, proxy, path);
    }

    @Test
    void aTimedDrainWhoseReadForItemsPutSinceGoesUnansweredEndsWithWhatItTookOnceTheConnectionDrops() throws Exception {
        String path = ZooKeeperFixture.uniquePath("drain-timed-silent");
        ZooKeeperProxy proxy = firstServersProxy();
        // A short session: the client gives up on a connection that answers nothing after two thirds of it.
        CuratorFramework client = zk.newCustomClient(
                b -> b.connectString(proxy.connectString()).retryPolicy(new RetryNTimes(1_000, 100)));
        List<String> items = putNumbered(zk.newClient(), path, 20);
        DistributedQueue<String> consumer = queue(client, path);
        assertEquals(items.get(0), consumer.poll()); // the drain below starts from the names this read listed
        // The server falls silent as the last of those names reaches the sink, and stays so.
        List<String> sink = sinkThatAtItem(19, () -> {
            proxy.refuseConnections(true);
            proxy.loseReplies(true);
        });
        CompletableFuture<Integer> drained = Background.call(() -> consumer.drainTo(sink, 150, Duration.ofMinutes(5)));

        // Its read for items put since goes unanswered: it ends with what it took as soon as the client gives up on
        // the connection, not once the connection is back.
        await().atMost(Duration.ofSeconds(30)).until(drained::isDone);
        assertEquals(19, drained.get());
        assertEquals(items.subList(1, 20), sink);
        reconnect(proxy, client);
        closeAndAssertDrained(client, proxy, path);
    }

    @Test
    void aDrainWhoseLaterRoundCannotTellIfItLandedReturnsWhatItTookAndItsNextCallFails() throws Exception {
        String path = ZooKeeperFixture.uniquePath("drain-in-doubt");
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newOutageProofClient(proxy);
        CuratorFramework admin = zk.newClient();
        List<String> items = putNumbered(admin, path, 150);
        // The second round's removal lands and its reply is lost: the serializer turns replies off as it reads that
        // round's first item, before the removal is sent.
        AtomicBoolean armed = new AtomicBoolean(true);
        QueueSerializer<String> losing = TestQueues.utf8Reading(item -> {
            if (item.equals("item-100") && armed.compareAndSet(true, false)) {
                proxy.loseReplies(true);
            }
            return item;
        });
        DistributedQueue<String> consumer =
                DistributedQueue.builder(client, path, losing).build();
        CompletableFuture<List<String>> drained = Background.call(() -> {
            List<String> sink = new ArrayList<>();
            consumer.drainTo(sink, 150);
            return sink;
        });
        await().until(() -> admin.getChildren().forPath(path + "/items").isEmpty());
        deleteSlotsWhileCutOff(proxy, admin, path);

        assertEquals(items.subList(0, 100), drained.get(30, TimeUnit.SECONDS), "the first round's items go out");
        CoordinationException owed =
                assertThrows(CoordinationException.class, () -> consumer.drainTo(new ArrayList<>(), 10));
        assertTrue(owed.getMessage().contains("cannot tell whether a write"), owed.getMessage());
        assertEquals(0, consumer.drainTo(new ArrayList<>(), 10), "the failure is told once");
        client.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void anOfferGatheredBehindAWriteCutOffByAnOutageFailsAtOnceAndWritesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("offer-behind-outage");
        PutInFlight inFlight = PutInFlight.start(path);
        ZooKeeperProxy proxy = inFlight.proxy();
        DistributedQueue<String> queue = inFlight.queue();
        // An untimed offer now gathers into the next transaction, behind the put's, whose reply is lost.
        CompletableFuture<Boolean> offered = startParked(() -> queue.offer("c"));

        proxy.refuseConnections(true);
        proxy.cutConnections();
        assertNothingDone(offered, "offering to", path);

        proxy.loseReplies(false);
        proxy.refuseConnections(false);
        inFlight.put().get(30, TimeUnit.SECONDS);
        assertEquals(
                List.of("a", "b"), drain(queue(inFlight.admin(), path)), "the put landed once, the offer not at all");
        inFlight.client().close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void untimedCallsWhoseReadIsCutOffByAnOutageFailAtOnceAndTakeNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("read-cut-off");
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newOutageProofClient(proxy);
        DistributedQueue<String> queue = queue(client, path);
        // Items too big to be read ahead: each poll reads its item's data when it takes the name.
        List<String> items = List.of("a".repeat(5_000), "b".repeat(5_000), "c".repeat(5_000));
        for (String item : items) {
            queue.put(item);
        }
        assertEquals(items.get(0), queue.poll());

        for (String call : List.of("poll", "peek")) {
            proxy.loseReplies(true); // the read goes out, and its reply never comes back
            CompletableFuture<String> answer = startParked(call.equals("poll") ? queue::poll : queue::peek);
            proxy.refuseConnections(true);
            proxy.cutConnections();

            ExecutionException failed =
                    assertThrows(ExecutionException.class, () -> answer.get(20, TimeUnit.SECONDS), call);
            assertInstanceOf(CoordinationException.class, failed.getCause(), call);
            reconnect(proxy, client);
        }
        assertEquals(items.get(1), queue.poll(), "the polls cut off took nothing");
        assertEquals(items.get(2), queue.poll());
        closeAndAssertDrained(client, proxy, path);
    }

    @Test
    void anUntimedPollWhoseNewWriteSlotIsCutOffByAnOutageFailsOnceCuratorGivesUpAndTakesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-cut-off");
        putFromAClientSinceClosed(path, "a");
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newClientRetryingOnce(proxy);
        // The poll's children read answered: the create of its first write slot goes out next, and is lost.
        AtomicBoolean listed = onFirst(client, "GetChildren", () -> proxy.loseReplies(true));
        DistributedQueue<String> queue = queue(client, path);
        CompletableFuture<String> polled = startParked(queue::poll, () -> listed.get() && proxy.repliesLost() > 0);
        proxy.refuseConnections(true);
        proxy.cutConnections();

        assertNothingDone(polled, "polling", path);
        reconnect(proxy, client);
        assertEquals("a", queue.poll(), "the poll cut off took nothing");
        assertOneSlotLeft(path);
        closeAndAssertDrained(client, proxy, path);
    }

    @Test
    void aTimedOfferWhoseQueueParentsAreCutOffByAnOutageWaitsForTheConnectionAndWrites() throws Exception {
        String path = ZooKeeperFixture.uniquePath("parents-cut-off");
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newClientRetryingOnce(proxy);
        // The count finds no queue: the creates of its parents go out next, onto a connection cut off.
        AtomicBoolean cut = cutOffAfter(client, proxy, "Exists");
        DistributedQueue<String> queue = queue(client, path);
        CompletableFuture<Boolean> offered = Background.call(() -> queue.offer("a", Duration.ofSeconds(60)));

        awaitCuratorGaveUp(client, path, cut);
        assertFalse(offered.isDone(), "the offer waits for the connection");
        reconnect(proxy, client);
        assertTrue(offered.get(30, TimeUnit.SECONDS));
        assertEquals(List.of("a"), drain(queue));
        closeAndAssertDrained(client, proxy, path);
    }

    @Test
    void aTimedPollWhoseClaimsParentIsCutOffByAnOutageWaitsForTheConnectionAndTakes() throws Exception {
        String path = ZooKeeperFixture.uniquePath("claims-parent-cut-off");
        CuratorFramework admin = zk.newClient();
        queue(admin, path).offer("a");
        admin.delete().forPath(path + "/claims"); // the removal's claim create fails, and the parents are made again
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newClientRetryingOnce(proxy);
        AtomicBoolean cut = cutOffAfter(client, proxy, "CuratorMultiTransaction");
        DistributedQueue<String> queue = queue(client, path);
        CompletableFuture<String> polled = Background.call(() -> queue.poll(Duration.ofSeconds(60)));

        awaitCuratorGaveUp(client, path, cut);
        assertFalse(polled.isDone(), "the poll waits for the connection");
        reconnect(proxy, client);
        assertEquals("a", polled.get(30, TimeUnit.SECONDS));
        closeAndAssertDrained(client, proxy, path);
    }

    @Test
    void aWriteSlotWhoseCreateWasInDoubtAndIsGoneIsForgottenWithoutTakingTheQueueForReset() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-in-doubt-gone");
        putFromAClientSinceClosed(path, "x");
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newClientRetryingOnce(proxy);
        DistributedQueue<String> queue = queue(client, path);
        assertEquals(1, queue.size()); // the count is known

        // The create of the client's first write slot lands, its reply is lost, and the offer gives up on it; cut
        // off, Curator then answers the create in doubt, and the client keeps the slot as one that may be missing.
        proxy.loseReplies(true);
        assertFalse(queue.offer("a", Duration.ofMillis(500)));
        proxy.refuseConnections(true);
        proxy.cutConnections();
        awaitCuratorGaveUp(client, path, new AtomicBoolean(true));
        reconnect(proxy, client);
        CuratorFramework admin = zk.newClient();
        for (String slot : admin.getChildren().forPath(path + "/slots")) {
            admin.delete().forPath(path + "/slots/" + slot);
        }

        RequestCounter requests = new RequestCounter();
        client.getZookeeperClient().setTracerDriver(requests);
        assertTrue(queue.offer("b"));
        assertEquals(0, requests.count(path, "Exists"), () -> "not counted again: " + requests.names(path));
        assertEquals(List.of("x", "b"), drain(queue));
        closeAndAssertDrained(client, proxy, path);
    }

    /** Cuts the client behind {@code proxy} off, refusing it, once it has traced its first request named so. */
    private static AtomicBoolean cutOffAfter(CuratorFramework client, ZooKeeperProxy proxy, String request) {
        return onFirst(client, request, () -> {
            proxy.refuseConnections(true);
            proxy.cutConnections();
        });
    }

    /**
     * Runs {@code action} on ZooKeeper's event thread once the client has traced its first request whose name starts
     * with {@code request}: its answer is in, and what the caller sends next is not yet. True once it ran.
     */
    private static AtomicBoolean onFirst(CuratorFramework client, String request, Runnable action) {
        AtomicBoolean done = new AtomicBoolean();
        client.getZookeeperClient().setTracerDriver(new TracerDriver() {
            @Override
            public void addTrace(String name, long time, TimeUnit unit) {
                if (name.startsWith(request) && done.compareAndSet(false, true)) {
                    action.run();
                }
            }

            @Override
            public void addCount(String name, int increment) {}
        });
        return done;
    }

    /** Once cut off: a request sent after the ones that met the cut has been given up on by Curator, as they were. */
    private static void awaitCuratorGaveUp(CuratorFramework client, String path, AtomicBoolean cut) throws Exception {
        await().until(cut::get);
        CompletableFuture<Integer> probe = new CompletableFuture<>();
        client.checkExists()
                .inBackground((c, event) -> probe.complete(event.getResultCode()))
                .forPath(path);
        assertEquals(KeeperException.Code.CONNECTIONLOSS.intValue(), probe.get(30, TimeUnit.SECONDS));
    }

    @Test
    void anUntimedOfferWhoseNewWriteSlotIsCutOffByAnOutageFailsOnceCuratorGivesUpAndWritesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("offer-slot-cut-off");
        putFromAClientSinceClosed(path, "x");
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newClientRetryingOnce(proxy);
        DistributedQueue<String> queue = queue(client, path);
        assertEquals(1, queue.size()); // the count is known: the offer goes out in a shared transaction

        proxy.loseReplies(true); // the create of the client's first write slot goes out, and its reply is lost
        CompletableFuture<Boolean> offered = startParked(() -> queue.offer("a"));
        proxy.refuseConnections(true);
        proxy.cutConnections();

        assertNothingDone(offered, "offering to", path);
        reconnect(proxy, client);
        assertTrue(queue.offer("b"));
        assertOneSlotLeft(path);
        assertEquals(List.of("x", "b"), drain(queue(zk.newClient(), path)), "the offer cut off wrote nothing");
        closeAndAssertDrained(client, proxy, path);
    }

    @Test
    void aConsumerCutOffWhileAnotherClientClaimsTheItemAgainHearsOfTheLastClaimsEnd() throws Exception {
        String path = ZooKeeperFixture.uniquePath("claimed-again-while-cut-off");
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newOutageProofClient(proxy);
        DistributedQueue<String> consumer = queue(client, path);
        // On the consumer's server, so that its claims are applied there before the consumer reconnects.
        DistributedQueue<String> claimer = queue(
                zk.newCustomClient(
                        b -> b.connectString(zk.ensemble().servers().get(0).address())),
                path);
        claimer.put("x");
        Claim<String> first = claimer.claim(Duration.ofSeconds(10)).orElseThrow();
        assertEquals(null, consumer.poll()); // meets the claim, and watches it
        await("the consumer watches the claim").until(() -> zk.watchesByPath().contains(path + "/claims/"));
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();

        CountDownLatch suspended = ZooKeeperFixture.latchOn(client, ConnectionState.SUSPENDED);
        proxy.refuseConnections(true);
        proxy.cutConnections();
        assertTrue(suspended.await(20, TimeUnit.SECONDS));
        first.close();
        Claim<String> second = claimer.claim(Duration.ofSeconds(10)).orElseThrow(); // the same name, a new claim
        // Reconnecting on the same session puts the claim's watch back, which tells of the new claim as a change of
        // its data, once.
        CountDownLatch reconnected = ZooKeeperFixture.latchOn(client, ConnectionState.RECONNECTED);
        proxy.refuseConnections(false);
        assertTrue(reconnected.await(20, TimeUnit.SECONDS));
        assertEquals(session, client.getZookeeperClient().getZooKeeper().getSessionId());
        second.close();

        assertEquals("x", consumer.poll(Duration.ofSeconds(10)));
        closeAndAssertDrained(client, proxy, path);
    }

    /** A proxy in front of the ensemble's first server, for the client of a test to be cut off through. */
    private static ZooKeeperProxy firstServersProxy() throws IOException {
        return zk.ensemble().proxy(zk.ensemble().servers().get(0));
    }

    /** A drain's sink that runs {@code fault} as the {@code nth} item reaches it, before it takes that item. */
    private static List<String> sinkThatAtItem(int nth, Runnable fault) {
        return new ArrayList<>() {
            @Override
            public boolean add(String item) {
                if (size() == nth - 1) {
                    fault.run();
                }
                return super.add(item);
            }
        };
    }

    /** Closes the client and its proxy, then checks that the queue was drained and nothing of it leaked. */
    private static void closeAndAssertDrained(CuratorFramework client, ZooKeeperProxy proxy, String path)
            throws Exception {
        client.close();
        proxy.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    /** Another client puts the item, and is closed, which deletes its write slot. */
    private static void putFromAClientSinceClosed(String path, String item) throws InterruptedException {
        CuratorFramework putter = zk.newClient();
        queue(putter, path).put(item);
        putter.close();
    }

    /** Runs {@code call} on a thread of its own, and returns once it is done or parked, waiting for an answer. */
    private static <T> CompletableFuture<T> startParked(Callable<T> call) {
        return startParked(call, () -> true);
    }

    /** As {@link #startParked(Callable)}, for a park that counts only once {@code ready} holds too. */
    private static <T> CompletableFuture<T> startParked(Callable<T> call, BooleanSupplier ready) {
        CompletableFuture<T> answer = new CompletableFuture<>();
        Thread caller = new Thread(() -> {
            try {
                answer.complete(call.call());
            } catch (Throwable e) {
                answer.completeExceptionally(e);
            }
        });
        caller.start();
        await().until(() -> answer.isDone() || ready.getAsBoolean() && caller.getState() == Thread.State.WAITING);
        return answer;
    }

    /** The untimed call failed, saying that it did nothing because the connection dropped. */
    private static void assertNothingDone(CompletableFuture<?> call, String doing, String path) {
        ExecutionException failed = assertThrows(ExecutionException.class, () -> call.get(30, TimeUnit.SECONDS));
        assertEquals(
                "nothing done " + doing + " " + path + "/items: the connection to ZooKeeper dropped during the call,"
                        + " which does not wait for it",
                failed.getCause().getMessage());
    }

    private static void reconnect(ZooKeeperProxy proxy, CuratorFramework client) throws InterruptedException {
        // Counts this reconnection only, since the proxy lets nobody in before it is told to. Curator's news reaches
        // coord's own listener first, on the same thread: a call after this finds coord connected, which a check of
        // the client alone may find before it heard of the drop, or while coord has not heard of the return yet.
        CountDownLatch reconnected = ZooKeeperFixture.latchOn(client, ConnectionState.RECONNECTED);
        proxy.loseReplies(false);
        proxy.refuseConnections(false);
        assertTrue(reconnected.await(20, TimeUnit.SECONDS));
    }

    /** The slot a cut-off call may have made is deleted; the one the next call made is kept. */
    private static void assertOneSlotLeft(String path) throws InterruptedException {
        CuratorFramework reader = zk.newClient();
        await("one write slot left")
                .until(() -> reader.getChildren().forPath(path + "/slots").size() == 1);
    }

    @Test
    void aWriteWhoseReplyWasLostCountsTowardsTheCapacity() throws Exception {
        String path = ZooKeeperFixture.uniquePath("capacity-after-lost-reply");
        PutInFlight inFlight = PutInFlight.start(path, 2);
        ZooKeeperProxy proxy = inFlight.proxy();

        proxy.refuseConnections(true);
        proxy.cutConnections();
        proxy.loseReplies(false);
        proxy.refuseConnections(false);
        inFlight.put().get(30, TimeUnit.SECONDS); // sent again, and found landed without a reply

        assertFalse(inFlight.queue().offer("c"), "the queue holds 2 of 2");
        assertEquals(List.of("a", "b"), drain(queue(inFlight.admin(), path)));
        inFlight.client().close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aWriteCutOffByTheClientsCloseSaysItMayHaveLanded() throws Exception {
        String path = ZooKeeperFixture.uniquePath("write-at-close");
        PutInFlight inFlight = PutInFlight.start(path);

        inFlight.client().close();
        ExecutionException failed =
                assertThrows(ExecutionException.class, () -> inFlight.put().get(10, TimeUnit.SECONDS));
        assertEquals(
                "cannot tell whether a write to " + path + "/items landed: the client was closed while it was in"
                        + " flight",
                failed.getCause().getMessage());
        inFlight.proxy().loseReplies(false);
        assertEquals(List.of("a", "b"), drain(queue(inFlight.admin(), path)), "it had landed");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aReleaseThatCannotTellIfItLandedLooksAtTheClaimSoTheItemIsNotHiddenFromItsOwnClient() throws Exception {
        String path = ZooKeeperFixture.uniquePath("release-in-doubt");
        ClaimThroughProxy held = ClaimThroughProxy.of(path);

        // The release lands and its reply is lost; the slots are deleted while the consumer is cut off.
        held.proxy().loseReplies(true);
        CompletableFuture<Void> closed = CompletableFuture.runAsync(held.claim()::close);
        await().until(() -> held.admin().getChildren().forPath(path + "/claims").isEmpty());
        deleteSlotsWhileCutOff(held.proxy(), held.admin(), path);
        closed.get(30, TimeUnit.SECONDS);

        assertEquals("x", held.consumer().poll(Duration.ofSeconds(20)), "back in play for its own client too");
        held.client().close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aReleaseThatCannotTellIfItLandedAndDidNotIsSentAgainSoTheItemIsNotHiddenUntilTheSessionEnds()
            throws Exception {
        String path = ZooKeeperFixture.uniquePath("release-not-landed");
        ClaimThroughProxy held = ClaimThroughProxy.of(path);
        long session = held.client().getZookeeperClient().getZooKeeper().getSessionId();

        // The release goes out while the consumer is cut off, so it cannot land; the slots are deleted meanwhile.
        CountDownLatch suspended = ZooKeeperFixture.latchOn(held.client(), ConnectionState.SUSPENDED);
        held.proxy().refuseConnections(true);
        held.proxy().cutConnections();
        assertTrue(suspended.await(10, TimeUnit.SECONDS));
        held.claim().close(); // returns at once while disconnected
        deleteSlotsWhileCutOff(held.proxy(), held.admin(), path);

        assertEquals("x", held.consumer().poll(Duration.ofSeconds(20)), "back in play, on the session that claimed it");
        assertEquals(session, held.client().getZookeeperClient().getZooKeeper().getSessionId());
        held.client().close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aWriteWhoseSlotIsDeletedWhileItsReplyIsLostFailsRatherThanWritingTwice() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-deleted-in-doubt");
        ZooKeeperProxy proxy = firstServersProxy();
        CuratorFramework client = zk.newOutageProofClient(proxy);
        DistributedQueue<String> producer = queue(client, path);
        producer.offer("warm-up"); // the slot is made, and the count known
        CuratorFramework admin = zk.newClient();
        assertEquals("warm-up", queue(admin, path).poll());

        // The transaction lands and its reply is lost; while the producer is cut off, the slots are deleted by hand,
        // and Curator sends the transaction again once it is back.
        proxy.loseReplies(true);
        CompletableFuture<Boolean> offered = Background.call(() -> producer.offer("x"));
        await().until(() -> admin.getChildren().forPath(path + "/items").size() == 1);
        deleteSlotsWhileCutOff(proxy, admin, path);

        ExecutionException failed = assertThrows(ExecutionException.class, () -> offered.get(30, TimeUnit.SECONDS));
        assertInstanceOf(CoordinationException.class, failed.getCause());
        assertTrue(failed.getCause().getMessage().contains("cannot tell whether a write"), failed.getMessage());
        assertEquals(1, admin.getChildren().forPath(path + "/items").size(), "written once");
        assertEquals("x", queue(admin, path).poll());
        client.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void offersAroundAServerRestartLandExactlyOnce() throws Exception {
        String path = ZooKeeperFixture.uniquePath("restart");
        CuratorFramework producerClient = zk.newClient();
        DistributedQueue<String> producer = queue(producerClient, path);
        CountDownLatch suspended = ZooKeeperFixture.latchOn(producerClient, ConnectionState.SUSPENDED);
        int items = 120;
        AtomicInteger written = new AtomicInteger();
        CompletableFuture<Void> writing = CompletableFuture.runAsync(() -> {
            try {
                for (int i = 0; i < items; i++) {
                    producer.put("item-" + i);
                    written.incrementAndGet();
                }
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().until(() -> written.get() >= 40);

        zk.stopServer();
        assertTrue(suspended.await(10, TimeUnit.SECONDS));
        zk.restartServer();
        writing.get(60, TimeUnit.SECONDS);

        List<String> expected = new ArrayList<>();
        for (int i = 0; i < items; i++) {
            expected.add("item-" + i);
        }
        assertEquals(expected, drain(queue(zk.newClient(), path)));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aTimedClaimWhoseSessionMarkerCannotBeMadeGivesUpOnceTheConnectionDropsAndLeavesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("claim-marker-deadline");
        ZooKeeperProxy proxy = firstServersProxy();
        DistributedQueue<String> consumer =
                queue(zk.newCustomClient(builder -> builder.connectString(proxy.connectString())), path);
        queue(zk.newClient(), path).putAll(List.of("a", "b", "c"));
        assertEquals("a", consumer.poll()); // makes its write slot, and reads the next items ahead: a claim of "b"
        // sends nothing before its session marker

        proxy.loseReplies(true);
        CompletableFuture<Optional<Claim<String>>> claimed = CompletableFuture.supplyAsync(() -> {
            try {
                return consumer.claim(Duration.ofSeconds(1));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        // Its deadline passes before it looked at the queue once: the look it then gets ends when the client hears
        // that the connection is gone, not when Curator's retries would give up.
        assertEquals(Optional.empty(), claimed.get(20, TimeUnit.SECONDS), "the claim outlived its connection");
        proxy.loseReplies(false);

        Claim<String> b = consumer.claim(Duration.ofSeconds(20)).orElseThrow();
        assertEquals("b", b.item());
        assertTrue(b.ack());
        assertEquals(List.of("c"), drain(consumer));
        CuratorFramework admin = zk.newClient();
        await("one session marker, the one its session uses")
                .atMost(Duration.ofSeconds(20))
                .until(() -> admin.getChildren().forPath(path + "/sessions").size() == 1);
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
