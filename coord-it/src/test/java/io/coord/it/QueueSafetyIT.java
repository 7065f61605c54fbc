package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import io.coord.testkit.ZooKeeperFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
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
import org.apache.curator.test.InstanceSpec;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The queue's delivery guarantees while servers die and sessions expire. Through {@code poll} and {@code take} under
 * random faults: nothing lost, duplicated or made up, except within the two gaps the queue's README documents, which
 * need a session to end in the middle of a call and are reported rather than failed on (see {@link QueueLedger}).
 * Through claims whose holders die before they ack: every item acked exactly once, and handed out again only after
 * its holder gave it up. And, deterministically, a producer whose session ends after its write landed unanswered
 * finds that write instead of writing the item again.
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
        // The README documents two at-most-once gaps that a session ending mid-call can open (see QueueLedger). They
        // are reported, not failed on; every other loss, duplicate or stray item fails the test.
        String documented = report.documented().size() + " violations within the README's documented gaps";
        if (!report.documented().isEmpty()) {
            System.out.println(
                    "QueueSafetyIT plain mode, " + documented + ":\n" + String.join("\n", report.documented()));
        }
        assertEquals(
                List.of(),
                report.unexplained(),
                () -> run + "\n" + report.unexplained().size() + " unexplained violations:\n"
                        + String.join("\n", report.unexplained()) + "\n" + documented + ":\n"
                        + String.join("\n", report.documented()));
        assertTrue(ledger.receivedCount() > 200, "too few items to mean anything: " + run);
        assertTrue(chaos.kills() >= 1, "no server was killed: " + run);
        assertTrue(chaos.serverExpiries() >= 1, "no session expired: " + run);
        System.out.println("QueueSafetyIT plain mode: " + run + "; " + documented);

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
     * The producer's own check for a write whose session ended before the answer came: it must find the item that
     * landed, and not write it again while no consumer has touched it. The queue has seen items come and go first,
     * which matters: from then on the items parent's cversion (creates plus deletes, as clients see it) runs ahead
     * of the sequence numbers that new items get (creates only).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void producerWhoseSessionEndsAfterItsWriteLandedDoesNotWriteItAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("queue-replayed-write");
        CuratorFramework consumerClient = trackedClient("consumer");
        DistributedQueue<String> consumer = queue(consumerClient, path);
        InstanceSpec server = cluster.instances().get(0);
        try (FaultyProxy proxy = FaultyProxy.start(server.getHostname(), server.getPort())) {
            CuratorFramework producerClient = cluster.newClient(proxy.connectString());
            DistributedQueue<String> producer = queue(producerClient, path);
            for (int i = 0; i < 5; i++) {
                producer.put("before-" + i);
            }
            for (int i = 0; i < 5; i++) {
                assertEquals("before-" + i, consumer.poll(Duration.ofSeconds(5)));
            }

            // As soon as the producer has read the item count, the server's replies stop reaching it: the write
            // that follows lands, unanswered. Curator's tracer reports the read before the producer sees it.
            AtomicBoolean armed = new AtomicBoolean(true);
            String items = path + "/items";
            producerClient.getZookeeperClient().setTracerDriver(new AdvancedTracerDriver() {
                @Override
                public void addTrace(OperationTrace trace) {
                    if (trace.getName().startsWith("Exists")
                            && items.equals(trace.getPath())
                            && armed.compareAndSet(true, false)) {
                        proxy.loseReplies(true);
                    }
                }

                @Override
                public void addEvent(EventTrace trace) {}
            });
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<?> put = pool.submit(() -> {
                    producer.put("the-item");
                    return null;
                });
                await("the write landed")
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> consumerClient.checkExists().forPath(items).getNumChildren() == 1);
                // Its session ends before any answer gets through. It learns so when it reconnects, and Curator
                // sends the write again on the new session, where it fails on the dead writer slot.
                long ended = cluster.expireSession(producerClient);
                proxy.cutAll();
                proxy.loseReplies(false);
                put.get(30, TimeUnit.SECONDS);
                assertTrue(ClusterFixture.sessionId(producerClient) != ended, "the producer kept its session");
            } finally {
                pool.shutdownNow();
            }
            assertEquals(
                    1,
                    consumerClient.getChildren().forPath(items).size(),
                    () -> "the producer wrote the item again, though the first copy was still in the queue: "
                            + describeItems(consumerClient, items));
            assertEquals("the-item", consumer.poll(Duration.ofSeconds(5)));
            assertNull(consumer.poll());
        }
        assertQueueLeftNothing(path);
    }

    /**
     * Each item with its creation zxid, producer token and payload, for failure messages. The stored form is
     * documented in the queue's README: an 18-byte header ('Q', format 1, a 16-byte token), then the payload.
     */
    private static String describeItems(CuratorFramework reader, String items) {
        try {
            StringBuilder all = new StringBuilder();
            for (String child :
                    reader.getChildren().forPath(items).stream().sorted().toList()) {
                Stat stat = new Stat();
                byte[] data = reader.getData().storingStatIn(stat).forPath(items + "/" + child);
                all.append("\n  ")
                        .append(child)
                        .append(" czxid 0x")
                        .append(Long.toHexString(stat.getCzxid()))
                        .append(" token ")
                        .append(HexFormat.of().formatHex(data, 2, 18))
                        .append(": ")
                        .append(new String(data, 18, data.length - 18, StandardCharsets.UTF_8));
            }
            Stat parent = reader.checkExists().forPath(items);
            return all.append("\n  parent cversion ")
                    .append(parent.getCversion())
                    .append(", numChildren ")
                    .append(parent.getNumChildren())
                    .toString();
        } catch (Exception e) {
            return "unreadable: " + e;
        }
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
     * The queue's three parents are persistent by design, so it is their children that must be gone: no item, no
     * claim, and once every client is closed no session marker, no writer slot and no watch on any server.
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
                List.of("claims", "items", "sessions"),
                fresh.getChildren().forPath(path).stream().sorted().toList());
        for (String parent : List.of("items", "claims", "sessions")) {
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
