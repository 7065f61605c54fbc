package io.coord.queue;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.testkit.Acls;
import io.coord.testkit.ZooKeeperFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Requests per operation, counted by a Curator tracer on the consumer's own client: counts, never timings. */
@Timeout(60)
class QueueRequestCountTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    private static CuratorFramework tracedClient(AllRequests counter) throws InterruptedException {
        // A stall past a short session's read timeout would add a reconnection's requests to the count.
        CuratorFramework client = zk.unstartedClient(ZooKeeperFixture::outageProof);
        client.getZookeeperClient().setTracerDriver(counter);
        client.start();
        assertTrue(client.blockUntilConnected(10, TimeUnit.SECONDS));
        return client;
    }

    private static DistributedQueue<String> traced(String path, AllRequests counter) throws InterruptedException {
        return DistributedQueue.builder(tracedClient(counter), path, QueueSerializer.utf8())
                .build();
    }

    private static void fill(String path, int items) throws Exception {
        DistributedQueue<String> producer = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        for (int from = 0; from < items; from += 500) {
            producer.putAll(IntStream.range(from, Math.min(items, from + 500))
                    .mapToObj(i -> "item-" + i)
                    .toList());
        }
    }

    @Test
    void aConsumerThatMayNotReadAnotherClientsClaimLooksAtTheItemOnceAWhileNotInALoop() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-unreadable-claim");
        // The claimer's claims are readable by the claimer alone; everything else is open.
        CuratorFramework claimerClient =
                zk.newCustomClient(b -> b.authorization("digest", "claimer:secret".getBytes(StandardCharsets.UTF_8))
                        .aclProvider(claimsForTheirCreatorOnly()));
        DistributedQueue<String> claimer = DistributedQueue.builder(claimerClient, path, QueueSerializer.utf8())
                .build();
        claimer.put("x");
        Claim<String> held = claimer.claim(Duration.ofSeconds(10)).orElseThrow();
        AllRequests counter = new AllRequests();
        DistributedQueue<String> consumer = traced(path, counter);

        assertNull(consumer.poll(Duration.ofMillis(1_500)));
        // A look at the item when the poll starts, and at most one more a second later: the name of a claim this
        // client cannot watch comes back after a second, not at once.
        assertTrue(
                counter.count("Transaction") <= 2,
                () -> counter.count("Transaction") + " transactions, " + counter.count() + " requests in all");
        held.close();
        assertEquals("x", consumer.poll(Duration.ofSeconds(10)));
    }

    @Test
    void aTimedPollWhoseKnownItemsAreAllGoneSendsNoNewWritePastItsDeadline() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-stale-names");
        fill(path, 20);
        AllRequests counter = new AllRequests();
        DistributedQueue<String> consumer = traced(path, counter);
        assertEquals("item-0", consumer.poll()); // reads the names of the rest, and the data of the next 15
        DistributedQueue<String> other = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        assertEquals(19, other.drainTo(new ArrayList<>(), 19));
        int before = counter.count("Transaction");

        assertNull(consumer.poll(Duration.ofNanos(1)));
        // The first name is tried, as any poll gets one look; the other 14 it has data for are not, once the deadline
        // passed.
        assertEquals(1, counter.count("Transaction") - before);
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    /** Creator-only ACLs for the queue's claims, open ones for every other node. */
    private static ACLProvider claimsForTheirCreatorOnly() {
        return Acls.byPath(
                path -> path.contains("/claims/"),
                List.of(new ACL(ZooDefs.Perms.ALL, new Id("auth", ""))),
                List.of(new ACL(ZooDefs.Perms.ALL, new Id("world", "anyone"))));
    }

    @Test
    void pollingAThousandItemsCostsAboutOneRequestEach() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-poll");
        int items = 1_000;
        fill(path, items);
        AllRequests counter = new AllRequests();
        DistributedQueue<String> consumer = traced(path, counter);

        for (int i = 0; i < items; i++) {
            assertEquals("item-" + i, consumer.poll());
        }
        assertNull(consumer.poll());

        // Per item: the transaction that removes it, and a sixteenth of a read (each poll that has to read reads
        // the next 15 items too). Once: the write slot, and two children reads, the first one and the one that
        // finds the queue empty.
        int reads = (items + ItemReads.READ_AHEAD) / (ItemReads.READ_AHEAD + 1);
        assertEquals(reads, counter.count("MultiRead"), () -> nonItemRequests(counter));
        assertEquals(items, counter.count("Transaction"));
        assertEquals(2, counter.count("GetChildren"));
        assertEquals(items + reads + 3, counter.count(), () -> nonItemRequests(counter));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void drainingInBatchesOfAHundredCostsAFiftiethOfARequestPerItem() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-drain");
        int items = 1_000;
        fill(path, items);
        AllRequests counter = new AllRequests();
        DistributedQueue<String> consumer = traced(path, counter);

        List<String> drained = new ArrayList<>();
        while (consumer.drainTo(drained, 100) > 0) {
            // each call moves one batch of up to 100: one multi-read, one transaction
        }

        assertEquals(IntStream.range(0, items).mapToObj(i -> "item-" + i).toList(), drained);
        assertEquals(items / 100, counter.count("MultiRead"), () -> nonItemRequests(counter));
        assertEquals(items / 100, counter.count("Transaction"));
        int requests = counter.count();
        assertTrue(requests < items / 2, () -> requests + " requests: " + nonItemRequests(counter));
        assertEquals(2 * items / 100 + 3, requests, () -> nonItemRequests(counter));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aBatchIsOneRequestAndAClaimItsReadAndOneTransactionWithOneMoreToAckOrClose() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-claim");
        AllRequests counter = new AllRequests();
        DistributedQueue<String> queue = traced(path, counter);
        queue.offer("first"); // the count, the parents, the write slot, the item
        queue.claim(Duration.ZERO).orElseThrow().close(); // the children, the session's marker
        assertEquals("first", queue.poll());
        counter.reset();

        queue.putAll(List.of("a", "b"));
        assertEquals(List.of("Transaction"), kinds(counter));

        counter.reset();
        // The names written since the last read are not known yet: one children read. Then "a" is read, and "b" ahead.
        Claim<String> a = queue.claim(Duration.ZERO).orElseThrow();
        assertEquals(List.of("GetChildren", "MultiRead", "Transaction"), kinds(counter));
        counter.reset();
        assertTrue(a.ack());
        assertEquals(List.of("Transaction"), kinds(counter));

        counter.reset();
        Claim<String> b = queue.claim(Duration.ZERO).orElseThrow(); // read ahead: only the claim's transaction
        assertEquals(List.of("Transaction"), kinds(counter));
        counter.reset();
        b.close();
        assertEquals(List.of("Transaction"), kinds(counter));
        assertEquals("b", queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    /** What the counted requests were, in order, without their paths. */
    private static List<String> kinds(AllRequests counter) {
        return counter.names().stream()
                .map(name -> Stream.of("GetChildren", "MultiRead", "Transaction")
                        .filter(name::contains)
                        .findFirst()
                        .orElse(name))
                .toList();
    }

    @Test
    void offeringCostsOneRequestPerItemAfterTheFirstCount() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-offer");
        AllRequests counter = new AllRequests();
        DistributedQueue<String> producer = DistributedQueue.builder(
                        tracedClient(counter), path, QueueSerializer.utf8())
                .capacity(1_000)
                .build();
        producer.offer("first"); // the count, the parents, the write slot, the item
        counter.reset();

        int items = 500;
        for (int i = 0; i < items; i++) {
            assertTrue(producer.offer("item-" + i));
        }

        // The sequence numbers of its own items tell the producer how many can be there; 501 of 1,000 leaves room.
        assertEquals(items, counter.count(), () -> nonItemRequests(counter));
        assertEquals(items, counter.count("Transaction"));
    }

    /**
     * The parent's cversion, as a Stat reports it, is twice the creates under it less the children, in 32 bits: past
     * 2^30 creates it overflows. The count the producer derives from it must not: it would take the queue for empty,
     * or for full, for ever after.
     */
    @Test
    void pastABillionCreatesOffersStillCostOneRequestEachAndKeepToTheCapacity() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-overflow");
        AllRequests counter = new AllRequests();
        DistributedQueue<String> producer = DistributedQueue.builder(
                        tracedClient(counter), path, QueueSerializer.utf8())
                .capacity(50)
                .build();
        producer.offer("first"); // makes the parents
        zk.setChildCounter(path + "/items", (1 << 30) + 7);
        DistributedQueue<String> fresh = DistributedQueue.builder(tracedClient(counter), path, QueueSerializer.utf8())
                .capacity(50)
                .build();
        fresh.offer("counted"); // its first count, of a cversion that overflowed
        counter.reset();

        int items = 40;
        for (int i = 0; i < items; i++) {
            assertTrue(fresh.offer("item-" + i));
        }
        assertEquals(items, counter.count(), () -> nonItemRequests(counter));
        assertEquals(items, counter.count("Transaction"));

        int more = 0;
        while (more < 100 && fresh.offer("more-" + more)) {
            more++;
        }
        assertEquals(50, fresh.size());
        assertEquals(8, more, "the queue holds 50 items at most");
    }

    @Test
    void offersNearTheBoundCountAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-bound");
        AllRequests counter = new AllRequests();
        DistributedQueue<String> producer = DistributedQueue.builder(
                        tracedClient(counter), path, QueueSerializer.utf8())
                .capacity(10)
                .build();
        for (int i = 0; i < 10; i++) {
            assertTrue(producer.offer("item-" + i));
        }
        DistributedQueue<String> consumer = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        assertEquals(10, consumer.drainTo(new ArrayList<>(), 10));
        counter.reset();

        // What the producer knows says full; one count says empty, and the next writes need no count.
        assertTrue(producer.offer("again"));
        assertTrue(producer.offer("and again"));

        assertEquals(1, counter.count("Exists"), () -> counter.names().toString());
        assertEquals(3, counter.count(), () -> counter.names().toString());
    }

    @Test
    void concurrentOffersThroughOneInstanceLandOnceEachAndInOrderPerThread() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-combined");
        AllRequests counter = new AllRequests();
        DistributedQueue<String> producer = DistributedQueue.builder(
                        tracedClient(counter), path, QueueSerializer.utf8())
                .build();
        producer.offer("first");
        counter.reset();
        int threads = 8;
        int each = 50;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<CompletableFuture<Void>> writers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                writers.add(CompletableFuture.runAsync(
                        () -> {
                            for (int i = 0; i < each; i++) {
                                assertTrue(producer.offer(thread + "-" + i));
                            }
                        },
                        pool));
            }
            CompletableFuture.allOf(writers.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }

        // Writes that meet in flight share a transaction, never more than one each.
        assertTrue(
                counter.count("Transaction") <= threads * each,
                () -> counter.names().toString());
        DistributedQueue<String> consumer = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        List<String> all = new ArrayList<>();
        while (consumer.drainTo(all, 1_000) > 0) {
            // drain everything
        }
        assertEquals("first", all.get(0));
        for (int t = 0; t < threads; t++) {
            String prefix = t + "-";
            List<String> mine = all.stream().filter(s -> s.startsWith(prefix)).toList();
            assertEquals(IntStream.range(0, each).mapToObj(i -> prefix + i).toList(), mine, "thread " + t);
        }
        assertEquals(threads * each + 1, all.size());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    private static String nonItemRequests(AllRequests counter) {
        return counter.names().stream()
                .filter(n -> !n.contains("Transaction") && !n.contains("MultiRead"))
                .toList()
                .toString();
    }

    @Test
    void waitersOnOneClientShareEachChildrenRead() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-waiters");
        AllRequests counter = new AllRequests();
        CuratorFramework consumerClient = tracedClient(counter);
        DistributedQueue<String> consumer = DistributedQueue.builder(consumerClient, path, QueueSerializer.utf8())
                .build();
        DistributedQueue<String> producer = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        producer.offer("layout"); // so that the parents exist and the count below is about waiting only
        assertEquals("layout", consumer.poll());
        counter.reset();
        int waiters = 8;
        ExecutorService pool = Executors.newFixedThreadPool(waiters);
        try {
            List<CompletableFuture<String>> takes = new ArrayList<>();
            for (int i = 0; i < waiters; i++) {
                takes.add(CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return consumer.take();
                            } catch (InterruptedException e) {
                                throw new IllegalStateException(e);
                            }
                        },
                        pool));
            }
            // Every waiter is parked once the one watched read that found the queue empty has answered.
            await().until(() -> counter.count("GetChildren") >= 1);
            int readsBefore = counter.count("GetChildren");
            assertEquals(1, readsBefore, () -> counter.names().toString());

            for (int i = 0; i < waiters; i++) {
                producer.offer("item-" + i);
                int served = i + 1;
                await().until(() ->
                        takes.stream().filter(CompletableFuture::isDone).count() == served);
            }

            // Each item wakes the waiters twice (its create, then its removal; the last removal finds none left), and
            // the waiters woken by one change share one read, even those that ask only after it answered.
            int reads = counter.count("GetChildren") - readsBefore;
            assertTrue(reads <= 2 * waiters - 1, () -> reads + " children reads for " + waiters + " items");
        } finally {
            pool.shutdownNow();
        }
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
