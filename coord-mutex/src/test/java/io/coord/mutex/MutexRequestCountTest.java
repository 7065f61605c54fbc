package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Requests per operation, counted by a Curator tracer on the client that makes them: counts, never timings. */
@Timeout(60)
class MutexRequestCountTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void uncontendedAcquireAndReleaseMakeThreeRequests() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-uncontended");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        client.create().creatingParentsIfNeeded().forPath(path); // so that parent creation is not counted
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        counter.reset();

        mutex.acquire();
        mutex.release();

        // create + the getChildren pipelined behind it + delete
        await().until(() -> counter.count(path) == 3);
        assertEquals(3, counter.count(path), () -> counter.names(path).toString());
        zk.assertNoLeaks(path);
        assertEquals(3, counter.count(path), () -> counter.names(path).toString());
    }

    @Test
    void contendedAcquisitionMakesFourRequestsAndNoneAfterTheHoldersDelete() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-contended");
        RequestCounter counter = new RequestCounter();
        CuratorFramework holderClient = zk.newClient();
        holderClient.create().creatingParentsIfNeeded().forPath(path);
        ReentrantMutex holder = new ReentrantMutex(holderClient, path);
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(counter), path);
        holder.acquire();

        CompletableFuture<Lease> pending = waiter.acquireAsync();
        // create, getChildren, getData with a watch on the holder's node
        await().until(() -> counter.count(path) == 3);
        int beforeHandOff = counter.count(path);
        holder.release();
        Lease lease = pending.get(10, TimeUnit.SECONDS);
        assertEquals(
                beforeHandOff, counter.count(path), () -> "requests after the holder's delete: " + counter.names(path));

        lease.close();
        await().until(() -> counter.count(path) == 4);
        zk.assertNoLeaks(path);
        assertTrue(counter.count(path) <= 4, () -> counter.names(path).toString());
    }

    @Test
    void handOffDownAQueueInOneClientNeedsNoReads() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-queue");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        client.create().creatingParentsIfNeeded().forPath(path);
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        int waiters = 50;
        Lease first = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<?>[] queued = new CompletableFuture<?>[waiters];
        for (int i = 0; i < waiters; i++) {
            queued[i] = mutex.acquireAsync().thenAccept(Lease::close);
        }
        // Every waiter has set its one watch, on the node just before its own.
        await().until(() -> counter.count(path, "GetData") == waiters);
        counter.reset();

        first.close();
        CompletableFuture.allOf(queued).get(30, TimeUnit.SECONDS);

        // Each hand-off is the holder's delete and nothing else: the waiters learn from each other's watches.
        await().until(() -> counter.count(path) >= waiters + 1);
        zk.assertNoLeaks(path);
        assertEquals(waiters + 1, counter.count(path), () -> counter.names(path).toString());
    }
}
