package io.coord.semaphore;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.Participant;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/**
 * A semaphore's path is persistent, so ZooKeeper's count of the creates under it, which numbers the leases' nodes,
 * only grows. Past 2,147,483,647 it gives every node that same number: a lease there could not be ordered, so it is
 * refused, and the permits already held stay held, never granted beyond the limit.
 */
@InBothEngineModes
@Timeout(60)
class CounterEndTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void aLeaseNumberedAtTheCountersEndIsRefusedAndTheHoldersKeepTheirPermits() throws Exception {
        String path = ZooKeeperFixture.uniquePath("semaphore-end");
        CuratorFramework admin = zk.newClient();
        DistributedSemaphore first = new DistributedSemaphore(zk.newClient(), path, 2);
        DistributedSemaphore late = new DistributedSemaphore(zk.newClient(), path, 2);
        first.acquireAsync(1).get(10, TimeUnit.SECONDS).close(); // makes the path
        // The close's delete goes out in the background: the server's count is set only once it has been applied,
        // since a request in flight carries the count it found.
        await().until(() -> admin.getChildren().forPath(path).isEmpty());
        zk.setChildCounter(path, Integer.MAX_VALUE - 1);

        Lease held = first.acquireAsync(1).get(10, TimeUnit.SECONDS);
        ExecutionException refused = assertThrows(
                ExecutionException.class, () -> late.acquireAsync(1).get(10, TimeUnit.SECONDS));
        CoordinationException error = assertInstanceOf(CoordinationException.class, refused.getCause());
        assertTrue(error.getMessage().contains("the sequence counter of " + path + " has run out"), error.getMessage());
        await().until(() -> first.participants().size() == 1); // the refused node is deleted
        assertEquals(
                List.of((long) Integer.MAX_VALUE - 1),
                first.participants().stream().map(Participant::sequence).toList());
        assertTrue(held.isValid());
        held.close();
        await().until(() -> first.participants().isEmpty());
        assertTrue(admin.checkExists().forPath(path) != null, "the path and its limit record stay");
    }
}
