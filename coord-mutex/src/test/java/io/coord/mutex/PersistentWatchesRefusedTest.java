package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.coord.core.Lease;
import io.coord.core.internal.ClientContext;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A server whose watch manager holds no persistent watches (ZooKeeper's optional {@code WatchManagerOptimized})
 * answers their add MARSHALLINGERROR: the mutex waits with predecessor watches instead, and the client asks for no
 * more views.
 */
@Timeout(60)
class PersistentWatchesRefusedTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture().withoutPersistentWatches();

    @Test
    void aWaiterIsGrantedThroughAPredecessorWatchAndTheClientAddsNoMoreViews() throws Exception {
        String first = ZooKeeperFixture.uniquePath("views-refused");
        String second = ZooKeeperFixture.uniquePath("views-refused");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        // Long enough that the path stays counted between the first acquisition and the waiter's, however slow.
        ZooKeeperFixture.lingerViews(client, Duration.ofSeconds(30));
        ReentrantMutex mine = new ReentrantMutex(client, first);
        mine.acquire(); // the first acquisition on a path counts it with a read: a view serves from the next one on
        mine.release();
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), first);
        holder.acquire();

        CompletableFuture<Lease> waiting = new ReentrantMutex(client, first).acquireAsync();
        await().until(() -> !ClientContext.of(client).usesViews()); // the add of its view was refused
        holder.release();
        waiting.get(10, TimeUnit.SECONDS).close();

        ReentrantMutex onSecond = new ReentrantMutex(client, second);
        for (int i = 0; i < 2; i++) {
            onSecond.acquire();
            onSecond.release();
        }
        assertEquals(
                1, counter.count(first, "AddWatch"), () -> counter.names(first).toString());
        assertEquals(
                0,
                counter.count(second, "AddWatch"),
                () -> counter.names(second).toString());
        assertFalse(ClientContext.of(client).usesViews());
        zk.assertNoLeaks(first);
        zk.assertNoLeaks(second);
    }
}
