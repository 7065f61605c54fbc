package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.queue.Claim;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import io.coord.testkit.EmbeddedServer;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Exactly-once hand-over through the faults that make a write's outcome unknown: a reply lost on the way back, then
 * the connection cut, and every third time the session expired on the servers before the client could reconnect.
 * Two producers ({@code put} and {@code putAll}) and three consumers ({@code poll}, {@code drainTo}, and
 * {@code claim} with {@code ack}) each run on a client of their own behind a proxy that drops replies on demand.
 * Every item produced must be consumed exactly once, and no call may end without knowing what it did.
 */
class QueueExactlyOnceIT {
    private static final int PRODUCERS = 2;
    private static final int ITEMS_PER_PRODUCER = 2_500;
    private static final int ITEMS = PRODUCERS * ITEMS_PER_PRODUCER;
    private static final int FAULTS = 50;
    private static final int ITEMS_PER_FAULT = ITEMS / FAULTS;
    private static final int EXPIRE_EVERY = 3;
    private static final Duration POLL = Duration.ofMillis(10);
    private static final int BATCH = 10;
    private static final Duration WAIT = Duration.ofMillis(200);

    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    private final Map<String, AtomicInteger> consumed = new ConcurrentHashMap<>();
    private final AtomicInteger consumedCount = new AtomicInteger();
    private final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void everyItemIsConsumedExactlyOnceThroughLostRepliesAndExpiredSessions() throws Exception {
        String path = ZooKeeperFixture.uniquePath("queue-exactly-once");
        List<EmbeddedServer> servers = cluster.servers();
        List<ZooKeeperProxy> proxies = new ArrayList<>();
        List<CuratorFramework> clients = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(PRODUCERS + 3);
        // Each fault lets every producer write its share of one fault's worth of items, so that the faults fall
        // among the traffic: a producer that is the victim gets its share once its replies are being dropped.
        List<Semaphore> permits = new ArrayList<>();
        AtomicBoolean consuming = new AtomicBoolean(true);
        int expiries = 0;
        try {
            for (int i = 0; i < PRODUCERS + 3; i++) {
                EmbeddedServer server = servers.get(i % servers.size());
                ZooKeeperProxy proxy = ZooKeeperProxy.start(server.socketAddress());
                proxies.add(proxy);
                clients.add(cluster.newClient(proxy.connectString()));
            }
            List<Future<?>> producers = new ArrayList<>();
            for (int p = 0; p < PRODUCERS; p++) {
                DistributedQueue<String> queue = queue(clients.get(p), path);
                int producer = p;
                Semaphore mine = new Semaphore(0);
                permits.add(mine);
                producers.add(pool.submit(() -> produce(queue, producer, mine)));
            }
            List<Future<?>> consumers = List.of(
                    pool.submit(() -> consume(queue(clients.get(PRODUCERS), path), consuming, this::pollOne)),
                    pool.submit(() -> consume(queue(clients.get(PRODUCERS + 1), path), consuming, this::drainSome)),
                    pool.submit(() -> consume(queue(clients.get(PRODUCERS + 2), path), consuming, this::claimOne)));

            int share = ITEMS_PER_FAULT / PRODUCERS;
            for (int fault = 0; fault < FAULTS; fault++) {
                int victim = fault % clients.size();
                boolean expire = fault % EXPIRE_EVERY == EXPIRE_EVERY - 1;
                for (int p = 0; p < PRODUCERS; p++) {
                    if (p != victim) {
                        permits.get(p).release(share);
                    }
                }
                int due = fault * ITEMS_PER_FAULT - ITEMS_PER_FAULT / 2;
                await("traffic before fault " + fault)
                        .pollInterval(POLL)
                        .atMost(Duration.ofSeconds(60))
                        .until(() -> consumedCount.get() >= due || !failures.isEmpty());
                Runnable kick = victim < PRODUCERS ? () -> permits.get(victim).release(share) : () -> {};
                inject(proxies.get(victim), clients.get(victim), expire, kick);
                expiries += expire ? 1 : 0;
            }
            for (Future<?> producer : producers) {
                producer.get(60, TimeUnit.SECONDS);
            }
            await("every item consumed")
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> consumedCount.get() >= ITEMS || !failures.isEmpty());
            consuming.set(false);
            for (Future<?> consumer : consumers) {
                consumer.get(30, TimeUnit.SECONDS);
            }
        } finally {
            consuming.set(false);
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS), "workers did not stop");
            cluster.closeClients(); // while the proxies still carry the slots' deletes
            proxies.forEach(ZooKeeperProxy::close);
        }

        assertEquals(List.of(), List.copyOf(failures), "calls that ended without knowing what they did");
        List<String> wrong = IntStream.range(0, PRODUCERS)
                .boxed()
                .flatMap(p -> IntStream.range(0, ITEMS_PER_PRODUCER).mapToObj(i -> item(p, i)))
                .filter(item -> count(item) != 1)
                .map(item -> item + " consumed " + count(item) + " times")
                .toList();
        assertEquals(List.of(), wrong, "items lost or duplicated");
        assertEquals(ITEMS, consumed.size(), "items consumed that nobody produced: " + consumed.keySet());
        assertEquals(FAULTS / EXPIRE_EVERY, expiries);
        System.out.println("QueueExactlyOnceIT: " + ITEMS + " items, " + FAULTS + " faults (" + expiries
                + " session expiries), each item consumed exactly once");

        // Slots went when their clients closed; claims and markers with their sessions.
        CuratorFramework reader = cluster.newClient();
        for (String parent : List.of("items", "claims", "slots", "sessions")) {
            cluster.assertNoLeaks(reader, path + "/" + parent);
        }
        cluster.closeClients();
    }

    /**
     * Drops the server's replies until one is lost (the client's next request, a write perhaps, lands unanswered),
     * then optionally ends the session on the servers, then cuts the connection and lets the client reconnect.
     * {@code kick} runs once replies are being dropped, to give an idle client something to send.
     */
    private static void inject(ZooKeeperProxy proxy, CuratorFramework client, boolean expire, Runnable kick)
            throws Exception {
        long lostBefore = proxy.repliesLost();
        proxy.loseReplies(true);
        kick.run();
        await("a reply lost")
                .pollInterval(POLL)
                .atMost(Duration.ofSeconds(10))
                .until(() -> proxy.repliesLost() > lostBefore);
        long session = ClusterFixture.sessionId(client);
        if (expire) {
            cluster.expireSession(client);
        }
        proxy.cutConnections();
        proxy.loseReplies(false);
        await("reconnected")
                .pollInterval(POLL)
                .atMost(Duration.ofSeconds(30))
                .until(() -> client.getZookeeperClient().isConnected()
                        && (!expire || ClusterFixture.sessionId(client) != session));
    }

    private Void produce(DistributedQueue<String> queue, int producer, Semaphore permits) throws InterruptedException {
        boolean batches = producer % 2 == 1;
        for (int i = 0; i < ITEMS_PER_PRODUCER; ) {
            int n = batches ? BATCH : 1;
            permits.acquire(n);
            List<String> items =
                    IntStream.range(i, i + n).mapToObj(k -> item(producer, k)).toList();
            try {
                if (batches) {
                    queue.putAll(items);
                } else {
                    queue.put(items.get(0));
                }
            } catch (CoordinationException e) {
                failures.add("producer " + producer + " writing " + items + ": " + e);
                return null;
            }
            i += n;
        }
        return null;
    }

    @FunctionalInterface
    private interface Consumption {
        void consumeFrom(DistributedQueue<String> queue) throws InterruptedException;
    }

    private Void consume(DistributedQueue<String> queue, AtomicBoolean consuming, Consumption consumption)
            throws InterruptedException {
        while (consuming.get()) {
            try {
                consumption.consumeFrom(queue);
            } catch (CoordinationException e) {
                failures.add("consumer: " + e);
                return null;
            }
        }
        return null;
    }

    private void pollOne(DistributedQueue<String> queue) throws InterruptedException {
        String item = queue.poll(WAIT);
        if (item != null) {
            received(item);
        }
    }

    private void drainSome(DistributedQueue<String> queue) throws InterruptedException {
        List<String> sink = new ArrayList<>();
        queue.drainTo(sink, 50, WAIT);
        sink.forEach(this::received);
    }

    private void claimOne(DistributedQueue<String> queue) throws InterruptedException {
        Optional<Claim<String>> claim = queue.claim(WAIT);
        if (claim.isPresent()) {
            try (Claim<String> held = claim.get()) {
                if (held.ack()) {
                    received(held.item()); // a false ack means the item goes to someone else
                }
            }
        }
    }

    private void received(String item) {
        consumed.computeIfAbsent(item, k -> new AtomicInteger()).incrementAndGet();
        consumedCount.incrementAndGet();
    }

    private int count(String item) {
        AtomicInteger n = consumed.get(item);
        return n == null ? 0 : n.get();
    }

    private static String item(int producer, int index) {
        return "p" + producer + "-" + index;
    }

    private static DistributedQueue<String> queue(CuratorFramework client, String path) {
        return DistributedQueue.builder(client, path, QueueSerializer.utf8())
                .capacity(1_000)
                .build();
    }
}
