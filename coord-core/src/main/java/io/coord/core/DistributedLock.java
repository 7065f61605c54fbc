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
     * Like {@link #acquire()} but gives up after {@code timeout}; {@link Duration#ZERO} looks at the queue once. A
     * timeout that runs out before the queue was looked at once (one shorter than a round trip) still gets that look,
     * as {@code tryLock} with a timeout gets a free {@link java.util.concurrent.locks.ReentrantLock}; like a zero
     * timeout's, the look ends refused if the connection drops.
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
     * released at once. Only the returned future does that: cancelling a stage chained on it leaves the request queued.
     * A {@code get()} or {@code join()} of the future on ZooKeeper's event thread, which delivers the grant, gives
     * the request up and throws {@link IllegalStateException} unless the future is complete already.
     *
     * @throws IllegalStateException if the client was never started
     * @throws CoordinationException if the client is closed; nothing is sent
     */
    CompletableFuture<Lease> acquireAsync();

    /** Holders and waiters in queue order. */
    List<Participant> participants();

    /**
     * Asks {@code holder} to let go: writes the data Curator's {@code Revoker} writes ({@code __REVOKE__}) on the
     * holder's node, which a coord holder hears through {@link Lease#onRevocationRequested} and a revocable Curator
     * {@code InterProcessMutex} through its revocation listener. Cooperative: a holder that did not opt in keeps the
     * lock. The request replaces the node's data, where the participant id lives, so {@link #participants()} lists
     * that holder with the id {@code __REVOKE__} until its hold ends. Costs three requests: a children read, a read of
     * the node and a write conditional on it, so that a write retried after a lost reply is not delivered twice.
     *
     * @param holder a participant of this lock, as {@link #participants()} lists it
     * @return whether the request was written; false when that participant does not hold the lock (any more), and
     *     nothing was written, with one exception: when the connection drops while the write is on its way, Curator
     *     sends it again, and if the first one had landed and the holder let go at once, the second finds no node and
     *     this answers false although the holder was asked
     * @throws NullPointerException if {@code holder} is null
     * @throws IllegalArgumentException if {@code holder} names no node of this lock's kind
     * @throws CoordinationException if ZooKeeper refused the read or the write (for example without write
     *     permission on the node), or could not be reached within the client's retry policy, naming the node
     */
    boolean requestRevocation(Participant holder);

    /**
     * Evicts {@code holder}: deletes its node. Its lease turns {@link LeaseState#LOST} and the next waiter is granted.
     * The holder learns of it at once when its client has a live view of the path, when it registered {@link
     * Lease#onRevocationRequested}, or when a waiter of its own client hears the deletion; otherwise (predecessor
     * watches, and a client's first hold on a path, when it has no view yet) only when its connection next drops and
     * comes back, or when it releases. <b>Only safe with
     * fencing:</b> the evicted holder may still be working, and what stops its writes is that its fencing token is
     * smaller than the next holder's, which the protected resource (or {@link Lease#fencedCheck()}) must enforce.
     *
     * @param holder a participant of this lock, as {@link #participants()} lists it
     * @return whether its node was deleted; false when that participant does not hold the lock (any more), and
     *     nothing was deleted, with one exception: when the connection drops while the delete is on its way, Curator
     *     sends it again, and if the first one had landed, the second finds no node and this answers false although
     *     the holder was evicted (its lease turns LOST)
     * @throws NullPointerException if {@code holder} is null
     * @throws IllegalArgumentException if {@code holder} names no node of this lock's kind
     * @throws CoordinationException if ZooKeeper refused the read or the delete (for example without delete
     *     permission on the path), or could not be reached within the client's retry policy, naming the path
     */
    boolean forceRevocation(Participant holder);

    /** This lock as a {@link Lock}, bound to threads like {@link #acquire()}; {@code newCondition()} is unsupported. */
    Lock asLock();
}
