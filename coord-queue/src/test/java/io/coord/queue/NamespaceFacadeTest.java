package io.coord.queue;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A queue on {@code client.usingNamespace(...)} works in full, and keeps its znodes under the namespace. */
@Timeout(60)
class NamespaceFacadeTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final AtomicInteger NAMESPACES = new AtomicInteger();

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    private static String newNamespace() {
        return "facade-" + NAMESPACES.incrementAndGet();
    }

    private static int children(CuratorFramework client, String parent) throws Exception {
        return client.getChildren().forPath(parent).size();
    }

    @Test
    void everyQueueOperationWorksOnANamespaceFacade() throws Exception {
        String namespace = newNamespace();
        String path = ZooKeeperFixture.uniquePath("facade");
        String underNamespace = "/" + namespace + path;
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = DistributedQueue.builder(
                        client.usingNamespace(namespace), path, QueueSerializer.utf8())
                .build();

        assertTrue(queue.offer("a"));
        assertTrue(queue.offer("b", WAIT));
        queue.put("c");
        queue.putAll(List.of("d", "e", "f"));
        assertEquals(6, queue.size());
        assertEquals(6, children(client, underNamespace + "/items"), "the items are under the namespace");
        assertNull(client.checkExists().forPath(path), "and nothing is outside it");

        assertEquals("a", queue.peek());
        assertEquals("a", queue.poll());
        assertEquals("b", queue.poll(WAIT));
        assertEquals("c", queue.take());
        Claim<String> closed = queue.claim(WAIT).orElseThrow();
        assertEquals("d", closed.item());
        assertEquals(1, children(client, underNamespace + "/claims"), "the claim is under the namespace");
        closed.close();
        Claim<String> acked = queue.claim(WAIT).orElseThrow();
        assertEquals("d", acked.item(), "a closed claim's item is back at the head");
        assertTrue(acked.ack());
        assertEquals("e", queue.poll());
        assertEquals(1, queue.size());

        CompletableFuture<String> taken = CompletableFuture.supplyAsync(() -> {
            try {
                queue.poll();
                return queue.take();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().until(() -> zk.watchCount() > 0);
        assertTrue(queue.offer("g"));
        assertEquals("g", taken.get(10, TimeUnit.SECONDS), "a blocked take is woken through the facade's watch");
        QueueLeaks.assertDrainedAndNoLeaks(zk, underNamespace);
    }

    @Test
    void closingTheClientWakesABlockedTakeOnANamespaceFacade() throws Exception {
        String namespace = newNamespace();
        String path = ZooKeeperFixture.uniquePath("facade-closed");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = DistributedQueue.builder(
                        client.usingNamespace(namespace), path, QueueSerializer.utf8())
                .build();
        CompletableFuture<String> taken = CompletableFuture.supplyAsync(() -> {
            try {
                return queue.take();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().until(() -> zk.watchCount() > 0);

        client.close();

        ExecutionException e = assertThrows(ExecutionException.class, () -> taken.get(10, TimeUnit.SECONDS));
        assertInstanceOf(CoordinationException.class, e.getCause());
    }

    @Test
    void closingTheClientDeletesTheWriteSlotsOfAQueueOnANamespaceFacade() throws Exception {
        String namespace = newNamespace();
        String path = ZooKeeperFixture.uniquePath("facade-slots");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = DistributedQueue.builder(
                        client.usingNamespace(namespace), path, QueueSerializer.utf8())
                .build();
        assertTrue(queue.offer("a"));
        CuratorFramework reader = zk.newClient();
        String slots = "/" + namespace + path + "/slots";
        assertEquals(1, reader.getChildren().forPath(slots).size());

        client.close();
        await().until(() -> reader.getChildren().forPath(slots).isEmpty());
        assertEquals(
                1,
                reader.getChildren().forPath("/" + namespace + path + "/items").size(),
                "the item stays");
    }

    @Test
    void producerOnANamespaceFacadeWaitsForRoom() throws Exception {
        String namespace = newNamespace();
        String path = ZooKeeperFixture.uniquePath("facade-room");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = DistributedQueue.builder(
                        client.usingNamespace(namespace), path, QueueSerializer.utf8())
                .capacity(1)
                .build();
        assertTrue(queue.offer("first"));
        assertFalse(queue.offer("second"), "the queue is full");
        CompletableFuture<Boolean> offered = CompletableFuture.supplyAsync(() -> {
            try {
                return queue.offer("second", Duration.ofSeconds(30));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().until(() -> zk.watchCount() > 0);

        assertEquals("first", queue.poll());

        assertTrue(offered.get(10, TimeUnit.SECONDS));
        assertEquals("second", queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, "/" + namespace + path);
    }
}
