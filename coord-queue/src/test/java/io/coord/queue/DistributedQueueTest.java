package io.coord.queue;

import static io.coord.queue.TestQueues.queue;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.AbstractCollection;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** FIFO order, blocking and timeouts, peek and size, against one embedded server. */
@Timeout(60)
class DistributedQueueTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void itemsComeOutInTheOrderTheyWentIn() throws Exception {
        String path = ZooKeeperFixture.uniquePath("fifo");
        DistributedQueue<String> producer = queue(zk.newClient(), path);
        DistributedQueue<String> consumer = queue(zk.newClient(), path);
        List<String> offered = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            offered.add("item-" + i);
            assertTrue(producer.offer("item-" + i));
        }

        List<String> polled = new ArrayList<>();
        for (String item = consumer.poll(); item != null; item = consumer.poll()) {
            polled.add(item);
        }

        assertEquals(offered, polled);
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void blockedTakeWakesWhenAnItemIsOffered() throws Exception {
        String path = ZooKeeperFixture.uniquePath("take");
        DistributedQueue<String> consumer = queue(zk.newClient(), path);
        AtomicReference<Thread> taking = new AtomicReference<>();
        CompletableFuture<String> taken = CompletableFuture.supplyAsync(() -> {
            taking.set(Thread.currentThread());
            try {
                return consumer.take();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        // Parked on its watch before anything is offered: the offer must wake it.
        await().until(() -> taking.get() != null
                && taking.get().getState() == Thread.State.WAITING
                && !zk.ensemble().watchesUnder(path).isEmpty());

        queue(zk.newClient(), path).offer("hello");

        assertEquals("hello", taken.get(10, TimeUnit.SECONDS));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void pollWithATimeoutOnAnEmptyQueueAnswersNullAfterTheTimeout() throws Exception {
        String path = ZooKeeperFixture.uniquePath("poll-timeout");
        DistributedQueue<String> consumer = queue(zk.newClient(), path);

        long start = System.nanoTime();
        assertNull(consumer.poll(Duration.ofMillis(300)));
        long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        assertTrue(elapsedMillis >= 300, "returned after " + elapsedMillis + " ms");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void peekShowsTheHeadWithoutTakingIt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("peek");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        assertNull(queue.peek());
        queue.offer("first");
        queue.offer("second");

        assertEquals("first", queue.peek());
        assertEquals("first", queue.peek());
        assertEquals(2, queue.size());
        assertEquals("first", queue.poll());
        assertEquals("second", queue.peek());
        assertEquals("second", queue.poll());
        assertEquals(0, queue.size());
        assertNull(queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void bytesSerializerRoundTripsArbitraryBytesEvenOnesThatLookLikeTheHeader() throws Exception {
        String path = ZooKeeperFixture.uniquePath("bytes");
        DistributedQueue<byte[]> queue = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.bytes())
                .build();
        byte[] headerLike = new byte[40];
        headerLike[0] = 'Q';
        headerLike[1] = 1;
        headerLike[39] = (byte) 0xff;
        queue.offer(headerLike);
        queue.offer(new byte[0]);

        assertArrayEquals(headerLike, queue.poll());
        assertArrayEquals(new byte[0], queue.poll());
        assertNull(queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void elementRemoveAndIsEmptyFollowTheQueueConventions() throws Exception {
        String path = ZooKeeperFixture.uniquePath("conventions");
        DistributedQueue<String> queue = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        assertTrue(queue.isEmpty());
        NoSuchElementException none = assertThrows(NoSuchElementException.class, queue::element);
        assertEquals("no item in " + path + " that nobody holds", none.getMessage());
        assertThrows(NoSuchElementException.class, queue::remove);

        queue.offer("a");
        queue.offer("b");
        assertFalse(queue.isEmpty());
        assertEquals("a", queue.element());
        assertEquals("a", queue.remove());
        assertEquals("b", queue.element());
        assertEquals("b", queue.remove());
        assertTrue(queue.isEmpty());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aDrainGivesEachRoundToTheSinkBeforeTakingMoreAndNeverOverfillsABoundedOne() throws Exception {
        String path = ZooKeeperFixture.uniquePath("drain-sink");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        List<String> items =
                IntStream.range(0, 250).mapToObj(i -> String.format("%03d", i)).toList();
        queue.putAll(items);

        ArrayBlockingQueue<String> bounded = new ArrayBlockingQueue<>(10);
        bounded.add("already there");
        assertEquals(9, queue.drainTo(bounded, 500), "only what fits");
        assertEquals(0, queue.drainTo(bounded, 500), "full: nothing is taken");
        assertEquals(items.subList(0, 9), bounded.stream().skip(1).toList());

        // A sink that refuses its fifth item ends the call: what the round took after it is lost, and no round
        // follows, so at most one round's worth is gone.
        List<String> accepted = new ArrayList<>();
        Collection<String> refusing = new AbstractCollection<>() {
            @Override
            public boolean add(String item) {
                if (accepted.size() == 4) {
                    throw new IllegalStateException("sink full");
                }
                return accepted.add(item);
            }

            @Override
            public Iterator<String> iterator() {
                return accepted.iterator();
            }

            @Override
            public int size() {
                return accepted.size();
            }
        };
        assertEquals(
                "sink full",
                assertThrows(IllegalStateException.class, () -> queue.drainTo(refusing, 500))
                        .getMessage());
        assertEquals(items.subList(9, 13), accepted);
        int left = queue.size();
        assertTrue(left >= 241 - QueueConsumer.MAX_BATCH && left < 241 - 4, "left: " + left);
        List<String> rest = new ArrayList<>();
        assertEquals(left, queue.drainTo(rest, 500));
        assertEquals(items.subList(250 - left, 250), rest, "the rest, in order");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void drainToMovesTheItemsInOrderAndWaitsOnlyForTheFirst() throws Exception {
        String path = ZooKeeperFixture.uniquePath("drain-to");
        DistributedQueue<String> queue = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        List<String> sink = new ArrayList<>();
        assertEquals(0, queue.drainTo(sink, 10));
        assertEquals(0, queue.drainTo(sink, 10, Duration.ofMillis(100)));

        queue.putAll(List.of("a", "b", "c", "d", "e"));
        assertEquals(3, queue.drainTo(sink, 3));
        assertEquals(2, queue.drainTo(sink, 10, Duration.ofSeconds(5)));
        assertEquals(List.of("a", "b", "c", "d", "e"), sink);

        CompletableFuture<Integer> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return queue.drainTo(sink, 10, Duration.ofSeconds(30));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        queue.offer("f");
        assertEquals(1, waiting.get(30, TimeUnit.SECONDS));
        assertEquals("f", sink.get(5));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aTimedDrainWhoseKnownItemsRanOutMovesWhatTheQueueHoldsSince() throws Exception {
        String path = ZooKeeperFixture.uniquePath("drain-to-stale");
        DistributedQueue<String> producer = queue(zk.newClient(), path);
        DistributedQueue<String> consumer = queue(zk.newClient(), path);
        DistributedQueue<String> other = queue(zk.newClient(), path);
        producer.putAll(IntStream.range(0, 20).mapToObj(i -> "a" + i).toList());
        assertEquals("a0", consumer.poll()); // the consumer now knows the names of a1 to a19
        assertEquals(15, other.drainTo(new ArrayList<>(), 15)); // and another takes a1 to a15
        producer.putAll(IntStream.range(0, 100).mapToObj(i -> "b" + i).toList());

        List<String> sink = new ArrayList<>();
        assertEquals(50, consumer.drainTo(sink, 50, Duration.ofSeconds(10)), () -> "moved " + sink);
        List<String> expected = new ArrayList<>(List.of("a16", "a17", "a18", "a19"));
        IntStream.range(0, 46).mapToObj(i -> "b" + i).forEach(expected::add);
        assertEquals(expected, sink, "what the queue holds, in order, not only the names it knew");
        assertEquals(54, consumer.drainTo(new ArrayList<>(), 100));
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
