package io.coord.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Consumers on separate clients race for every item; each item must reach exactly one of them. */
@Timeout(60)
class CompetingConsumersTest {
    private static final int ITEMS = 5_000;
    private static final int CONSUMERS = 4;

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void fourConsumersOnSeparateClientsReceiveEachItemExactlyOnce() throws Exception {
        String path = ZooKeeperFixture.uniquePath("competing");
        DistributedQueue<String> producer = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        for (int from = 0; from < ITEMS; from += 500) {
            producer.putAll(
                    IntStream.range(from, from + 500).mapToObj(i -> "item-" + i).toList());
        }
        List<DistributedQueue<String>> consumers = new ArrayList<>();
        List<AllRequests> counters = new ArrayList<>();
        for (int i = 0; i < CONSUMERS; i++) {
            AllRequests counter = new AllRequests();
            counters.add(counter);
            org.apache.curator.framework.CuratorFramework c = zk.unstartedClient();
            c.getZookeeperClient().setTracerDriver(counter);
            c.start();
            c.blockUntilConnected();
            consumers.add(
                    DistributedQueue.builder(c, path, QueueSerializer.utf8()).build());
        }
        ConcurrentLinkedQueue<String> received = new ConcurrentLinkedQueue<>();
        AtomicInteger remaining = new AtomicInteger(ITEMS);
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(CONSUMERS);
        try {
            List<Future<Integer>> counts = new ArrayList<>();
            for (DistributedQueue<String> consumer : consumers) {
                counts.add(pool.submit(() -> {
                    start.await();
                    int mine = 0;
                    while (remaining.get() > 0) {
                        String item = consumer.poll(Duration.ofMillis(200));
                        if (item != null) {
                            received.add(item);
                            remaining.decrementAndGet();
                            mine++;
                        }
                    }
                    return mine;
                }));
            }
            start.countDown();
            int total = 0;
            for (Future<Integer> count : counts) {
                int mine = count.get(50, TimeUnit.SECONDS);
                assertTrue(mine > 0, "a consumer got nothing");
                total += mine;
            }
            assertEquals(ITEMS, total);
        } finally {
            pool.shutdownNow();
        }

        System.err.println("DEBUG requests "
                + counters.stream().mapToInt(AllRequests::count).sum());
        Map<String, Integer> times = new HashMap<>();
        received.forEach(item -> times.merge(item, 1, Integer::sum));
        assertEquals(ITEMS, times.size(), "items lost");
        assertTrue(times.values().stream().allMatch(n -> n == 1), "items delivered twice");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
