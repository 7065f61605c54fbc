package io.coord.queue;

import static io.coord.queue.TestQueues.drain;
import static io.coord.queue.TestQueues.queue;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.ClientContext;
import io.coord.testkit.Background;
import io.coord.testkit.CapturedLog;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.RetryPolicy;
import org.apache.curator.drivers.TracerDriver;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher.WatcherType;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Items that cannot be read or are refused, queue paths made again, a counter that ran out; and waits ended by
 * interrupts, dead sessions, closed clients and watches taken away.
 */
@Timeout(90)
class QueueDataAndWaitFaultTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void aWaitersWatchThatABusyServerRefusedToRemoveIsRemovedAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("watch-removal-throttled");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(b -> b.connectString(proxy.connectString()));
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("layout");
        assertEquals("layout", queue.poll());
        // The last waiter to leave removes the persistent watch on the items; a server with request throttling on
        // refuses that (THROTTLEDOP) when busy, and keeps the watch on a connection that goes on.
        proxy.refuseNext(ZooDefs.OpCode.removeWatches, KeeperException.Code.THROTTLEDOP);

        assertNull(queue.poll(Duration.ofMillis(200)));
        await().until(() -> proxy.requestsRefused() == 1);
        zk.ensemble().assertNoWatchesUnder(path); // while the client lives
        client.close();
        proxy.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aQueueWhoseWatchBreaksTheConnectionAtEachTrySaysItNeedsANewerServer() throws Exception {
        String path = ZooKeeperFixture.uniquePath("watch-add-lost");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newClientRetryingOnce(proxy);
        DistributedQueue<String> queue = queue(client, path);
        queue.put("a");
        // A server before 3.6 answers addWatch at once, ahead of a write still in its pipeline, and breaks the
        // connection: the client takes that answer out of turn for a broken connection. Here every add breaks it.
        for (int i = 0; i < 20; i++) { // a few more than it takes: an add may go on a connection counted already
            proxy.breakOnNext(ZooDefs.OpCode.addWatch);
        }

        // The third connection broken under an add marks an older server, rather than a wait through outages.
        CoordinationException refused =
                assertThrows(CoordinationException.class, () -> queue.poll(Duration.ofSeconds(30)));
        assertEquals(
                "the queue at " + path + "/items needs ZooKeeper 3.6 or later (persistent watches);"
                        + " the server broke the connection under each addWatch, as one before 3.6 does",
                refused.getMessage());
        assertTrue(proxy.requestsRefused() >= 3, () -> proxy.requestsRefused() + " adds broke their connection");
        client.close();
        proxy.close();
        assertEquals("a", queue(zk.newClient(), path).poll()); // nothing lost
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aConsumerHandsOutTheItemsOfAQueueWhosePathWasDeletedAndMadeAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("made-again");
        CuratorFramework admin = zk.newClient();
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        for (int i = 0; i < 3; i++) {
            assertTrue(queue.offer("old-" + i));
        }
        for (int i = 0; i < 3; i++) {
            assertEquals("old-" + i, queue.poll()); // from the names read with the first: no read after the last
        }

        // Reset by hand: the new items parent numbers from zero again, so the new items have the names of those the
        // consumer has just seen go.
        admin.delete().deletingChildrenIfNeeded().forPath(path);
        assertTrue(queue.offer("new-0"));
        assertTrue(queue.offer("new-1"));
        assertEquals("new-0", queue.poll(Duration.ofSeconds(5)));
        assertEquals("new-1", queue.poll(Duration.ofSeconds(5)));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void itemsReadAheadBeforeAResetAreNeverHandedOutForTheNewItemsOfTheirNames() throws Exception {
        String path = ZooKeeperFixture.uniquePath("reset-read-ahead");
        CuratorFramework admin = zk.newClient();
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        queue.putAll(List.of("old-0", "old-1", "old-2", "old-3", "old-4"));
        assertEquals("old-0", queue.poll()); // reads the four after it ahead

        admin.delete().deletingChildrenIfNeeded().forPath(path);
        queue.putAll(List.of("new-0", "new-1", "new-2", "new-3", "new-4")); // the same names as the old items

        assertEquals(List.of("new-0", "new-1", "new-2", "new-3", "new-4"), drain(queue));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aClaimHeldAcrossAResetDoesNotHideTheNewItemOfItsName() throws Exception {
        String path = ZooKeeperFixture.uniquePath("reset-gone");
        CuratorFramework admin = zk.newClient();
        CuratorFramework consumerClient = zk.newClient();
        DistributedQueue<String> consumer = queue(consumerClient, path);
        DistributedQueue<String> producer = queue(zk.newClient(), path);
        producer.putAll(List.of("old-0", "old-1", "old-2", "old-3", "old-4", "old-5"));
        assertEquals(List.of("old-0", "old-1", "old-2", "old-3", "old-4"), pollTimes(consumer, 5));
        Claim<String> claim = consumer.claim(Duration.ofSeconds(5)).orElseThrow(); // held through the reset

        admin.delete().deletingChildrenIfNeeded().forPath(path);
        producer.putAll(List.of("new-0", "new-1"));
        assertEquals("new-0", consumer.peek()); // reads the new parent's names
        claim.close(); // its item is gone, but its name comes back into play (see NameCacheTest for what follows)
        NameCache names =
                SharedQueue.of(ClientContext.of(consumerClient), path).items.names();
        String first = "qs-0000000000";
        String claimed = "qs-0000000005";
        await("the claimed name is back in play")
                .until(() -> names.readAhead(first, 10).contains(claimed));
        assertEquals("new-0", consumer.poll());
        producer.putAll(List.of("new-2", "new-3", "new-4", "new-5")); // new-5 is named like the claimed item

        assertEquals(
                List.of("new-1", "new-2", "new-3", "new-4", "new-5"), drainWithin(consumer, Duration.ofSeconds(5)));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    private static List<String> pollTimes(DistributedQueue<String> queue, int times) {
        List<String> items = new ArrayList<>();
        for (int i = 0; i < times; i++) {
            items.add(queue.poll());
        }
        return items;
    }

    private static List<String> drainWithin(DistributedQueue<String> queue, Duration wait) throws InterruptedException {
        List<String> items = new ArrayList<>();
        for (String item = queue.poll(wait); item != null; item = queue.poll(wait)) {
            items.add(item);
        }
        return items;
    }

    @Test
    void aProducerKeepsToTheCapacityOfAQueueWhosePathWasDeletedAndMadeAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("made-again-bounded");
        CuratorFramework admin = zk.newClient();
        DistributedQueue<String> queue = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .capacity(3)
                .build();
        for (int i = 0; i < 3; i++) {
            assertTrue(queue.offer("old-" + i));
        }
        drain(queue);
        assertTrue(queue.offer("old-3")); // counts the queue: empty, after three items
        drain(queue);

        // The producer knows of one item after four; the new parent numbers from zero again.
        admin.delete().deletingChildrenIfNeeded().forPath(path);
        int accepted = 0;
        for (int i = 0; i < 6; i++) {
            if (queue.offer("new-" + i)) {
                accepted++;
            }
        }
        assertEquals(3, accepted);
        assertEquals(3, queue.size());
        drain(queue);
        assertEquals(0, queue.size()); // counted: empty, after three items

        // Reset again, and filled past the count's three creates by a producer without a bound: this producer's next
        // write must not go by what it knew of the parent before.
        admin.delete().deletingChildrenIfNeeded().forPath(path);
        DistributedQueue<String> unbounded = queue(zk.newClient(), path);
        for (int i = 0; i < 6; i++) {
            assertTrue(unbounded.offer("other-" + i));
        }
        assertFalse(queue.offer("late"));
        assertEquals(6, queue.size());
        drain(queue);
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void itemThatCannotBeDeserializedStaysInPlace() throws Exception {
        String path = ZooKeeperFixture.uniquePath("poison");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> pickyQueue =
                DistributedQueue.builder(client, path, PICKY).build();
        DistributedQueue<String> plain = queue(zk.newClient(), path);
        plain.offer("poison pill");
        plain.offer("fine");

        assertEquals(
                "cannot read poison",
                assertThrows(IllegalStateException.class, pickyQueue::poll).getMessage());
        assertThrows(IllegalStateException.class, pickyQueue::take);
        assertThrows(IllegalStateException.class, () -> pickyQueue.claim(Duration.ofSeconds(1)));
        assertThrows(IllegalStateException.class, pickyQueue::peek);
        assertEquals(2, pickyQueue.size());
        QueueLeaks.assertNoClaimsOrWatches(zk, path);

        assertEquals(List.of("poison pill", "fine"), drain(plain));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    /**
     * Reads every item, failing on one that starts with "poison", throwing an Error on "fatal", and interrupting the
     * reader on "interrupt".
     */
    private static final QueueSerializer<String> PICKY = TestQueues.utf8Reading(item -> {
        if (item.startsWith("poison")) {
            throw new IllegalStateException("cannot read poison");
        }
        if (item.startsWith("fatal")) {
            throw new UnreadableItem("cannot read fatal");
        }
        if (item.startsWith("missing")) {
            return null; // a serializer that answers null for what it cannot read
        }
        if (item.startsWith("interrupt")) {
            Thread.currentThread().interrupt(); // as if the caller were interrupted while this round is sent
        }
        return item;
    });

    /** What a serializer might throw beyond exceptions. */
    private static final class UnreadableItem extends Error {
        private static final long serialVersionUID = 1L;

        UnreadableItem(String message) {
            super(message);
        }
    }

    /** Over the small-item size, so that it is taken in a round of its own after the small ones before it. */
    private static String large(String prefix) {
        return prefix + "x".repeat(ItemCodec.SMALL_ITEM_BYTES + 100);
    }

    @Test
    void drainHandsOverWhatItRemovedBeforeAnItemThatCannotBeDeserialized() throws Exception {
        assertDrainHandsOverWhatItRemovedBefore("poison", IllegalStateException.class);
    }

    @Test
    void drainHandsOverWhatItRemovedBeforeAnItemWhoseSerializerThrowsAnError() throws Exception {
        assertDrainHandsOverWhatItRemovedBefore("fatal", UnreadableItem.class);
    }

    private static final Id ANYONE = new Id("world", "anyone");

    @Test
    void anItemThisClientMayNotReadHoldsUpOnlyItselfAndTheFailureNamesIt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("unreadable");
        CuratorFramework admin = zk.newClient();
        DistributedQueue<String> plain = queue(admin, path);
        plain.putAll(List.of("a", "b", "c", "d"));
        String third = path + "/items/"
                + admin.getChildren().forPath(path + "/items").stream()
                        .sorted(Comparator.comparing((String name) -> name.substring(name.lastIndexOf('-') + 1)))
                        .toList()
                        .get(2);
        admin.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL & ~ZooDefs.Perms.READ, ANYONE)))
                .forPath(third);
        DistributedQueue<String> consumer = queue(zk.newClient(), path);

        assertEquals("a", consumer.poll(), "read ahead together with the unreadable item, the head still goes out");
        List<String> sink = new ArrayList<>();
        assertEquals(1, consumer.drainTo(sink, 10), "the item before it goes out");
        assertEquals(List.of("b"), sink);
        CoordinationException refused = assertThrows(CoordinationException.class, () -> consumer.drainTo(sink, 10));
        assertTrue(
                refused.getMessage().contains(third) && refused.getMessage().contains("NOAUTH"), refused.getMessage());

        admin.setACL().withACL(List.of(new ACL(ZooDefs.Perms.ALL, ANYONE))).forPath(third);
        assertEquals(List.of("c", "d"), drain(plain));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aTakeRefusedOnItsClaimNamesTheClaimNotTheItem() throws Exception {
        String path = ZooKeeperFixture.uniquePath("claim-refused");
        CuratorFramework admin = zk.newClient();
        DistributedQueue<String> plain = queue(admin, path);
        plain.offer("a");
        String item = admin.getChildren().forPath(path + "/items").get(0);
        // A poll creates the claim and deletes it in its transaction: either may be refused.
        for (int refusedPermission : List.of(ZooDefs.Perms.CREATE, ZooDefs.Perms.DELETE)) {
            admin.setACL()
                    .withACL(List.of(new ACL(ZooDefs.Perms.ALL & ~refusedPermission, ANYONE)))
                    .forPath(path + "/claims");
            CoordinationException refused = assertThrows(CoordinationException.class, plain::poll);
            assertEquals("taking " + path + "/claims/" + item + " failed: NOAUTH", refused.getMessage());
        }

        admin.setACL().withACL(List.of(new ACL(ZooDefs.Perms.ALL, ANYONE))).forPath(path + "/claims");
        assertEquals(List.of("a"), drain(plain));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aClaimWhoseReleaseIsRefusedSaysSoAndItsItemComesBackWithTheSession() throws Exception {
        String path = ZooKeeperFixture.uniquePath("release-refused");
        CuratorFramework admin = zk.newClient();
        CuratorFramework claiming = zk.newClient();
        queue(admin, path).offer("a");
        Claim<String> claim =
                queue(claiming, path).claim(Duration.ofSeconds(10)).orElseThrow();
        admin.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL & ~ZooDefs.Perms.DELETE, ANYONE)))
                .forPath(path + "/claims");

        String claimPath = path + "/claims/"
                + admin.getChildren().forPath(path + "/claims").get(0);
        try (CapturedLog log = new CapturedLog()) {
            claim.close(); // AutoCloseable: it does not throw, and cannot be sent again
            await().until(() -> log.linesOf("io.coord.queue").stream()
                    .anyMatch(l -> l.contains("the release of " + claimPath + " was refused (NOAUTH): the item stays"
                            + " claimed until this client's session ends")));
        }
        admin.setACL().withACL(List.of(new ACL(ZooDefs.Perms.ALL, ANYONE))).forPath(path + "/claims");
        DistributedQueue<String> other = queue(admin, path);
        assertNull(other.poll(), "still claimed");
        claiming.close();
        assertEquals("a", other.poll(Duration.ofSeconds(20)));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void anItemTheSerializerReadsAsNullStaysInPlaceAndThePollSaysWhy() throws Exception {
        String path = ZooKeeperFixture.uniquePath("null-item");
        DistributedQueue<String> plain = queue(zk.newClient(), path);
        plain.offer("missing");
        DistributedQueue<String> picky =
                DistributedQueue.builder(zk.newClient(), path, PICKY).build();

        // Answered null, "empty", after removing the item, before.
        NullPointerException refused = assertThrows(NullPointerException.class, picky::poll);
        assertTrue(
                refused.getMessage().contains("returned null for the item " + path + "/items/"), refused.getMessage());
        assertThrows(NullPointerException.class, picky::peek);
        assertEquals(1, plain.size(), "the item stays in place");
        assertEquals("missing", plain.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aNameAPollGivesBackWakesATakeOfTheSameClient() throws Exception {
        String path = ZooKeeperFixture.uniquePath("put-back-wakes");
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch fail = new CountDownLatch(1);
        AtomicBoolean failedOnce = new AtomicBoolean();
        QueueSerializer<String> failsOnce = TestQueues.utf8Reading(item -> {
            if (failedOnce.compareAndSet(false, true)) {
                reading.countDown();
                try {
                    fail.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                throw new IllegalStateException("not now");
            }
            return item;
        });
        DistributedQueue<String> consumer =
                DistributedQueue.builder(zk.newClient(), path, failsOnce).build();
        queue(zk.newClient(), path).offer("x");
        CompletableFuture<String> polling = Background.call(consumer::poll);
        assertTrue(reading.await(10, TimeUnit.SECONDS)); // the poll holds x while it reads it
        CompletableFuture<String> taking = Background.call(consumer::take);
        await().during(Duration.ofMillis(500)).until(() -> !taking.isDone()); // waiting: x is out of play

        fail.countDown();

        assertInstanceOf(
                IllegalStateException.class,
                assertThrows(ExecutionException.class, polling::get).getCause());
        assertEquals("x", taking.get(15, TimeUnit.SECONDS), "the take heard x come back into play");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aPutWaitingForRoomOutlivesAnOutageLongerThanItsSession() throws Exception {
        String path = ZooKeeperFixture.uniquePath("put-outage");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> producer = DistributedQueue.builder(client, path, QueueSerializer.utf8())
                .capacity(1)
                .build();
        producer.offer("a");
        CountDownLatch lost = ZooKeeperFixture.latchOn(client, ConnectionState.LOST);
        CompletableFuture<Void> putting = Background.call(() -> {
            producer.put("b");
            return null;
        });
        await().during(Duration.ofMillis(300)).until(() -> !putting.isDone()); // waiting for room

        zk.stopServer();
        assertTrue(lost.await(30, TimeUnit.SECONDS));
        // It failed here before: the watch's add, sent at once on the ended session, ran out of retries.
        await("the put still waits")
                .during(Duration.ofSeconds(8))
                .atMost(Duration.ofSeconds(20))
                .until(() -> !putting.isDone());
        zk.restartServer();

        DistributedQueue<String> consumer = queue(zk.newClient(), path);
        assertEquals("a", consumer.take());
        putting.get(30, TimeUnit.SECONDS);
        assertEquals("b", consumer.take());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    /**
     * Concurrent puts of one producer share transactions: a put that arrives while one is in flight gathers into the
     * next. Until that one is sent the put has written nothing, so an interrupt ends it, as it ends any put still
     * waiting, even while the one in flight waits out an outage.
     */
    @Test
    void aPutInterruptedWhileItsSharedTransactionStillGathersLeavesItAndWritesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("put-interrupted");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        DistributedQueue<String> producer =
                queue(zk.newCustomClient(builder -> builder.connectString(proxy.connectString())), path);
        producer.put("first"); // the count is known from here: later puts share transactions

        proxy.refuseConnections(true);
        proxy.cutConnections();
        CompletableFuture<Void> inFlight = new CompletableFuture<>();
        Thread sender = startPutting(producer, "in flight", inFlight);
        await("the first put waits for the connection").until(() -> isParked(sender));
        CompletableFuture<Void> gathered = new CompletableFuture<>();
        Thread joiner = startPutting(producer, "gathered", gathered);
        await("the second put waits for its turn").until(() -> isParked(joiner));

        joiner.interrupt();
        ExecutionException interrupted =
                assertThrows(ExecutionException.class, () -> gathered.get(10, TimeUnit.SECONDS));
        assertInstanceOf(InterruptedException.class, interrupted.getCause());
        assertFalse(inFlight.isDone());

        proxy.refuseConnections(false);
        inFlight.get(30, TimeUnit.SECONDS);
        assertEquals(List.of("first", "in flight"), drain(queue(zk.newClient(), path)));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    private static Thread startPutting(DistributedQueue<String> producer, String item, CompletableFuture<Void> done) {
        Thread t = new Thread(
                () -> {
                    try {
                        producer.put(item);
                        done.complete(null);
                    } catch (InterruptedException | RuntimeException e) {
                        done.completeExceptionally(e);
                    }
                },
                "put " + item);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static boolean isParked(Thread t) {
        Thread.State state = t.getState();
        return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
    }

    /**
     * ZooKeeper names items with its count of the creates under the items parent, in 32 bits: past 2,147,483,647 it
     * names every item the same. The queue then takes no more items, says why, and keeps what it holds; once the path
     * is deleted the count starts again.
     */
    @Test
    void aQueueWhoseCounterRanOutRefusesWritesSaysWhyAndKeepsItsItems() throws Exception {
        String path = ZooKeeperFixture.uniquePath("counter-end");
        DistributedQueue<String> producer = queue(zk.newClient(), path);
        producer.offer("made"); // makes the parents
        assertEquals("made", producer.poll());
        zk.setChildCounter(path + "/items", Integer.MAX_VALUE - 3);

        // The first write's name tells of billions of creates: the second counts the queue first, and the third
        // has room by that count.
        assertTrue(producer.offer("a"));
        assertTrue(producer.offer("b"));
        assertTrue(producer.offer("c"));
        // The next name is the last there is: the producer learnt so from its write's name, and refuses it.
        List<String> stored = List.of("a", "b", "c");
        CoordinationException last = assertThrows(CoordinationException.class, () -> producer.put("b"));
        assertTrue(last.getMessage().contains("has run out"), last.getMessage());
        CoordinationException refused = assertThrows(CoordinationException.class, () -> producer.offer("c"));
        assertTrue(
                refused.getMessage().contains("the sequence counter of " + path + "/items has run out"),
                refused.getMessage());
        DistributedQueue<String> other = queue(zk.newClient(), path);
        assertThrows(CoordinationException.class, () -> other.put("d"), "a client that counts learns it too");

        assertEquals(stored, drain(queue(zk.newClient(), path)));
        assertThrows(CoordinationException.class, () -> producer.offer("e"), "drained is not enough: names repeat");

        CuratorFramework admin = zk.newClient();
        admin.delete().deletingChildrenIfNeeded().forPath(path);
        assertTrue(producer.offer("f"));
        assertEquals(List.of("qs-0000000000"), admin.getChildren().forPath(path + "/items"));
        assertEquals(List.of("f"), drain(other));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    /** Two small items, then one the picky serializer fails on with {@code thrown}, in a round of its own. */
    private static void assertDrainHandsOverWhatItRemovedBefore(String failing, Class<? extends Throwable> thrown)
            throws Exception {
        String path = ZooKeeperFixture.uniquePath("drain-" + failing);
        DistributedQueue<String> plain = queue(zk.newClient(), path);
        plain.putAll(List.of("a", "b", large(failing)));
        DistributedQueue<String> picky =
                DistributedQueue.builder(zk.newClient(), path, PICKY).build();
        List<String> sink = new ArrayList<>();

        assertEquals(2, picky.drainTo(sink, 10), "the items removed in the first round");
        assertEquals(List.of("a", "b"), sink);
        Throwable met = assertThrows(thrown, () -> picky.drainTo(sink, 10), "the next call meets the item");
        assertEquals(1, met.getSuppressed().length, "the path is attached once, however often it is met");
        assertTrue(met.getSuppressed()[0].getMessage().contains("cannot read the item " + path + "/items/"));
        assertEquals(1, plain.size(), "the item that failed stays in place");

        assertEquals(List.of(large(failing)), drain(plain));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void timedDrainInterruptedBetweenRoundsHandsOverWhatItRemovedAndKeepsTheInterrupt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("drain-interrupt");
        DistributedQueue<String> plain = queue(zk.newClient(), path);
        plain.putAll(List.of("a", "interrupt", large("c")));
        DistributedQueue<String> picky =
                DistributedQueue.builder(zk.newClient(), path, PICKY).build();
        List<String> sink = new ArrayList<>();

        int moved = picky.drainTo(sink, 10, Duration.ofSeconds(10));

        assertTrue(Thread.interrupted(), "the interrupt is left for the caller");
        assertEquals(moved, sink.size());
        List<String> everything = new ArrayList<>(sink);
        everything.addAll(drain(plain));
        assertEquals(List.of("a", "interrupt", large("c")), everything, "every item went out exactly once");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void blockedTakeSurvivesItsOwnSessionExpiring() throws Exception {
        String path = ZooKeeperFixture.uniquePath("consumer-expiry");
        CuratorFramework consumerClient = zk.newClient();
        DistributedQueue<String> consumer = queue(consumerClient, path);
        DistributedQueue<String> producer = queue(zk.newClient(), path);
        producer.offer("before");
        assertEquals("before", consumer.take());
        CompletableFuture<String> taken = CompletableFuture.supplyAsync(() -> {
            try {
                return consumer.take();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        long session = consumerClient.getZookeeperClient().getZooKeeper().getSessionId();

        zk.expireSession(consumerClient);
        await().atMost(Duration.ofSeconds(20))
                .until(() -> consumerClient.getZookeeperClient().isConnected()
                        && consumerClient.getZookeeperClient().getZooKeeper().getSessionId() != session);
        producer.offer("after");

        assertEquals("after", taken.get(20, TimeUnit.SECONDS));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void closingTheClientWakesABlockedTakeWithACoordinationException() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> consumer = queue(client, path);
        CompletableFuture<String> taken = CompletableFuture.supplyAsync(() -> {
            try {
                return consumer.take();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(() -> !taken.isDone());

        client.close();

        ExecutionException e = assertThrows(ExecutionException.class, () -> taken.get(10, TimeUnit.SECONDS));
        assertInstanceOf(CoordinationException.class, e.getCause());
    }

    @Test
    void aWatchRemovalWhoseAnswerIsLostIsSentAgainOnceConnected() throws Exception {
        String path = ZooKeeperFixture.uniquePath("watch-removal-lost");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // Without Curator's retries, the removal's lost answer comes back in doubt at once.
        CuratorFramework client = zk.newClientWithoutRetries(proxy);
        AllRequests requests = new AllRequests();
        client.getZookeeperClient().setTracerDriver(requests);
        DistributedQueue<String> consumer = queue(client, path);
        AtomicInteger outcome = new AtomicInteger();
        Thread taker = startTaking(consumer, outcome);
        await("the take waits with its watch on")
                .until(() -> requests.count("GetChildren") == 1 && zk.watchCount() > 0);

        CountDownLatch reconnected = ZooKeeperFixture.latchOn(client, ConnectionState.RECONNECTED);

        // The removal lands, its answer is lost, and the connection is cut; reconnecting on the same session puts
        // the client's watches back on the server before anything else is sent.
        proxy.dropNextReply();
        taker.interrupt();
        taker.join(10_000);

        assertEquals(2, outcome.get());
        assertTrue(reconnected.await(20, TimeUnit.SECONDS));
        QueueLeaks.assertNoClaimsOrWatches(zk, path);
    }

    @Test
    void aTakeWhoseWatchTheApplicationRemovesAddsItAgainAndStillHearsOfItems() throws Exception {
        String path = ZooKeeperFixture.uniquePath("watch-removed-by-another");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> consumer = queue(client, path);
        CompletableFuture<String> taken = Background.call(consumer::take);
        await("the take waits with its watch on").until(() -> zk.watchesByPath().contains(path + "/items"));

        // What a queue of the same server path under another namespace of this connection does when its last waiter
        // leaves.
        client.watchers().removeAll().ofType(WatcherType.Persistent).forPath(path + "/items");
        await("the take added its watch again").until(() -> zk.watchesByPath().contains(path + "/items"));
        queue(zk.newClient(), path).put("a");

        assertEquals("a", taken.get(10, TimeUnit.SECONDS));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aWaiterThatComesWhileAWatchRemovalIsUnansweredStillHearsOfItems() throws Exception {
        String path = ZooKeeperFixture.uniquePath("watch-removal-then-add");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // Curator sends each request again on its own after a lost connection. With backoff, a later request can go
        // first: here the first request to be retried waits longest.
        AtomicBoolean firstRetry = new AtomicBoolean(true);
        RetryPolicy firstRetriedLast = (retryCount, elapsedMs, sleeper) -> {
            try {
                sleeper.sleepFor(firstRetry.getAndSet(false) ? 2_000 : 50, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            return retryCount < 20;
        };
        CuratorFramework client = zk.newCustomClient(
                builder -> builder.connectString(proxy.connectString()).retryPolicy(firstRetriedLast));
        Answers answers = new Answers();
        client.getZookeeperClient().setTracerDriver(answers);
        DistributedQueue<String> consumer = queue(client, path);
        Thread first = new Thread(() -> {
            try {
                consumer.take();
            } catch (InterruptedException e) {
                // leaves, removing the watch
            }
        });
        first.start();
        await("the first take waits with its watch on").until(() -> answers.count("GetChildren") == 1);

        // The first waiter leaves and a second comes while the removal is unanswered; then the connection goes.
        proxy.loseReplies(true);
        first.interrupt();
        first.join(10_000);
        CompletableFuture<String> second = CompletableFuture.supplyAsync(() -> {
            try {
                return consumer.take();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(() -> !second.isDone());
        proxy.loseReplies(false);
        CountDownLatch reconnected = ZooKeeperFixture.latchOn(client, ConnectionState.RECONNECTED);
        proxy.cutConnections();
        assertTrue(reconnected.await(20, TimeUnit.SECONDS)); // a connected check could answer before the cut is heard

        queue(zk.newClient(), path).offer("x");

        assertEquals("x", second.get(10, TimeUnit.SECONDS));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    /** A thread that takes one item and sets {@code outcome}: 1 when it took one, 2 when it was interrupted. */
    private static Thread startTaking(DistributedQueue<String> consumer, AtomicInteger outcome) {
        Thread taker = new Thread(() -> {
            try {
                consumer.take();
                outcome.set(1);
            } catch (InterruptedException e) {
                outcome.set(2);
            }
        });
        taker.start();
        return taker;
    }

    /** Counts the answers one client receives, by Curator's tracer names. */
    private static final class Answers implements TracerDriver {
        private final Map<String, Integer> counts = new ConcurrentHashMap<>();

        @Override
        public void addTrace(String name, long time, TimeUnit unit) {
            counts.merge(name, 1, Integer::sum);
        }

        @Override
        public void addCount(String name, int increment) {}

        int count(String kind) {
            return counts.entrySet().stream()
                    .filter(e -> e.getKey().contains(kind))
                    .mapToInt(Map.Entry::getValue)
                    .sum();
        }
    }

    @Test
    void interruptedTakeThrowsAndLeavesNoWatch() throws Exception {
        String path = ZooKeeperFixture.uniquePath("interrupt");
        DistributedQueue<String> consumer = queue(zk.newClient(), path);
        AtomicInteger outcome = new AtomicInteger();
        Thread taker = startTaking(consumer, outcome);
        // Parked on its watch: the interrupt must end the wait itself.
        await().until(() -> taker.getState() == Thread.State.WAITING
                && !zk.ensemble().watchesUnder(path).isEmpty());

        taker.interrupt();
        taker.join(10_000);

        assertEquals(2, outcome.get());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
