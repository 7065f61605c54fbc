package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.DistributedLock;
import io.coord.core.Lease;
import io.coord.core.Participant;
import io.coord.mutex.ReentrantMutex;
import io.coord.rwlock.ReadWriteMutex;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A {@link ReentrantMutex} and Curator's {@link InterProcessMutex} on one path are one lock with one queue, and coord's
 * and Curator's leader selectors one election.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CuratorInteropIT {
    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    // Curator's mutex must be released by the thread that acquired it, so all its calls go through this one.
    private ExecutorService curatorThread;

    @BeforeEach
    void startCuratorThread() {
        curatorThread = Executors.newSingleThreadExecutor();
    }

    @AfterEach
    void closeClients() {
        curatorThread.shutdownNow();
    }

    @Test
    void coordAndCuratorMutexesExcludeEachOther() throws Exception {
        String path = ZooKeeperFixture.uniquePath("interop-exclusion");
        CuratorFramework coordClient = cluster.newClient();
        ReentrantMutex coord = new ReentrantMutex(coordClient, path, "coord");
        InterProcessMutex curator = new InterProcessMutex(cluster.newClient(), path);

        coord.acquire();
        try {
            assertFalse(onCuratorThread(() -> curator.acquire(200, TimeUnit.MILLISECONDS)));
        } finally {
            coord.release();
        }

        assertCoordWaitsForCuratorsHold(curator, coord);

        cluster.assertNoLeaks(coordClient, path);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    @Test
    void mixedQueueIsServedInArrivalOrder() throws Exception {
        String path = ZooKeeperFixture.uniquePath("interop-fifo");
        CuratorFramework holderClient = cluster.newClient();
        ReentrantMutex holder = new ReentrantMutex(holderClient, path, "coord-holder");
        InterProcessMutex curator = new InterProcessMutex(cluster.newClient(), path);
        ReentrantMutex waiter = new ReentrantMutex(cluster.newClient(), path, "coord-waiter");
        List<String> grants = new CopyOnWriteArrayList<>();
        AtomicBoolean curatorReleased = new AtomicBoolean();

        holder.acquire();
        grants.add("coord-holder");
        long holderToken = holder.lease().fencingToken();
        Future<Boolean> curatorGranted = curatorThread.submit(() -> {
            boolean granted = curator.acquire(30, TimeUnit.SECONDS);
            if (granted) {
                grants.add("curator");
            }
            return granted;
        });
        await("Curator queued behind the holder")
                .until(() -> holder.participants().size() == 2);
        CompletableFuture<Lease> waiterGranted = waiter.acquireAsync();
        // Recorded when the grant happens: the coord waiter may only get the lock once Curator has let it go.
        CompletableFuture<Boolean> grantedAfterCurator = waiterGranted.thenApply(lease -> {
            grants.add("coord-waiter");
            return curatorReleased.get();
        });
        await("the coord waiter queued behind Curator")
                .until(() -> holder.participants().size() == 3);

        List<Participant> queue = holder.participants();
        assertEquals("coord-holder", queue.get(0).id(), queue.toString());
        assertEquals("coord-waiter", queue.get(2).id(), queue.toString());
        assertTrue(queue.get(0).sequence() < queue.get(1).sequence(), queue.toString());
        assertTrue(queue.get(1).sequence() < queue.get(2).sequence(), queue.toString());

        holder.release();
        assertTrue(curatorGranted.get(10, TimeUnit.SECONDS), "Curator, second in line, is served next");
        await("the coord waiter keeps waiting while Curator holds")
                .during(Duration.ofMillis(500))
                .atMost(Duration.ofSeconds(2))
                .until(() -> !waiterGranted.isDone());
        curatorThread
                .submit(() -> {
                    curatorReleased.set(true);
                    curator.release();
                    return null;
                })
                .get(10, TimeUnit.SECONDS);

        Lease lease = waiterGranted.get(10, TimeUnit.SECONDS);
        assertTrue(grantedAfterCurator.get(10, TimeUnit.SECONDS), "the coord waiter was granted before Curator let go");
        assertEquals(List.of("coord-holder", "curator", "coord-waiter"), grants);
        assertTrue(lease.fencingToken() > holderToken, "token " + lease.fencingToken() + " after " + holderToken);
        lease.close();

        cluster.assertNoLeaks(holderClient, path);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    /** While Curator's lock is held, coord's cannot be had; once Curator has released it, it can. */
    private void assertCoordWaitsForCuratorsHold(InterProcessLock curator, DistributedLock coord) throws Exception {
        assertTrue(onCuratorThread(() -> curator.acquire(10, TimeUnit.SECONDS)));
        try {
            assertFalse(coord.acquire(Duration.ofMillis(200)));
        } finally {
            onCuratorThread(() -> {
                curator.release();
                return null;
            });
        }
        assertTrue(coord.acquire(Duration.ofSeconds(10)), "free again once Curator released");
        coord.release();
    }

    private <T> T onCuratorThread(java.util.concurrent.Callable<T> call) throws Exception {
        return curatorThread.submit(call).get(30, TimeUnit.SECONDS);
    }

    @Test
    void aCoordReaderWaitsForACuratorWriterOnItsPath() throws Exception {
        // The two read/write locks name their nodes differently and must not share a path (Curator's side does not
        // see coord's nodes), but coord's reader at least never passes a writer it cannot read the kind of.
        String path = ZooKeeperFixture.uniquePath("interop-rwlock");
        CuratorFramework coordClient = cluster.newClient();
        ReadWriteMutex coord = new ReadWriteMutex(coordClient, path, "coord");
        InterProcessReadWriteLock curator = new InterProcessReadWriteLock(cluster.newClient(), path);

        assertCoordWaitsForCuratorsHold(curator.writeLock(), coord.readLock());

        cluster.assertNoLeaks(coordClient, path);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    @Test
    void coordAndCuratorLeaderSelectorsTakeTurnsOnOnePath() throws Exception {
        String path = ZooKeeperFixture.uniquePath("interop-selectors");
        List<String> terms = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> coordMayEnd = new CompletableFuture<>();
        io.coord.election.LeaderSelector coord =
                new io.coord.election.LeaderSelector(cluster.newClient(), path, "coord", term -> {
                    terms.add("coord");
                    coordMayEnd.get();
                });
        CompletableFuture<Void> curatorMayEnd = new CompletableFuture<>();
        org.apache.curator.framework.recipes.leader.LeaderSelector curator =
                new org.apache.curator.framework.recipes.leader.LeaderSelector(
                        cluster.newClient(),
                        path,
                        new org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter() {
                            @Override
                            public void takeLeadership(CuratorFramework client) throws Exception {
                                terms.add("curator");
                                curatorMayEnd.get();
                            }
                        });
        curator.setId("curator");
        try {
            coord.start();
            await().until(() -> terms.equals(List.of("coord")));
            curator.start();
            await().until(() -> coord.participants().size() == 2);
            assertEquals(List.of("coord"), terms, "Curator's selector waits behind coord's");
            assertEquals(
                    List.of("coord", "curator"),
                    coord.participants().stream().map(Participant::id).toList());

            coordMayEnd.complete(null);
            await().until(() -> terms.equals(List.of("coord", "curator")));
            assertTrue(curator.hasLeadership());
            assertFalse(coord.hasLeadership());
            curatorMayEnd.complete(null);
        } finally {
            coord.close();
            curator.close();
        }
        cluster.closeClientsAndAssertNoLeaks(path);
    }
}
