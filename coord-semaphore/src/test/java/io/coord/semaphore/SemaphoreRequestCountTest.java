package io.coord.semaphore;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.core.Lease;
import io.coord.testkit.EngineMode;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Requests per operation, counted by a Curator tracer on the client that makes them: counts, never timings. */
class SemaphoreRequestCountTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @AfterEach
    void backToViews() {
        zk.mode(EngineMode.VIEW);
    }

    @Test
    void onAPrimedViewAPermitCostsTwoRequestsAndAFreedPermitNone() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-view");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        ZooKeeperFixture.lingerViews(client, Duration.ofMinutes(1));
        DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 2);
        // The first use checks the maxLeases record once per instance and counts the path; the second primes the view.
        semaphore.acquire().close();
        semaphore.acquire().close();
        await().until(() -> counter.count(path, "Delete") == 2);
        counter.reset();

        semaphore.acquire().close();
        await().until(() -> counter.count(path) >= 2);
        assertEquals(2, counter.count(path), () -> counter.names(path).toString());

        // Two holders, a third waits; a released permit wakes it with no request of its own.
        Lease a = semaphore.acquire();
        Lease b = semaphore.acquire();
        CompletableFuture<Lease> third = semaphore.acquireAsync(1);
        await().until(() -> counter.count(path) >= 5);
        counter.reset();
        a.close();
        Lease c = third.get(10, TimeUnit.SECONDS);
        // a's delete: its reply, which the tracer counts, may come a moment after the event that woke the waiter
        await().until(() -> counter.count(path) >= 1);
        assertEquals(1, counter.count(path), () -> counter.names(path).toString());
        b.close();
        c.close();
        await().until(() -> counter.count(path) >= 3);
        assertEquals(3, counter.count(path), () -> counter.names(path).toString());
        client.close(); // its view would linger for a minute
        zk.assertNoLeaks(path);
    }

    @Test
    void withoutAViewUncontendedAcquireAndCloseMakeThreeRequests() throws Exception {
        zk.mode(EngineMode.WATCH);
        String path = ZooKeeperFixture.uniquePath("count");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 3);
        // The first use checks the maxLeases record once per instance; the steady state is what is counted.
        semaphore.acquire().close();
        await().until(() -> client.getChildren().forPath(path).isEmpty());
        counter.reset();

        semaphore.acquire().close();

        await().until(() -> counter.count(path) >= 3);
        zk.assertNoLeaks(path);
        assertEquals(3, counter.count(path), () -> counter.names(path).toString());
    }
}
