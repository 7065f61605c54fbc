package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

@InBothEngineModes
@Timeout(60)
class ReentrantMutexTest {
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
    void holdIsReentrantPerThreadAndReleasedByTheLastRelease() throws Exception {
        String path = ZooKeeperFixture.uniquePath("reentrant");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path, "worker-1");

        mutex.acquire();
        assertTrue(mutex.acquire(Duration.ofSeconds(1)));
        assertEquals(2, mutex.holdCount());
        assertTrue(mutex.isHeldByCurrentThread());
        Lease lease = mutex.lease();
        assertEquals(LeaseState.HELD, lease.state());
        assertEquals(List.of("worker-1"), ids(mutex.participants()));

        mutex.release();
        assertEquals(1, mutex.holdCount());
        assertEquals(LeaseState.HELD, lease.state());
        mutex.release();
        assertEquals(0, mutex.holdCount());
        assertFalse(mutex.isHeldByCurrentThread());
        assertFalse(mutex.isAcquiredInThisProcess());
        assertEquals(LeaseState.RELEASED, lease.ended().get(5, TimeUnit.SECONDS));
        zk.assertNoLeaks(path);
    }

    @Test
    void releaseByAThreadThatDoesNotHoldIsRefused() throws Exception {
        String path = ZooKeeperFixture.uniquePath("not-holder");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        IllegalMonitorStateException beforeAnyHold = assertThrows(IllegalMonitorStateException.class, mutex::release);
        assertTrue(beforeAnyHold.getMessage().contains("does not hold " + path), beforeAnyHold.getMessage());

        mutex.acquire();
        Future<?> other = threads.submit(mutex::release);
        var error = assertThrows(java.util.concurrent.ExecutionException.class, () -> other.get(5, TimeUnit.SECONDS));
        assertTrue(error.getCause() instanceof IllegalMonitorStateException, error.toString());
        var noLease = assertThrows(
                java.util.concurrent.ExecutionException.class,
                () -> threads.submit(mutex::lease).get(5, TimeUnit.SECONDS));
        assertTrue(noLease.getCause() instanceof IllegalMonitorStateException, noLease.toString());
        assertTrue(mutex.isHeldByCurrentThread());
        mutex.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void twoThreadsOnOneInstanceContendLikeTwoProcesses() throws Exception {
        String path = ZooKeeperFixture.uniquePath("threads");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        Future<Boolean> other = threads.submit(() -> mutex.acquire(Duration.ofMillis(300)));
        assertFalse(other.get(5, TimeUnit.SECONDS));
        Future<Boolean> waiter = threads.submit(() -> {
            mutex.acquire();
            boolean held = mutex.isHeldByCurrentThread();
            mutex.release();
            return held;
        });
        await().until(() -> mutex.participants().size() == 2);
        mutex.release();
        assertTrue(waiter.get(10, TimeUnit.SECONDS));
        zk.assertNoLeaks(path);
    }

    @Test
    void waitersAreGrantedInArrivalOrder() throws Exception {
        String path = ZooKeeperFixture.uniquePath("fifo");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        holder.acquire();
        List<String> order = new CopyOnWriteArrayList<>();
        List<Future<?>> waiters = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String id = "waiter-" + i;
            ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path, id);
            int queued = i + 2;
            waiters.add(threads.submit(() -> {
                mutex.acquire();
                order.add(id);
                mutex.release();
                return null;
            }));
            // Queue them one at a time, so that arrival order is known.
            await().until(() -> holder.participants().size() == queued);
        }
        assertEquals(
                List.of("holder", "waiter-0", "waiter-1", "waiter-2", "waiter-3", "waiter-4"),
                ids(holder.participants()));
        holder.release();
        for (Future<?> w : waiters) {
            w.get(10, TimeUnit.SECONDS);
        }
        assertEquals(List.of("waiter-0", "waiter-1", "waiter-2", "waiter-3", "waiter-4"), order);
        zk.assertNoLeaks(path);
    }

    @Test
    void tryOnceSucceedsOnAFreeLockAndFailsOnAHeldOne() throws Exception {
        String path = ZooKeeperFixture.uniquePath("try-once");
        ReentrantMutex first = new ReentrantMutex(zk.newClient(), path);
        ReentrantMutex second = new ReentrantMutex(zk.newClient(), path);
        assertTrue(first.acquire(Duration.ZERO));
        assertFalse(threads.submit(() -> second.acquire(Duration.ZERO)).get(10, TimeUnit.SECONDS));
        // The refused look deletes its node once it has answered.
        await().until(() -> first.participants().size() == 1);
        first.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void timeoutLeavesNoZnodeBehind() throws Exception {
        String path = ZooKeeperFixture.uniquePath("timeout");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path);
        holder.acquire();
        assertFalse(threads.submit(() -> waiter.acquire(Duration.ofMillis(500))).get(10, TimeUnit.SECONDS));
        await().until(() -> holder.participants().size() == 1);
        holder.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void interruptLeavesNoZnodeBehind() throws Exception {
        String path = ZooKeeperFixture.uniquePath("interrupt");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path);
        holder.acquire();
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                waiter.acquire();
                outcome.complete(null);
            } catch (Throwable e) {
                outcome.complete(e);
            }
        });
        t.start();
        await().until(() -> holder.participants().size() == 2);
        t.interrupt();
        assertTrue(outcome.get(10, TimeUnit.SECONDS) instanceof InterruptedException);
        await().until(() -> holder.participants().size() == 1);
        assertEquals(0, waiter.holdCount());
        holder.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void alreadyInterruptedThreadWritesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("pre-interrupted");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, mutex::acquire);
        assertFalse(Thread.currentThread().isInterrupted());
        assertEquals(null, client.checkExists().forPath(path));
    }

    @Test
    void aThreadThatHoldsTheLockStillAnswersAnInterruptFirst() throws Exception {
        String path = ZooKeeperFixture.uniquePath("held-interrupted");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        // As ReentrantLock's lockInterruptibly() and tryLock(time, unit): the interrupt comes first, held or not.
        Thread.currentThread().interrupt();
        InterruptedException blocking = assertThrows(InterruptedException.class, mutex::acquire);
        assertEquals("interrupted before acquiring " + path, blocking.getMessage());
        assertFalse(Thread.currentThread().isInterrupted(), "the flag is cleared, as an InterruptedException does");
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, () -> mutex.acquire(Duration.ofSeconds(1)));
        assertFalse(Thread.currentThread().isInterrupted());
        assertEquals(1, mutex.holdCount(), "neither call counted a hold");
        assertTrue(mutex.acquire(Duration.ZERO), "and with the flag clear, the hold is taken again");
        mutex.release();
        mutex.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void cancellingAnAsyncAcquisitionWithdrawsItsZnode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("cancel");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path);
        holder.acquire();
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        assertTrue(pending.cancel(true));
        await().until(() -> holder.participants().size() == 1);

        CompletableFuture<Lease> timed = waiter.acquireAsync().orTimeout(300, TimeUnit.MILLISECONDS);
        await().until(timed::isCompletedExceptionally);
        await().until(() -> holder.participants().size() == 1);
        holder.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void asyncLeaseIsReleasedFromAnyThread() throws Exception {
        String path = ZooKeeperFixture.uniquePath("async");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        Lease lease = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        assertTrue(lease.isValid());
        assertTrue(lease.path().startsWith(path + "/_c_"), lease.path());
        assertTrue(lease.path().contains("-lock-"), lease.path());
        await().until(mutex::isAcquiredInThisProcess);
        assertEquals(0, mutex.holdCount());
        CompletableFuture<Lease> second = mutex.acquireAsync();
        threads.submit(lease::close).get(5, TimeUnit.SECONDS);
        assertEquals(LeaseState.RELEASED, lease.state());
        Lease next = second.get(10, TimeUnit.SECONDS);
        assertTrue(next.fencingToken() > lease.fencingToken());
        next.close();
        next.close(); // idempotent
        zk.assertNoLeaks(path);
    }

    @Test
    void asLockTreatsAnInterruptAsLockDoes() throws Exception {
        String path = ZooKeeperFixture.uniquePath("as-lock-interrupt");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        Lock lock = mutex.asLock();
        mutex.acquire(); // makes the path, so that the look below is about the interrupt alone
        mutex.release();
        Thread.currentThread().interrupt();
        try {
            assertTrue(lock.tryLock(), "tryLock() takes a free lock whatever the interrupt flag says");
            assertTrue(Thread.currentThread().isInterrupted(), "and leaves the flag set");
            // Held already: the interruptible calls still answer the interrupt first.
            assertThrows(InterruptedException.class, lock::lockInterruptibly);
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, () -> lock.tryLock(1, TimeUnit.SECONDS));
            Thread.currentThread().interrupt();
            lock.lock();
            assertTrue(Thread.interrupted(), "lock() keeps the flag");
            assertEquals(2, mutex.holdCount());
        } finally {
            Thread.interrupted();
        }
        lock.unlock();
        lock.unlock();
        zk.assertNoLeaks(path);
    }

    @Test
    void lockKeepsItsPlaceInTheQueueWhateverInterruptsArrive() throws Exception {
        String path = ZooKeeperFixture.uniquePath("as-lock-place");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        holder.acquire();
        Lock first = new ReentrantMutex(zk.newClient(), path, "first").asLock();
        ReentrantMutex second = new ReentrantMutex(zk.newClient(), path, "second");
        CompletableFuture<Thread> firstThread = new CompletableFuture<>();
        CompletableFuture<Boolean> firstLocked = new CompletableFuture<>();
        CountDownLatch mayUnlock = new CountDownLatch(1);
        Future<?> firstDone = threads.submit(() -> {
            firstThread.complete(Thread.currentThread());
            first.lock();
            firstLocked.complete(Thread.interrupted());
            mayUnlock.await();
            first.unlock();
            return null;
        });
        await().until(() -> holder.participants().size() == 2);
        CompletableFuture<Lease> secondLease = second.acquireAsync(); // queues behind the first
        await().until(() -> ids(holder.participants()).equals(List.of("holder", "first", "second")));

        for (int i = 0; i < 3; i++) {
            firstThread.get().interrupt();
        }
        holder.release();

        assertTrue(firstLocked.get(10, TimeUnit.SECONDS), "lock() returns with the interrupt flag set");
        assertFalse(secondLease.isDone(), "the second went ahead of an interrupted lock()");
        assertEquals(List.of("first", "second"), ids(holder.participants()));
        mayUnlock.countDown();
        firstDone.get(10, TimeUnit.SECONDS);
        secondLease.get(10, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void asLockBehavesLikeALock() throws Exception {
        String path = ZooKeeperFixture.uniquePath("as-lock");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        Lock lock = mutex.asLock();
        lock.lock();
        assertTrue(lock.tryLock());
        assertEquals(2, mutex.holdCount());
        assertFalse(
                threads.submit(() -> lock.tryLock(200, TimeUnit.MILLISECONDS)).get(5, TimeUnit.SECONDS));
        UnsupportedOperationException noConditions =
                assertThrows(UnsupportedOperationException.class, lock::newCondition);
        assertTrue(noConditions.getMessage().contains(path));
        lock.unlock();
        lock.unlock();
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        zk.assertNoLeaks(path);
    }

    @Test
    void worksThroughANamespaceFacade() throws Exception {
        String path = ZooKeeperFixture.uniquePath("namespaced");
        CuratorFramework root = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(root.usingNamespace("tenant-a"), path, "tenant");
        mutex.acquire();
        assertEquals(1, root.getChildren().forPath("/tenant-a" + path).size());
        assertEquals(List.of("tenant"), ids(mutex.participants()));
        mutex.release();
        zk.assertNoLeaks("/tenant-a" + path);
    }

    @Test
    void blockingInADependentStageDoesNotStallOtherCompletions() throws Exception {
        String first = ZooKeeperFixture.uniquePath("nested-a");
        String second = ZooKeeperFixture.uniquePath("nested-b");
        CuratorFramework client = zk.newClient();
        ReentrantMutex a = new ReentrantMutex(client, first);
        ReentrantMutex b = new ReentrantMutex(client, second);
        Lease inner = a.acquireAsync()
                .thenApply(outer -> {
                    try (outer) {
                        return b.acquireAsync().join(); // blocks the thread that completed the outer future
                    }
                })
                .get(10, TimeUnit.SECONDS);
        assertTrue(inner.isValid());
        inner.close();
        zk.assertNoLeaks(first);
        zk.assertNoLeaks(second);
    }

    @Test
    void aOneLookRefusedWhileAnotherThreadHoldsIsGrantedRightAfterItsRelease() throws Exception {
        // The refused look's node must be gone before the caller hears "no": its next look, sent right after the
        // holder's release, must not find it still queued ahead of itself.
        String path = ZooKeeperFixture.uniquePath("look-after-refusal");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        for (int round = 0; round < 200; round++) {
            mutex.acquire();
            assertFalse(threads.submit(() -> mutex.acquire(Duration.ZERO)).get(10, TimeUnit.SECONDS));
            mutex.release();
            boolean granted = threads.submit(() -> {
                        boolean got = mutex.acquire(Duration.ZERO);
                        if (got) {
                            mutex.release();
                        }
                        return got;
                    })
                    .get(10, TimeUnit.SECONDS);
            assertTrue(granted, "refused in round " + round);
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void aTimeoutShorterThanARoundTripStillLooksOnceAndLeavesNothingQueued() throws Exception {
        String path = ZooKeeperFixture.uniquePath("tiny-timeout");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        Duration tiny = Duration.ofNanos(1);
        for (int round = 0; round < 50; round++) {
            // Free: granted, as tryLock with a timeout gets a free ReentrantLock, though the create takes longer.
            assertTrue(mutex.acquire(tiny), "free, yet refused in round " + round);
            // Held by another thread: refused, and its node is gone before the call returns, whatever the timing.
            assertFalse(threads.submit(() -> mutex.acquire(tiny)).get(10, TimeUnit.SECONDS));
            mutex.release();
            assertTrue(
                    threads.submit(() -> {
                                boolean got = mutex.acquire(Duration.ZERO);
                                if (got) {
                                    mutex.release();
                                }
                                return got;
                            })
                            .get(10, TimeUnit.SECONDS),
                    "refused after the release in round " + round);
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void aLookRightAfterAWithdrawnCreateIsNotQueuedBehindItsNode() throws Exception {
        // The withdrawn create is still in flight when the next look is sent, so its node lands first and is deleted
        // only once its reply comes, after the look's own create: the look must not count it as a contender.
        String path = ZooKeeperFixture.uniquePath("look-after-withdrawal");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        for (int round = 0; round < 30; round++) {
            CompletableFuture<Lease> withdrawn = mutex.acquireAsync();
            if (!withdrawn.cancel(false)) {
                withdrawn.join().close(); // delivered before the cancel: nothing was withdrawn this round
            }
            assertTrue(mutex.acquire(Duration.ZERO), "free, yet refused in round " + round);
            mutex.release();
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void stagesChainedOnAnAcquisitionRunOnlyOnceTheCallerGivingUpHasWithdrawnIt() throws Exception {
        // Giving up runs the stages the caller chained before, on the caller's thread: a look from one of them must not
        // be queued behind the node being withdrawn. Three ways to give up: cancel, a timeout as orTimeout completes
        // the future with, and a completion from outside.
        String path = ZooKeeperFixture.uniquePath("stage-after-withdrawal");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        List<Consumer<CompletableFuture<Lease>>> waysToGiveUp = List.of(
                given -> given.cancel(false),
                given -> given.completeExceptionally(new TimeoutException()),
                given -> given.complete(null));
        for (int round = 0; round < 30; round++) {
            CompletableFuture<Lease> given = mutex.acquireAsync();
            AtomicReference<Boolean> looked = new AtomicReference<>();
            given.whenComplete((lease, error) -> {
                if (lease == null) {
                    boolean got = mutex.asLock().tryLock();
                    if (got) {
                        mutex.release();
                    }
                    looked.set(got);
                }
            });
            waysToGiveUp.get(round % waysToGiveUp.size()).accept(given);
            if (looked.get() == null) {
                given.join().close(); // granted before the caller gave up: nothing was withdrawn this round
            } else {
                assertTrue(looked.get(), "free, yet refused in round " + round);
            }
        }
        zk.assertNoLeaks(path);
    }

    private static List<String> ids(List<Participant> participants) {
        return participants.stream().map(Participant::id).toList();
    }
}
