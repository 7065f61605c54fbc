package io.coord.queue;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.testkit.ZooKeeperFixture;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Requests per operation, counted by a Curator tracer on the consumer's own client: counts, never timings. */
@Timeout(60)
class QueueRequestCountTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    private static CuratorFramework tracedClient(AllRequests counter) throws InterruptedException {
        CuratorFramework client = zk.unstartedClient();
        client.getZookeeperClient().setTracerDriver(counter);
        client.start();
        assertTrue(client.blockUntilConnected(10, TimeUnit.SECONDS));
        return client;
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
    void drainingAThousandItemsCostsFewerThanFourRequestsEach() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-drain");
        int items = 1_000;
        fill(path, items);
        AllRequests counter = new AllRequests();
        DistributedQueue<String> consumer = DistributedQueue.builder(
                        tracedClient(counter), path, QueueSerializer.utf8())
                .build();

        for (int i = 0; i < items; i++) {
            assertEquals("item-" + i, consumer.poll());
        }
        assertNull(consumer.poll());

        // Per item: the claim transaction, the getData, the removal transaction. Once: the session marker, and two
        // children reads, the first one and the one that finds the queue empty.
        int requests = counter.count();
        assertTrue(
                requests < 4 * items,
                () -> requests + " requests: " + counter.names().subList(0, 20));
        assertEquals(2, counter.count("GetChildren"), () -> counter.names().toString());
        assertEquals(
                3 * items + 3,
                requests,
                () -> counter.names().stream()
                        .filter(n -> !n.contains("Transaction") && !n.contains("GetData"))
                        .toList()
                        .toString());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
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

            // Each item wakes every waiter twice (its create, then its removal), and each wake costs one read.
            int reads = counter.count("GetChildren") - readsBefore;
            assertTrue(reads <= 2 * waiters, () -> reads + " children reads for " + waiters + " items");
        } finally {
            pool.shutdownNow();
        }
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
