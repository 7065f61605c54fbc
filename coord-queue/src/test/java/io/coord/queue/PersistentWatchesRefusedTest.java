package io.coord.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A server whose watch manager holds no persistent watches (ZooKeeper's optional {@code WatchManagerOptimized})
 * answers their add MARSHALLINGERROR. A call that waits for an item needs one, and fails saying so; calls that never
 * wait still work.
 */
@Timeout(60)
class PersistentWatchesRefusedTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture().withoutPersistentWatches();

    @Test
    void aCallThatWaitsForAnItemFailsSayingTheServerCannotAddAPersistentWatch() throws Exception {
        String path = ZooKeeperFixture.uniquePath("watches-refused");
        DistributedQueue<String> queue = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();

        CoordinationException refused =
                assertThrows(CoordinationException.class, () -> queue.poll(Duration.ofSeconds(5)));

        assertEquals(
                "the queue at " + path + "/items needs persistent watches, which this server cannot add (it answered"
                        + " MARSHALLINGERROR): a server whose zookeeper.watchManagerName is WatchManagerOptimized has"
                        + " none",
                refused.getMessage());
        assertInstanceOf(KeeperException.MarshallingErrorException.class, refused.getCause());
        assertTrue(queue.offer("x"));
        assertEquals("x", queue.poll());
        assertNull(queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
