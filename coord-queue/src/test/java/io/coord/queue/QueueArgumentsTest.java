package io.coord.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.testkit.Acls;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Every invalid argument is rejected up front, with a message that carries the value. */
@Timeout(60)
class QueueArgumentsTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    private static String message(Class<? extends Throwable> type, org.junit.jupiter.api.function.Executable call) {
        return assertThrows(type, call).getMessage();
    }

    @Test
    void builderRejectsAMissingClientPathOrSerializer() {
        CuratorFramework client = zk.unstartedClient();
        QueueSerializer<String> utf8 = QueueSerializer.utf8();

        assertEquals(
                "client must not be null",
                message(NullPointerException.class, () -> DistributedQueue.builder(null, "/q", utf8)));
        assertEquals(
                "path must not be null",
                message(IllegalArgumentException.class, () -> DistributedQueue.builder(client, null, utf8)));
        assertTrue(message(IllegalArgumentException.class, () -> DistributedQueue.builder(client, "jobs", utf8))
                .startsWith("invalid ZooKeeper path \"jobs\""));
        assertTrue(message(IllegalArgumentException.class, () -> DistributedQueue.builder(client, "/a//b", utf8))
                .startsWith("invalid ZooKeeper path \"/a//b\""));
        assertTrue(message(IllegalArgumentException.class, () -> DistributedQueue.builder(client, "/", utf8))
                .startsWith("path must not be the root"));
        assertEquals(
                "serializer must not be null",
                message(NullPointerException.class, () -> DistributedQueue.builder(client, "/q", null)));
    }

    @Test
    void capacityMustBePositiveAndListableInOneReply() {
        DistributedQueue.Builder<String> builder =
                DistributedQueue.builder(zk.unstartedClient(), "/q", QueueSerializer.utf8());
        int max = ItemCodec.maxCapacity();

        assertEquals("capacity must be >= 1: 0", message(IllegalArgumentException.class, () -> builder.capacity(0)));
        assertEquals("capacity must be >= 1: -5", message(IllegalArgumentException.class, () -> builder.capacity(-5)));
        assertEquals(
                "capacity must be <= " + max
                        + ", the most item names one getChildren reply can carry under jute.maxbuffer=1048575: "
                        + (max + 1),
                message(IllegalArgumentException.class, () -> builder.capacity(max + 1)));
        assertTrue(max > 60_000 && max < 62_000, "max " + max);
        builder.capacity(max).capacity(1).build();
    }

    @Test
    void buildingDoesNoIoAndUsingAClosedClientFailsWithTheCause() {
        CuratorFramework client = zk.unstartedClient();
        DistributedQueue<String> queue = DistributedQueue.builder(client, "/never/started", QueueSerializer.utf8())
                .build();

        client.start();
        client.close();

        CoordinationException e = assertThrows(CoordinationException.class, () -> queue.offer("x"));
        assertTrue(e.getMessage().contains("/never/started/items"), e.getMessage());
        assertThrows(CoordinationException.class, queue::poll);
        CoordinationException nothingToWrite = assertThrows(CoordinationException.class, () -> queue.putAll(List.of()));
        assertTrue(nothingToWrite.getMessage().contains("/never/started/items"), nothingToWrite.getMessage());
    }

    @Test
    void nullItemsAndBadTimeoutsAreRejected() throws Exception {
        String path = ZooKeeperFixture.uniquePath("args");
        DistributedQueue<String> queue = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        Duration negative = Duration.ofMillis(-1);

        assertEquals("item must not be null", message(NullPointerException.class, () -> queue.offer(null)));
        assertEquals("item must not be null", message(NullPointerException.class, () -> queue.put(null)));
        assertEquals(
                "item must not be null",
                message(NullPointerException.class, () -> queue.offer(null, Duration.ofSeconds(1))));
        assertEquals("items must not be null", message(NullPointerException.class, () -> queue.putAll(null)));
        assertEquals(
                "items must not contain null: null at index 1",
                message(NullPointerException.class, () -> queue.putAll(Arrays.asList("a", null))));
        assertEquals("timeout must not be null", message(NullPointerException.class, () -> queue.poll(null)));
        assertEquals("timeout must not be null", message(NullPointerException.class, () -> queue.claim(null)));
        assertEquals("timeout must not be null", message(NullPointerException.class, () -> queue.offer("a", null)));
        assertEquals(
                "timeout must not be negative: PT-0.001S",
                message(IllegalArgumentException.class, () -> queue.poll(negative)));
        assertEquals(
                "timeout must not be negative: PT-0.001S",
                message(IllegalArgumentException.class, () -> queue.claim(negative)));
        assertEquals(
                "timeout must not be negative: PT-0.001S",
                message(IllegalArgumentException.class, () -> queue.offer("a", negative)));
        assertEquals(0, queue.size());
    }

    @Test
    void drainToRejectsABadSinkOrCountBeforeTakingAnything() throws Exception {
        String path = ZooKeeperFixture.uniquePath("args-drain");
        DistributedQueue<String> queue = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        queue.offer("stays");
        List<String> sink = new ArrayList<>();
        Duration second = Duration.ofSeconds(1);

        assertEquals("sink must not be null", message(NullPointerException.class, () -> queue.drainTo(null, 1)));
        assertEquals(
                "sink must not be null", message(NullPointerException.class, () -> queue.drainTo(null, 1, second)));
        assertEquals("maxItems must be > 0: 0", message(IllegalArgumentException.class, () -> queue.drainTo(sink, 0)));
        assertEquals(
                "maxItems must be > 0: -3",
                message(IllegalArgumentException.class, () -> queue.drainTo(sink, -3, second)));
        assertEquals(
                "timeout must not be null", message(NullPointerException.class, () -> queue.drainTo(sink, 1, null)));
        assertEquals(
                "timeout must not be negative: PT-0.001S",
                message(IllegalArgumentException.class, () -> queue.drainTo(sink, 1, Duration.ofMillis(-1))));

        assertEquals(List.of(), sink);
        assertEquals(1, queue.size());
        assertEquals(1, queue.drainTo(sink, 1));
        assertEquals(List.of("stays"), sink);
    }

    @Test
    void oversizeItemIsRejectedBeforeAnyWriteAndTheLargestAllowedOneGoesThrough() throws Exception {
        String path = ZooKeeperFixture.uniquePath("oversize");
        DistributedQueue<byte[]> queue = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.bytes())
                .build();
        int max = Math.toIntExact(ItemCodec.maxItemBytes(new Layout(path, "")));

        String error = message(IllegalArgumentException.class, () -> queue.offer(new byte[max + 1]));
        assertEquals(
                "item is " + (max + 1) + " bytes serialized, over the " + max
                        + " bytes one ZooKeeper request can carry here (jute.maxbuffer=1048575)",
                error);
        assertThrows(IllegalArgumentException.class, () -> queue.putAll(List.of(new byte[max + 1])));
        assertEquals(0, queue.size());

        byte[] largest = new byte[max];
        largest[max - 1] = 7;
        queue.offer(largest);
        byte[] back = queue.poll();
        assertEquals(max, back.length);
        assertEquals(7, back[max - 1]);
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aBatchThatFitsOnlyWithoutItsLongAclIsRejectedBeforeAnyWrite() throws Exception {
        String path = ZooKeeperFixture.uniquePath("acl-batch");
        // Every create carries the open ACL and four long digest ids: about 650 bytes more than the open ACL alone.
        List<ACL> acl = new ArrayList<>(List.of(new ACL(ZooDefs.Perms.ALL, new Id("world", "anyone"))));
        for (int i = 0; i < 4; i++) {
            acl.add(new ACL(ZooDefs.Perms.READ, new Id("digest", "reader-" + i + "-" + "x".repeat(140) + ":hash")));
        }
        CuratorFramework client = zk.newCustomClient(b -> b.aclProvider(Acls.everywhere(acl)));
        DistributedQueue<byte[]> queue =
                DistributedQueue.builder(client, path, QueueSerializer.bytes()).build();
        // As many 100-byte items as fit in one request when each create carries only the open ACL.
        Layout open = new Layout(path, "");
        int items = Math.toIntExact(ItemCodec.requestLimit(open) / ItemCodec.requestBytes(open, 100));
        List<byte[]> batch = new ArrayList<>();
        for (int i = 0; i < items; i++) {
            batch.add(new byte[100]);
        }

        String error = message(IllegalArgumentException.class, () -> queue.putAll(batch));
        assertTrue(error.startsWith("a batch of " + items + " items needs about "), error);
        assertNull(client.checkExists().forPath(path), "nothing written");
        zk.assertNoLeaks(path);
    }

    @Test
    void aClientNeverStartedIsRefusedBeforeAnyCallWaitsOrWrites() throws Exception {
        String path = ZooKeeperFixture.uniquePath("never-started");
        DistributedQueue<String> queue = DistributedQueue.builder(zk.unstartedClient(), path, QueueSerializer.utf8())
                .build();
        String refusal = "the client must be started before using the queue at " + path;

        assertEquals(refusal, message(IllegalStateException.class, () -> queue.offer("x")));
        assertEquals(refusal, message(IllegalStateException.class, () -> queue.offer("x", Duration.ofSeconds(1))));
        assertEquals(refusal, message(IllegalStateException.class, () -> queue.put("x")));
        assertEquals(refusal, message(IllegalStateException.class, () -> queue.putAll(List.of("x"))));
        assertEquals(refusal, message(IllegalStateException.class, () -> queue.putAll(List.of())));
        assertEquals(refusal, message(IllegalStateException.class, queue::poll));
        assertEquals(refusal, message(IllegalStateException.class, () -> queue.claim(Duration.ZERO)));
        assertEquals(refusal, message(IllegalStateException.class, queue::peek));
        ArrayBlockingQueue<String> full = new ArrayBlockingQueue<>(1, false, List.of("x"));
        assertEquals(refusal, message(IllegalStateException.class, () -> queue.drainTo(full, 5))); // even with no room
        assertEquals(refusal, message(IllegalStateException.class, queue::element));
        assertEquals(refusal, message(IllegalStateException.class, queue::size));
        assertEquals(refusal, message(IllegalStateException.class, queue::isEmpty));
        zk.assertNoLeaks(path);
    }

    @Test
    void serializerThatReturnsNullIsReported() throws Exception {
        QueueSerializer<String> broken = new QueueSerializer<>() {
            @Override
            public byte[] serialize(String item) {
                return null;
            }

            @Override
            public String deserialize(byte[] bytes) {
                return "";
            }

            @Override
            public String toString() {
                return "broken";
            }
        };
        DistributedQueue<String> queue = DistributedQueue.builder(
                        zk.newClient(), ZooKeeperFixture.uniquePath("null-bytes"), broken)
                .build();

        assertEquals(
                "serializer broken returned null for an item",
                message(NullPointerException.class, () -> queue.offer("x")));
    }
}
