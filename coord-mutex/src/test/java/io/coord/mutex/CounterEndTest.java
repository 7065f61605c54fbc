package io.coord.mutex;

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
 * ZooKeeper numbers a lock's nodes with its count of the creates under the lock's path, in 32 bits. Past
 * 2,147,483,647 it gives every node that same number, and the queue can no longer be ordered: newcomers are refused,
 * and no holder is ever joined by a second one. Deleting the path once it is unused starts the count again.
 */
@InBothEngineModes
@Timeout(60)
class CounterEndTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void newcomersAreRefusedOnceTheCounterHasRunOutAndTheHolderKeepsTheLockAlone() throws Exception {
        String path = ZooKeeperFixture.uniquePath("counter-end");
        CuratorFramework admin = zk.newClient();
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        ReentrantMutex late = new ReentrantMutex(zk.newClient(), path, "late");
        holder.acquireAsync().get(10, TimeUnit.SECONDS).close(); // makes the path
        // The close's delete goes out in the background: the server's count is set only once it has been applied,
        // since a request in flight carries the count it found.
        await().until(() -> admin.getChildren().forPath(path).isEmpty());
        zk.setChildCounter(path, Integer.MAX_VALUE - 1);

        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        for (int i = 0; i < 2; i++) { // numbered 2147483647 each time
            ExecutionException refused = assertThrows(
                    ExecutionException.class, () -> late.acquireAsync().get(10, TimeUnit.SECONDS));
            CoordinationException error = assertInstanceOf(CoordinationException.class, refused.getCause());
            assertTrue(
                    error.getMessage().contains("the sequence counter of " + path + " has run out"),
                    error.getMessage());
            await().until(() -> admin.getChildren().forPath(path).size() == 1); // the refused node is deleted
        }
        assertEquals(
                List.of("holder"),
                holder.participants().stream().map(Participant::id).toList());
        assertTrue(held.isValid());

        held.close();
        await().until(() -> admin.getChildren().forPath(path).isEmpty());
        admin.delete().forPath(path); // as ZooKeeper's reaping of an empty container would
        Lease again = late.acquireAsync().get(10, TimeUnit.SECONDS);
        assertEquals(0L, late.participants().get(0).sequence(), "the count starts again");
        again.close();
        zk.assertNoLeaks(path);
    }
}
