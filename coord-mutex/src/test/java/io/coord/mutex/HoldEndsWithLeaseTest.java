package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.testkit.Background;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** A thread's hold ends when its lease ends, however the lease ends, so that two parties never both hold. */
@InBothEngineModes
@Timeout(90)
class HoldEndsWithLeaseTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void closingTheLeaseDirectlyEndsTheThreadsHold() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-lease");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        ReentrantMutex other = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        Lease first = mutex.lease();

        first.close();

        assertEquals(0, mutex.holdCount());
        assertFalse(mutex.isHeldByCurrentThread());
        assertFalse(mutex.isAcquiredInThisProcess());
        IllegalMonitorStateException error = assertThrows(IllegalMonitorStateException.class, mutex::lease);
        assertEquals(
                "the current thread (" + Thread.currentThread().getName() + ") does not hold " + path
                        + "; its lease ended RELEASED",
                error.getMessage());

        // Acquiring again does not re-enter the ended hold: it queues afresh, with a new node, and the other client
        // is excluded while it is held.
        assertTrue(mutex.acquire(Duration.ofSeconds(10)));
        assertEquals(1, mutex.holdCount());
        Lease second = mutex.lease();
        assertNotEquals(first.path(), second.path());
        assertTrue(second.fencingToken() > first.fencingToken());
        assertFalse(other.acquire(Duration.ZERO));
        mutex.release();
        assertEquals(LeaseState.RELEASED, second.state());
        assertTrue(other.acquire(Duration.ofSeconds(10)));
        other.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void aThreadThatEndsItsHoldThroughTheLeaseLeavesNothingOfItselfInTheLock() throws Exception {
        // A thread per task, each ending its hold with try-with-resources on the lease and never calling release().
        String path = ZooKeeperFixture.uniquePath("thread-per-task");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread task = new Thread(() -> {
            try {
                mutex.acquire();
                try (Lease lease = mutex.lease()) {
                    assertEquals(LeaseState.HELD, lease.state());
                }
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        });
        task.start();
        done.get(10, TimeUnit.SECONDS);
        task.join();
        WeakReference<Thread> ended = new WeakReference<>(task);
        task = null;
        await().until(() -> {
            System.gc();
            return ended.get() == null;
        });
        assertFalse(mutex.isAcquiredInThisProcess());
        zk.assertNoLeaks(path);
    }

    @Test
    void anAsyncLeaseCountsAsAcquiredInThisProcessBeforeItsCallerHearsOfIt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("async-in-process");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        for (int round = 0; round < 10; round++) {
            boolean seen = mutex.acquireAsync()
                    .thenApply(lease -> {
                        try (lease) {
                            return mutex.isAcquiredInThisProcess();
                        }
                    })
                    .get(10, TimeUnit.SECONDS);
            assertTrue(seen, "not acquired in this process, in a stage chained on the lease, in round " + round);
            assertFalse(mutex.isAcquiredInThisProcess());
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void aListenerAddedAfterTheLeaseEndedHearsItsFinalState() throws Exception {
        String path = ZooKeeperFixture.uniquePath("late-listener");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        Lease lease = mutex.lease();
        mutex.release();
        List<LeaseState> heard = new CopyOnWriteArrayList<>();
        lease.addStateListener(heard::add, Runnable::run);
        await().until(() -> heard.equals(List.of(LeaseState.RELEASED)));
        zk.assertNoLeaks(path);
    }

    @Test
    void theReleaseOwedToAnEndedHoldIsAQuietNoOpAndOneMoreThrows() throws Exception {
        String path = ZooKeeperFixture.uniquePath("owed-release");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        try {
            mutex.lease().close(); // the work inside try/finally ends the lease itself
        } finally {
            mutex.release(); // owed by the acquire above: quiet
        }
        IllegalMonitorStateException error = assertThrows(IllegalMonitorStateException.class, mutex::release);
        assertEquals(
                "the current thread (" + Thread.currentThread().getName() + ") does not hold " + path,
                error.getMessage());
        zk.assertNoLeaks(path);
    }

    @Test
    void aNestedAcquireAfterTheHoldEndedLeavesTheOuterReleaseOwedAndQuiet() throws Exception {
        String path = ZooKeeperFixture.uniquePath("owed-nested");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        try {
            mutex.lease().close(); // the outer hold ends
            mutex.acquire(); // a nested acquire queues afresh, with a new node
            try {
                assertEquals(1, mutex.holdCount());
            } finally {
                mutex.release(); // the nested hold's own release: its lease ends
            }
            assertEquals(0, mutex.holdCount());
        } finally {
            mutex.release(); // owed by the outer acquire: quiet
        }
        assertThrows(IllegalMonitorStateException.class, mutex::release);
        zk.assertNoLeaks(path);
    }

    @Test
    void tryWithResourcesOnTheLeaseReleasesTheLockForEveryone() throws Exception {
        String path = ZooKeeperFixture.uniquePath("try-with-lease");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        ReentrantMutex other = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        mutex.acquire();
        try (Lease lease = mutex.lease()) {
            assertTrue(lease.isValid());
        }
        assertEquals(0, mutex.holdCount());
        assertTrue(other.acquire(Duration.ofSeconds(10)));
        // The lock is the other client's now: re-entering is not possible, acquiring waits like anyone else.
        assertFalse(mutex.acquire(Duration.ZERO));
        other.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLostLeaseEndsTheHoldAndAcquiringAgainQueuesOnTheNewSession() throws Exception {
        String path = ZooKeeperFixture.uniquePath("lost-hold");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        mutex.acquire();
        Lease lost = mutex.lease();

        zk.expireSession(client);
        await().atMost(Duration.ofSeconds(20)).until(() -> lost.state() == LeaseState.LOST);

        assertEquals(0, mutex.holdCount());
        assertFalse(mutex.isHeldByCurrentThread());
        IllegalMonitorStateException error = assertThrows(IllegalMonitorStateException.class, mutex::lease);
        assertTrue(error.getMessage().endsWith("; its lease ended LOST"), error.getMessage());
        mutex.release(); // owed: a no-op, on the server too
        error = assertThrows(IllegalMonitorStateException.class, mutex::lease);
        assertTrue(error.getMessage().endsWith("; its lease ended LOST"), "after the owed release too: " + error);
        assertThrows(IllegalMonitorStateException.class, mutex::release);
        assertTrue(mutex.acquire(Duration.ofSeconds(20)));
        assertTrue(mutex.lease().fencingToken() > lost.fencingToken());
        mutex.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void aRefusedAcquireAfterTheHoldWasLostLeavesLeaseSayingHowTheHoldEnded() throws Exception {
        String path = ZooKeeperFixture.uniquePath("lost-then-refused");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        ReentrantMutex other = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        Lease lost = mutex.lease();
        zk.expireSession(client);
        await().atMost(Duration.ofSeconds(20)).until(() -> lost.state() == LeaseState.LOST);
        assertTrue(other.acquire(Duration.ofSeconds(20)));

        assertFalse(mutex.acquire(Duration.ZERO));

        IllegalMonitorStateException error = assertThrows(IllegalMonitorStateException.class, mutex::lease);
        assertTrue(error.getMessage().endsWith("; its lease ended LOST"), error.getMessage());
        mutex.release(); // owed to the lost hold
        assertThrows(IllegalMonitorStateException.class, mutex::release);
        other.release();
        assertTrue(mutex.acquire(Duration.ofSeconds(20)));
        mutex.release();
        assertFalse(assertThrows(IllegalMonitorStateException.class, mutex::lease)
                .getMessage()
                .contains("its lease ended"));
        zk.assertNoLeaks(path);
    }

    @Test
    void closingTheLeaseOfANestedHoldEndsTheWholeHold() throws Exception {
        String path = ZooKeeperFixture.uniquePath("nested-close");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        mutex.acquire();
        assertEquals(2, mutex.holdCount());
        mutex.lease().close();
        assertEquals(0, mutex.holdCount());
        mutex.release();
        mutex.release();
        assertThrows(IllegalMonitorStateException.class, mutex::release);
        zk.assertNoLeaks(path);
    }

    @Test
    void whatTheEndOfAClosedLeaseSetsOffComesAfterItsRelease() throws Exception {
        String path = ZooKeeperFixture.uniquePath("after-the-end");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        ReentrantMutex other = new ReentrantMutex(zk.newClient(), path);
        Lease lease = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        // Run on the closing thread, as the end completes: a second close, and an acquisition that needs the node gone.
        lease.ended().thenRun(lease::close);
        CompletableFuture<Lease> next = lease.ended().thenApply(state -> {
            try {
                return other.acquireAsync().get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });

        Background.call(() -> {
                    lease.close();
                    return null;
                })
                .get(20, TimeUnit.SECONDS);

        Lease granted = next.get(20, TimeUnit.SECONDS); // once the lease's node went
        assertEquals(LeaseState.RELEASED, lease.state());
        granted.close();
        zk.assertNoLeaks(path);
    }
}
