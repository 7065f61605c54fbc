package io.coord.queue;

import static io.coord.queue.TestQueues.drain;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.testkit.Background;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The capacity bound, waiting for room, and putAll's all-or-nothing batches. */
@Timeout(60)
class CapacityAndBatchTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    private static DistributedQueue<String> queue(CuratorFramework client, String path, int capacity) {
        return DistributedQueue.builder(client, path, QueueSerializer.utf8())
                .capacity(capacity)
                .build();
    }

    private static <V> CompletableFuture<V> async(Blocking<V> call) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return call.run();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @FunctionalInterface
    private interface Blocking<V> {
        V run() throws InterruptedException;
    }

    @Test
    void offerAnswersFalseWhenFullAndPutWaitsUntilThereIsRoom() throws Exception {
        String path = ZooKeeperFixture.uniquePath("capacity");
        DistributedQueue<String> producer = queue(zk.newClient(), path, 2);
        DistributedQueue<String> consumer = queue(zk.newClient(), path, 2);
        assertTrue(producer.offer("a"));
        assertTrue(producer.offer("b"));
        assertFalse(producer.offer("c"));
        assertFalse(producer.offer("c", Duration.ofMillis(200)));

        CompletableFuture<Boolean> put = async(() -> {
            producer.put("c");
            return true;
        });
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(() -> !put.isDone());
        assertEquals("a", consumer.poll());

        assertTrue(put.get(10, TimeUnit.SECONDS));
        assertEquals(List.of("b", "c"), drain(consumer));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void producersOfManyClientsRacingAtTheBoundOvershootItByAtMostOneWriteEach() throws Exception {
        String path = ZooKeeperFixture.uniquePath("capacity-race");
        int capacity = 10;
        int clients = 4;
        int threadsPerClient = 2;
        List<CompletableFuture<Integer>> producers = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            DistributedQueue<String> queue = queue(zk.newClient(), path, capacity);
            for (int t = 0; t < threadsPerClient; t++) {
                String name = "p" + c + "." + t + "-";
                producers.add(Background.call(
                        () -> { // a thread each: they race
                            int accepted = 0;
                            for (int i = 0; i < 6; i++) {
                                if (queue.offer(name + i)) {
                                    accepted++;
                                }
                            }
                            return accepted;
                        }));
            }
        }
        int accepted = 0;
        for (CompletableFuture<Integer> producer : producers) {
            accepted += producer.get(30, TimeUnit.SECONDS);
        }

        DistributedQueue<String> reader = queue(zk.newClient(), path, capacity);
        int size = reader.size();
        assertEquals(accepted, size, "every accepted offer landed, and nothing else");
        assertTrue(size >= capacity, "the racing offers filled the queue: " + size);
        assertTrue(size <= capacity + clients * threadsPerClient, "overshoot past one write per thread: " + size);
        assertEquals(size, drain(reader).size());
    }

    @Test
    void offerWithATimeoutSucceedsOnceAConsumerMakesRoom() throws Exception {
        String path = ZooKeeperFixture.uniquePath("capacity-timeout");
        DistributedQueue<String> producer = queue(zk.newClient(), path, 1);
        DistributedQueue<String> consumer = queue(zk.newClient(), path, 1);
        producer.offer("a");

        CompletableFuture<Boolean> offered = async(() -> producer.offer("b", Duration.ofSeconds(20)));
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(() -> !offered.isDone());
        assertEquals("a", consumer.take());

        assertTrue(offered.get(10, TimeUnit.SECONDS));
        assertEquals(List.of("b"), drain(consumer));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void putAllWritesTheWholeBatchInOrderAndWaitsForRoomForAllOfIt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("batch");
        DistributedQueue<String> producer = queue(zk.newClient(), path, 3);
        DistributedQueue<String> consumer = queue(zk.newClient(), path, 3);
        producer.putAll(List.of("a", "b", "c"));

        CompletableFuture<Boolean> batch = async(() -> {
            producer.putAll(List.of("d", "e"));
            return true;
        });
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(() -> !batch.isDone());
        assertEquals("a", consumer.poll());
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(() -> !batch.isDone());
        assertEquals(2, consumer.size(), "one free place is not enough for a batch of two");
        assertFalse(batch.isDone());
        assertEquals("b", consumer.poll());

        assertTrue(batch.get(10, TimeUnit.SECONDS));
        assertEquals(List.of("c", "d", "e"), drain(consumer));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void batchLargerThanTheCapacityIsRejectedBeforeAnyWrite() throws Exception {
        String path = ZooKeeperFixture.uniquePath("batch-capacity");
        DistributedQueue<String> queue = queue(zk.newClient(), path, 2);

        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> queue.putAll(List.of("a", "b", "c")));
        assertEquals("a batch of 3 items can never fit in a queue of capacity 2", e.getMessage());
        assertEquals(0, queue.size());
    }

    @Test
    void batchTooLargeForOneRequestIsRejectedBeforeAnyWrite() throws Exception {
        String path = ZooKeeperFixture.uniquePath("batch-bytes");
        DistributedQueue<String> queue = queue(zk.newClient(), path, 10);
        String big = "x".repeat(400_000);

        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> queue.putAll(List.of("small", big, big, big)));
        assertTrue(e.getMessage().startsWith("a batch of 4 items needs about "), e.getMessage());
        assertTrue(e.getMessage().contains("jute.maxbuffer=1048575"), e.getMessage());
        assertEquals(0, queue.size());
        queue.putAll(List.of("small", big, big));
        assertEquals(3, queue.size(), "a batch just under the limit goes through");
        assertEquals(List.of("small", big, big), drain(queue));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void batchWhoseSerializerFailsHalfwayWritesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("batch-serializer");
        QueueSerializer<String> picky = new QueueSerializer<>() {
            @Override
            public byte[] serialize(String item) {
                if (item.equals("bad")) {
                    throw new IllegalStateException("cannot serialize " + item);
                }
                return QueueSerializer.utf8().serialize(item);
            }

            @Override
            public String deserialize(byte[] bytes) {
                return QueueSerializer.utf8().deserialize(bytes);
            }
        };
        DistributedQueue<String> queue =
                DistributedQueue.builder(zk.newClient(), path, picky).build();

        IllegalStateException e =
                assertThrows(IllegalStateException.class, () -> queue.putAll(List.of("a", "b", "bad", "c")));
        assertEquals("cannot serialize bad", e.getMessage());
        assertEquals(0, queue.size());
        assertThrows(IllegalStateException.class, () -> queue.offer("bad"));
        assertEquals(0, queue.size());
    }

    @Test
    void batchWhoseWriteSlotWasDeletedByHandIsWrittenWholeAndOnceWithANewSlot() throws Exception {
        String path = ZooKeeperFixture.uniquePath("batch-rollback");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queue(client, path, 10);
        queue.putAll(List.of("a", "b"));
        // Pull the write slot from under the producer: the next transaction fails on it, at its first operation (the
        // slot's version), before any of its creates. The producer takes a new slot and writes the batch again.
        CuratorFramework other = zk.newClient();
        for (String slot : other.getChildren().forPath(path + "/slots")) {
            other.delete().forPath(path + "/slots/" + slot);
        }

        queue.putAll(List.of("c", "d", "e"));

        assertEquals(List.of("a", "b", "c", "d", "e"), drain(queue));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
