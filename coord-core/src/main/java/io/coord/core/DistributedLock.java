package io.coord.core;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Lock;

/**
 * A lock shared across processes through ZooKeeper.
 *
 * <p>Two ways to hold it: the thread-owned, reentrant {@link #acquire()} / {@link #release()} pair, where each thread
 * has its own hold count and two threads on one instance contend like two processes; and the handle-owned
 * {@link #acquireAsync()}, whose {@link Lease} any thread may close.
 */
public interface DistributedLock {

    /** The lock's ZooKeeper path. */
    String path();

    /**
     * Blocks until the current thread holds the lock, or increments its hold count if it already does. Waits through
     * connection loss and session expiry, queueing again on a new session if needed.
     *
     * @throws InterruptedException if the thread is interrupted; nothing is left behind
     * @throws CoordinationException if the client is closed or ZooKeeper refuses the request for good
     */
    void acquire() throws InterruptedException;

    /**
     * Like {@link #acquire()} but gives up after {@code timeout}; {@link Duration#ZERO} looks at the queue once.
     *
     * @return whether the current thread now holds the lock
     */
    boolean acquire(Duration timeout) throws InterruptedException;

    /**
     * Decrements the current thread's hold count and releases the lock when it reaches zero.
     *
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     */
    void release();

    /** Whether the current thread holds the lock and its lease is not lost. */
    boolean isHeldByCurrentThread();

    /** The current thread's reentrant hold count, 0 if it does not hold the lock. */
    int holdCount();

    /** Whether any thread, or any lease from {@link #acquireAsync()}, holds the lock through this instance. */
    boolean isAcquiredInThisProcess();

    /**
     * The current thread's lease.
     *
     * @throws IllegalMonitorStateException if the current thread does not hold the lock
     */
    Lease lease();

    /**
     * Queues for the lock without blocking a thread. Not reentrant and not bound to a thread. Cancelling the future,
     * or completing it from outside, withdraws the request and deletes its znode; a lease granted after that is
     * released at once.
     */
    CompletableFuture<Lease> acquireAsync();

    /** Holders and waiters in queue order. */
    List<Participant> participants();

    /** This lock as a {@link Lock}, bound to threads like {@link #acquire()}; {@code newCondition()} is unsupported. */
    Lock asLock();
}
