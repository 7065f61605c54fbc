package io.coord.semaphore;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

@InBothEngineModes
@Timeout(90)
class DistributedSemaphoreTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    private final ExecutorService threads = Executors.newCachedThreadPool();

    @AfterEach
    void closeClients() throws Exception {
        threads.shutdownNow();
    }

    @Test
    void neverMoreThanMaxLeasesAreHeldAcrossManyClientsAndRandomRequests() throws Exception {
        String path = ZooKeeperFixture.uniquePath("limit");
        int maxLeases = 4;
        AtomicInteger inUse = new AtomicInteger();
        AtomicInteger worst = new AtomicInteger();
        AtomicInteger grants = new AtomicInteger();
        List<Future<?>> workers = new ArrayList<>();
        for (int w = 0; w < 6; w++) {
            DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, maxLeases);
            Random random = new Random(w);
            workers.add(threads.submit(() -> {
                for (int i = 0; i < 15; i++) {
                    int permits = 1 + random.nextInt(maxLeases);
                    try (Lease lease = semaphore.acquire(permits)) {
                        int now = inUse.addAndGet(permits);
                        worst.accumulateAndGet(now, Math::max);
                        grants.incrementAndGet();
                        assertTrue(lease.isValid());
                        Thread.onSpinWait();
                        inUse.addAndGet(-permits);
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : workers) {
            f.get(60, TimeUnit.SECONDS);
        }
        assertEquals(90, grants.get());
        assertTrue(worst.get() <= maxLeases, "held at once: " + worst.get());
        zk.assertNoLeaks(path);
    }

    @Test
    void callsThatWaitForANewInstancesRecordCheckQueueInTheOrderTheyCame() throws Exception {
        String path = ZooKeeperFixture.uniquePath("first-use-order");
        Lease all = new DistributedSemaphore(zk.newClient(), path, 3).acquire(3);
        // A new instance checks the limit record before its first acquisition; the calls made meanwhile wait for that
        // check together, and must still queue first come, first served.
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 3);
        CompletableFuture<Lease> three = semaphore.acquireAsync(3);
        CompletableFuture<Lease> one = semaphore.acquireAsync(1);
        CompletableFuture<Lease> two = semaphore.acquireAsync(2);
        await().until(() -> semaphore.participants().size() == 3 + 6);

        all.close();

        // The first call takes all three permits, so neither later one can be granted while it holds them.
        Lease first = three.get(10, TimeUnit.SECONDS);
        assertFalse(one.isDone() || two.isDone(), "a later call was served first");
        first.close();
        one.get(10, TimeUnit.SECONDS).close();
        two.get(10, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void outOfOrderReleaseGrantsTheWaiterWithoutWaitingForTheFirstHolder() throws Exception {
        String path = ZooKeeperFixture.uniquePath("out-of-order");
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 3);
        Lease first = semaphore.acquire();
        Lease second = semaphore.acquire();
        Lease third = semaphore.acquire();
        CompletableFuture<Lease> waiter = new DistributedSemaphore(zk.newClient(), path, 3).acquireAsync(1);
        await().until(() -> semaphore.participants().size() == 4);

        second.close();

        Lease granted = waiter.get(10, TimeUnit.SECONDS);
        assertTrue(first.isValid(), "the first holder keeps its permit throughout");
        granted.close();
        first.close();
        third.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void multiPermitRequestIsAllOrNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("all-or-nothing");
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 3);
        Lease one = semaphore.acquire();
        DistributedSemaphore other = new DistributedSemaphore(zk.newClient(), path, 3);
        assertEquals(Optional.empty(), other.tryAcquire(3, Duration.ofMillis(300)));
        CompletableFuture<Lease> three = other.acquireAsync(3);
        CompletableFuture<Lease> two = new DistributedSemaphore(zk.newClient(), path, 3).acquireAsync(2);
        await().until(() -> semaphore.participants().size() == 6);
        assertFalse(three.isDone());
        assertFalse(two.isDone(), "FIFO: the two-permit request waits behind the three-permit one");

        one.close();
        Lease all = three.get(10, TimeUnit.SECONDS);
        assertEquals(
                3,
                semaphore.participants().stream()
                        .filter(p ->
                                all.path().startsWith(path + "/" + p.nodeName().substring(0, 40)))
                        .count());
        assertFalse(two.isDone());
        all.close();
        two.get(10, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void mismatchedMaxLeasesIsRefused() throws Exception {
        String path = ZooKeeperFixture.uniquePath("mismatch");
        CuratorFramework client = zk.newClient();
        new DistributedSemaphore(client, path, 3).acquire().close();
        DistributedSemaphore wrong = new DistributedSemaphore(zk.newClient(), path, 5);
        IllegalStateException e = assertThrows(IllegalStateException.class, wrong::acquire);
        assertEquals(
                "semaphore " + path + " records maxLeases 3, but this instance was built with maxLeases 5",
                e.getMessage());
        ExecutionException async = assertThrows(
                ExecutionException.class, () -> wrong.acquireAsync(1).get(10, TimeUnit.SECONDS));
        assertEquals(e.getMessage(), async.getCause().getMessage());
        assertEquals("3", new String(client.getData().forPath(path), StandardCharsets.UTF_8));
        zk.assertNoLeaks(path);
    }

    @Test
    void sessionExpiryFreesThePermitsForAWaiter() throws Exception {
        String path = ZooKeeperFixture.uniquePath("expiry");
        CuratorFramework holderClient = zk.newClient();
        Lease held = new DistributedSemaphore(holderClient, path, 2).acquire(2);
        CompletableFuture<Lease> waiter = new DistributedSemaphore(zk.newClient(), path, 2).acquireAsync(2);
        await().until(() ->
                new DistributedSemaphore(zk.newClient(), path, 2).participants().size() == 4);

        zk.expireSession(holderClient);

        assertEquals(LeaseState.LOST, held.ended().get(20, TimeUnit.SECONDS));
        waiter.get(20, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void timeoutInterruptAndCancelLeaveNoZnode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("withdraw");
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 1);
        DistributedSemaphore other = new DistributedSemaphore(zk.newClient(), path, 1);
        Lease held = semaphore.acquire();
        assertEquals(
                Optional.empty(),
                threads.submit(() -> other.tryAcquire(1, Duration.ofMillis(200)))
                        .get(10, TimeUnit.SECONDS));
        assertEquals(Optional.empty(), other.tryAcquire(1, Duration.ZERO));
        Future<?> blocked = threads.submit(() -> other.acquire());
        await().until(() -> semaphore.participants().size() == 2);
        blocked.cancel(true);
        await().until(() -> semaphore.participants().size() == 1);
        CompletableFuture<Lease> cancelled = other.acquireAsync(1);
        await().until(() -> semaphore.participants().size() == 2);
        cancelled.cancel(false);
        await().until(() -> semaphore.participants().size() == 1);
        held.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void invalidArgumentsAreRefused() {
        CuratorFramework client = zk.unstartedClient();
        assertEquals(
                "maxLeases must be >= 1: 0",
                assertThrows(IllegalArgumentException.class, () -> new DistributedSemaphore(client, "/s", 0))
                        .getMessage());
        assertEquals(
                "client must not be null",
                assertThrows(NullPointerException.class, () -> new DistributedSemaphore(null, "/s", 1))
                        .getMessage());
        // The client and the path are checked first, whatever else is wrong.
        assertThrows(NullPointerException.class, () -> new DistributedSemaphore(null, "/s", 0));
        assertEquals(
                "path must not be null",
                assertThrows(IllegalArgumentException.class, () -> new DistributedSemaphore(client, null, 0))
                        .getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new DistributedSemaphore(client, "s/", 1))
                .getMessage()
                .startsWith("invalid ZooKeeper path \"s/\""));
        DistributedSemaphore semaphore = new DistributedSemaphore(client, "/s", 3);
        assertEquals(3, semaphore.maxLeases());
        assertEquals(
                "permits must be between 1 and maxLeases (3): 4",
                assertThrows(IllegalArgumentException.class, () -> semaphore.acquire(4))
                        .getMessage());
        assertEquals(
                "permits must be between 1 and maxLeases (3): 0",
                assertThrows(IllegalArgumentException.class, () -> semaphore.acquireAsync(0))
                        .getMessage());
        assertEquals(
                "timeout must not be null",
                assertThrows(NullPointerException.class, () -> semaphore.tryAcquire(1, null))
                        .getMessage());
    }
}
