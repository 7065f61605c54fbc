package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import io.coord.testkit.EmbeddedServer;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.apache.curator.drivers.AdvancedTracerDriver;
import org.apache.curator.drivers.EventTrace;
import org.apache.curator.drivers.OperationTrace;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The queue's delivery guarantees while servers die and sessions expire. Through {@code poll} and {@code take} under
 * random faults: nothing lost, duplicated or made up (see {@link QueueLedger}). Through claims whose holders die
 * before they ack: every item acked exactly once, and handed out again only after its holder gave it up. And,
 * deterministically, the two ways a session ending in mid-call used to lose or duplicate an item: a producer whose
 * write landed unanswered does not write it again though a consumer took it meanwhile, and a consumer whose removal
 * landed unanswered still returns the item.
 */
class QueueSafetyIT {
    private static final int CAPACITY = 100;
    private static final Duration DRAIN_LIMIT = Duration.ofSeconds(30);

    // Plain mode under chaos.
    private static final Duration CHAOS_RUN = Duration.ofSeconds(20);
    private static final int PRODUCERS = 2;
    private static final int CONSUMERS = 3;
    private static final int MAX_ITEMS_PER_PRODUCER = 5_000;
    private static final Duration POLL_TIMEOUT = Duration.ofMillis(300);
    private static final Duration OFFER_TIMEOUT = Duration.ofSeconds(1);

    // Claim mode with consumers that die holding a claim.
    private static final int CLAIMED_ITEMS = 200;
    private static final int CLAIMERS = 3;
    private static final int VICTIM_EVERY = 10;
    private static final int MAX_VICTIMS = 16;
    private static final Duration CLAIM_RUN_LIMIT = Duration.ofSeconds(40);

    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    private final Timeline timeline = new Timeline();

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void polledItemsAreNeitherLostNorDuplicatedOutsideTheDocumentedGapsWhileServersDieAndSessionsExpire()
            throws Exception {
        String path = ZooKeeperFixture.uniquePath("queue-safety");
        QueueLedger ledger = new QueueLedger(timeline);
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < PRODUCERS + CONSUMERS; i++) {
            clients.add(trackedClient("client-" + i));
        }
        long seed = System.nanoTime();
        Chaos chaos = new Chaos(cluster, clients, timeline, seed);
        ExecutorService pool = Executors.newFixedThreadPool(PRODUCERS + CONSUMERS + 1);
        CountDownLatch go = new CountDownLatch(1);
        AtomicBoolean consuming = new AtomicBoolean(true);
        long deadline = System.nanoTime() + CHAOS_RUN.toNanos();
        try {
            List<Future<?>> producers = new ArrayList<>();
            for (int p = 0; p < PRODUCERS; p++) {
                String name = "producer-" + p + " (client-" + p + ")";
                String prefix = "p" + p + "-";
                CuratorFramework client = clients.get(p);
                boolean blocking = p % 2 == 0; // one producer puts, the other offers with a timeout
                producers.add(pool.submit(() -> {
                    Thread.currentThread().setName(name);
                    go.await();
                    produce(name, prefix, client, queue(client, path), ledger, blocking, deadline);
                    return null;
                }));
            }
            List<Future<?>> consumers = new ArrayList<>();
            Future<?> taker = null;
            for (int c = 0; c < CONSUMERS; c++) {
                int index = PRODUCERS + c;
                String name = "consumer-" + c + " (client-" + index + ")";
                CuratorFramework client = clients.get(index);
                boolean blocking = c == CONSUMERS - 1; // the last one takes, and is interrupted to stop it
                Future<?> consumer = pool.submit(() -> {
                    Thread.currentThread().setName(name);
                    go.await();
                    consume(name, client, queue(client, path), ledger, blocking, consuming);
                    return null;
                });
                consumers.add(consumer);
                if (blocking) {
                    taker = consumer;
                }
            }
            Future<?> faults = pool.submit(chaos);
            go.countDown();
            for (Future<?> producer : producers) {
                producer.get(CHAOS_RUN.toSeconds() + 60, TimeUnit.SECONDS);
            }
            chaos.stop();
            faults.get(60, TimeUnit.SECONDS);
            timeline.add("producers and chaos stopped; draining");

            CuratorFramework reader = cluster.newClient();
            await("the queue drained")
                    .atMost(DRAIN_LIMIT)
                    .pollInterval(Duration.ofMillis(100))
                    .untilAsserted(() -> assertEquals(
                            List.of(),
                            ClusterFixture.describeChildren(reader, path + "/items"),
                            () -> "items left; " + summary(ledger, chaos, seed)));
            consuming.set(false);
            taker.cancel(true);
            for (Future<?> consumer : consumers) {
                if (consumer != taker) {
                    consumer.get(30, TimeUnit.SECONDS);
                }
            }
        } finally {
            chaos.stop();
            consuming.set(false);
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS), "workers did not stop");
        }

        String run = summary(ledger, chaos, seed);
        QueueLedger.Report report = ledger.check();
        List<String> violations = new ArrayList<>(report.unexplained());
        violations.addAll(report.documented());
        assertEquals(
                List.of(),
                violations,
                () -> run + "\n" + violations.size() + " violations:\n" + String.join("\n", violations));
        assertTrue(ledger.receivedCount() > 200, "too few items to mean anything: " + run);
        assertTrue(chaos.kills() >= 1, "no server was killed: " + run);
        assertTrue(chaos.serverExpiries() >= 1, "no session expired: " + run);
        System.out.println("QueueSafetyIT plain mode: " + run);

        assertQueueLeftNothing(path);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void everyClaimedItemIsAckedOnceAlthoughConsumersDieHoldingTheirClaims() throws Exception {
        String path = ZooKeeperFixture.uniquePath("queue-claims");
        List<String> items =
                IntStream.range(0, CLAIMED_ITEMS).mapToObj(i -> "c-" + i).toList();
        QueueClaimLedger ledger = new QueueClaimLedger(timeline, items);
        AtomicInteger deliveries = new AtomicInteger();
        CuratorFramework producerClient = trackedClient("producer");
        ExecutorService pool = Executors.newFixedThreadPool(CLAIMERS + 1);
        CountDownLatch go = new CountDownLatch(1);
        long deadline = System.nanoTime() + CLAIM_RUN_LIMIT.toNanos();
        int[] fates = new int[QueueClaimer.Fate.values().length];
        try {
            Future<?> producer = pool.submit(() -> {
                Thread.currentThread().setName("producer");
                go.await();
                DistributedQueue<String> queue = queue(producerClient, path);
                for (String item : items) {
                    queue.put(item);
                }
                return null;
            });
            List<Future<int[]>> claimers = new ArrayList<>();
            for (int c = 0; c < CLAIMERS; c++) {
                String name = "claimer-" + c;
                QueueClaimer claimer = new QueueClaimer(
                        name, cluster, this::trackedClient, client -> queue(client, path), ledger, timeline);
                claimers.add(pool.submit(() -> {
                    Thread.currentThread().setName(name);
                    go.await();
                    return claimer.run(deliveries, VICTIM_EVERY, MAX_VICTIMS, deadline);
                }));
            }
            go.countDown();
            producer.get(CLAIM_RUN_LIMIT.toSeconds(), TimeUnit.SECONDS);
            for (Future<int[]> claimer : claimers) {
                int[] counts = claimer.get(CLAIM_RUN_LIMIT.toSeconds() + 30, TimeUnit.SECONDS);
                for (int f = 0; f < fates.length; f++) {
                    fates[f] += counts[f];
                }
            }
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS), "workers did not stop");
        }

        String run = ledger.ackedCount() + " of " + CLAIMED_ITEMS + " acked, " + deliveries.get() + " deliveries, "
                + ledger.redeliveries() + " redeliveries, " + ledger.givenUpCount() + " given up; fates "
                + QueueClaimer.describe(fates);
        assertEquals(List.of(), ledger.violations(), run);
        for (QueueClaimer.Fate fate : QueueClaimer.victimFates()) {
            assertTrue(fates[fate.ordinal()] >= 1, "no claimer met fate " + fate + ": " + run);
        }
        assertEquals(ledger.givenUpCount(), ledger.redeliveries(), "every item given up comes back once: " + run);
        System.out.println("QueueSafetyIT claim mode: " + run);

        assertQueueLeftNothing(path);
    }

    /**
     * A producer whose session ends after its write landed unanswered, while a consumer takes the landed item before
     * the producer reconnects: the producer must learn that its write landed, and not write the item again.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void producerWhoseSessionEndsAfterItsWriteLandedDoesNotWriteItAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("queue-replayed-write");
        CuratorFramework consumerClient = trackedClient("consumer");
        DistributedQueue<String> consumer = queue(consumerClient, path);
        EmbeddedServer server = cluster.servers().get(0);
        try (ZooKeeperProxy proxy = ZooKeeperProxy.start(server.socketAddress())) {
            CuratorFramework producerClient = cluster.newClient(proxy.connectString());
            DistributedQueue<String> producer = queue(producerClient, path);
            // Once the producer's write slot is made, the server's replies stop reaching it: the transaction that
            // follows lands, unanswered. Curator's tracer reports a request's reply before the caller sees it.
            loseRepliesAfter(producerClient, proxy, "Create", path + "/slots/");
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<?> put = pool.submit(() -> {
                    producer.put("the-item");
                    return null;
                });
                assertEquals("the-item", consumer.poll(Duration.ofSeconds(10)), "the write landed");
                long ended = cluster.expireSession(producerClient);
                proxy.cutConnections();
                proxy.loseReplies(false);
                put.get(30, TimeUnit.SECONDS);
                assertTrue(ClusterFixture.sessionId(producerClient) != ended, "the producer kept its session");
            } finally {
                pool.shutdownNow();
            }
            assertEquals(
                    List.of(),
                    consumerClient.getChildren().forPath(path + "/items"),
                    "the producer wrote the item again");
            producerClient.close(); // while the proxy still carries its slot's delete
        }
        assertQueueLeftNothing(path);
    }

    /**
     * A consumer whose session ends after its removal landed unanswered: the item is out of the queue, and the poll
     * must still return it rather than lose it.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void consumerWhoseSessionEndsAfterItsRemovalLandedStillReturnsTheItem() throws Exception {
        String path = ZooKeeperFixture.uniquePath("queue-replayed-take");
        CuratorFramework producerClient = trackedClient("producer");
        queue(producerClient, path).put("the-item");
        EmbeddedServer server = cluster.servers().get(0);
        try (ZooKeeperProxy proxy = ZooKeeperProxy.start(server.socketAddress())) {
            CuratorFramework consumerClient = cluster.newClient(proxy.connectString());
            DistributedQueue<String> consumer = queue(consumerClient, path);
            // Once the consumer has read the item, replies stop reaching it: its removal lands, unanswered.
            loseRepliesAfter(consumerClient, proxy, "MultiRead", null);
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<String> poll = pool.submit(() -> consumer.poll(Duration.ofSeconds(30)));
                await("the removal landed")
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> producerClient
                                .getChildren()
                                .forPath(path + "/items")
                                .isEmpty());
                long ended = cluster.expireSession(consumerClient);
                proxy.cutConnections();
                proxy.loseReplies(false);
                assertEquals("the-item", poll.get(30, TimeUnit.SECONDS), "the poll lost the item it removed");
                assertTrue(ClusterFixture.sessionId(consumerClient) != ended, "the consumer kept its session");
            } finally {
                pool.shutdownNow();
            }
            consumerClient.close(); // while the proxy still carries its slot's delete
        }
        assertQueueLeftNothing(path);
    }

    /** Starts dropping the server's replies once a request named {@code kind} on a path under {@code under} answers. */
    private static void loseRepliesAfter(CuratorFramework client, ZooKeeperProxy proxy, String kind, String under) {
        AtomicBoolean armed = new AtomicBoolean(true);
        client.getZookeeperClient().setTracerDriver(new AdvancedTracerDriver() {
            @Override
            public void addTrace(OperationTrace trace) {
                if (trace.getName().startsWith(kind)
                        && (under == null
                                || (trace.getPath() != null && trace.getPath().startsWith(under)))
                        && armed.compareAndSet(true, false)) {
                    proxy.loseReplies(true);
                }
            }

            @Override
            public void addEvent(EventTrace trace) {}
        });
    }

    private void produce(
            String name,
            String prefix,
            CuratorFramework client,
            DistributedQueue<String> queue,
            QueueLedger ledger,
            boolean blocking,
            long deadline)
            throws InterruptedException {
        for (int i = 0; i < MAX_ITEMS_PER_PRODUCER && System.nanoTime() - deadline < 0; i++) {
            String item = prefix + i;
            QueueLedger.Start start = ledger.start(name, client);
            try {
                boolean added;
                if (blocking) {
                    queue.put(item);
                    added = true;
                } else {
                    added = queue.offer(item, OFFER_TIMEOUT);
                }
                if (added) {
                    ledger.sent(start, item);
                } else {
                    ledger.refused(start, item);
                }
            } catch (CoordinationException e) {
                ledger.maybeSent(start, item, e);
            }
        }
    }

    private void consume(
            String name,
            CuratorFramework client,
            DistributedQueue<String> queue,
            QueueLedger ledger,
            boolean blocking,
            AtomicBoolean consuming) {
        while (consuming.get() && !Thread.currentThread().isInterrupted()) {
            QueueLedger.Start start = ledger.start(name, client);
            try {
                // take() may return an item it had already removed with the interrupt flag set: it is recorded.
                ledger.received(start, blocking ? queue.take() : queue.poll(POLL_TIMEOUT));
            } catch (InterruptedException e) {
                return; // the signal to stop; nothing was removed
            } catch (CoordinationException e) {
                ledger.consumeFailed(start, e);
            }
        }
    }

    /**
     * The queue's four parents are persistent by design, so it is their children that must be gone: no item, no
     * claim, and once every client is closed no session marker, no write slot and no watch on any server.
     */
    private void assertQueueLeftNothing(String path) throws Exception {
        CuratorFramework reader = cluster.newClient();
        await("no claims left")
                .atMost(Duration.ofSeconds(20))
                .untilAsserted(() -> assertEquals(
                        List.of(), ClusterFixture.describeChildren(reader, path + "/claims"), "claims left"));
        assertEquals(List.of(), ClusterFixture.describeChildren(reader, path + "/items"), "items left");
        cluster.closeClients();
        CuratorFramework fresh = cluster.newClient();
        assertEquals(
                List.of("claims", "items", "sessions", "slots"),
                fresh.getChildren().forPath(path).stream().sorted().toList());
        for (String parent : List.of("items", "claims", "sessions", "slots")) {
            cluster.assertNoLeaks(fresh, path + "/" + parent);
        }
        cluster.closeClients();
        await("no watches left once every client is closed")
                .atMost(Duration.ofSeconds(20))
                .until(() -> cluster.watchCount() == 0);
    }

    private static DistributedQueue<String> queue(CuratorFramework client, String path) {
        return DistributedQueue.builder(client, path, QueueSerializer.utf8())
                .capacity(CAPACITY)
                .build();
    }

    private CuratorFramework trackedClient(String label) throws InterruptedException {
        CuratorFramework client = cluster.newClient();
        timeline.add(label + " starts on session 0x" + Long.toHexString(ClusterFixture.sessionId(client)));
        client.getConnectionStateListenable()
                .addListener((c, state) -> timeline.add(
                        label + " is " + state + ", session 0x" + Long.toHexString(ClusterFixture.sessionId(c))));
        return client;
    }

    private static String summary(QueueLedger ledger, Chaos chaos, long seed) {
        return "seed " + seed + ", " + ledger.sentCount() + " sent, " + ledger.maybeCount() + " maybe sent, "
                + ledger.refusedCount() + " refused, " + ledger.receivedCount() + " received, "
                + ledger.consumerFailures() + " failed polls, " + ledger.consumerCrossings()
                + " consumer calls across a session change; " + chaos.kills() + " kills, " + chaos.serverExpiries()
                + " expiries on the servers, " + chaos.clientExpiries() + " on clients";
    }
}
