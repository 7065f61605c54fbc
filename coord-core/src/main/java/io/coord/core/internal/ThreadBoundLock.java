package io.coord.core.internal;

import io.coord.core.DistributedLock;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;

/**
 * A {@link DistributedLock} over one engine: holds are per thread and reentrant, async leases belong to their
 * handle. Two threads on one instance contend like two processes.
 *
 * <p>Two locks over one queue can be {@linkplain #pair paired} as a read and a write lock. The thread that holds the
 * write lock then takes the read lock without a new node: it shares the write lock's node, which stays in the queue
 * until both holds are released. That keeps every writer queued behind it blocked through a downgrade. A thread that
 * holds only the read lock is refused the write lock, since it would wait behind its own node for ever.
 *
 * <p>A hold ends when its lease ends, however it ends: released by {@link #release()}, closed directly through
 * {@link #lease()}, or lost. From then on the thread does not hold the lock: {@link #holdCount()} is 0, {@link
 * #lease()} throws, and a new {@code acquire} queues afresh with a new node instead of re-entering. The releases the
 * thread still owes the ended hold (one per acquire, as in {@code try/finally}) are quiet no-ops; one more throws
 * {@link IllegalMonitorStateException}.
 */
public final class ThreadBoundLock implements DistributedLock {
    private final LeaseEngine engine;
    // Per thread, so that what a thread leaves here goes with it: a thread per task that ends its holds through the
    // lease, and never calls release(), leaves nothing behind in the lock.
    private final ThreadLocal<Holder> holders = ThreadLocal.withInitial(Holder::new);
    // Every lease, thread-bound or async, that holds through this lock and has not ended yet.
    private final Set<Lease> live = ConcurrentHashMap.newKeySet();
    // The leases whose end this lock listens for, once each: a write lease that a thread downgrades again and again
    // while it holds it gets one listener, not one per downgrade.
    private final Set<Lease> listened = ConcurrentHashMap.newKeySet();
    // Set once, by pair(); volatile so that a lock handed to another thread without other synchronisation still
    // knows its partner (else a read under a write would queue behind the thread's own write node for ever).
    private volatile ThreadBoundLock readPartner; // set on a write lock
    private volatile ThreadBoundLock writePartner; // set on a read lock

    /** One thread's side of the lock; only that thread touches it, so it needs no synchronisation. */
    private static final class Holder {
        Lease lease; // the current hold's, null for none
        int count;
        // Releases the thread still owes holds that ended before its current one: paid after the current hold's own.
        int owed;
        // The lease of the thread's last hold if it ended before the thread let go and no hold came after it, so that
        // lease() can still say how it ended once the owed releases are made, or a new acquisition has put it aside.
        Lease ended;
    }

    public ThreadBoundLock(LeaseEngine engine) {
        this.engine = engine;
    }

    /** Makes {@code read} and {@code write}, two locks over one path, a read/write pair. */
    public static void pair(ThreadBoundLock read, ThreadBoundLock write) {
        read.writePartner = write;
        write.readPartner = read;
    }

    @Override
    public String path() {
        return engine.path();
    }

    @Override
    public void acquire() throws InterruptedException {
        engine.checkNotInterrupted(); // as ReentrantLock.lockInterruptibly(), even when the thread holds the lock
        if (!reenter()) {
            hold(engine.acquire(null));
        }
    }

    /** Like {@link #acquire()}, but an interrupt neither ends the wait nor gives up its place: {@code Lock.lock()}. */
    void acquireUninterruptibly() {
        if (!reenter()) {
            hold(engine.acquireUninterruptibly(false));
        }
    }

    /**
     * One look, which an interrupt neither ends nor undoes, so that a free lock is taken whatever the interrupt flag
     * says: {@code Lock.tryLock()}.
     */
    boolean tryAcquireUninterruptibly() {
        if (reenter()) {
            return true;
        }
        return holdIfGranted(engine.acquireUninterruptibly(true));
    }

    @Override
    public boolean acquire(Duration timeout) throws InterruptedException {
        Arguments.timeout(timeout);
        engine.checkNotInterrupted(); // as ReentrantLock.tryLock(time, unit), even when the thread holds the lock
        if (reenter()) {
            return true;
        }
        return holdIfGranted(engine.acquire(timeout));
    }

    @Override
    public void release() {
        Holder me = holders.get();
        if (me.lease == null) {
            if (me.owed == 0) {
                throw notHeld(null);
            }
            me.owed--;
            return; // owed to a hold that ended before the one just released: quiet
        }
        if (--me.count == 0) {
            Lease lease = me.lease;
            me.lease = null;
            live.remove(lease); // not through this lock any more, though its partner may still hold the lease
            if (!isLive(lease)) {
                me.ended = lease; // lease() says how the hold ended until the thread holds again
            } else if (!partnerShares(lease)) {
                lease.close();
            }
        }
    }

    @Override
    public boolean isHeldByCurrentThread() {
        return liveHold() != null;
    }

    @Override
    public int holdCount() {
        Holder me = liveHold();
        return me == null ? 0 : me.count;
    }

    @Override
    public boolean isAcquiredInThisProcess() {
        return live.stream().anyMatch(ThreadBoundLock::isLive);
    }

    @Override
    public Lease lease() {
        Holder me = holders.get();
        if (me.lease == null || !isLive(me.lease)) {
            throw notHeld(me.lease != null ? me.lease : me.ended);
        }
        return me.lease;
    }

    /** The lease counts as this lock's before the caller hears of it, even in a callback it chained on. */
    @Override
    public CompletableFuture<Lease> acquireAsync() {
        refuseUpgrade();
        return engine.acquireAsync(this::track);
    }

    @Override
    public List<Participant> participants() {
        return engine.participants();
    }

    @Override
    public boolean requestRevocation(Participant holder) {
        return engine.requestRevocation(holder);
    }

    @Override
    public boolean forceRevocation(Participant holder) {
        return engine.forceRevocation(holder);
    }

    @Override
    public Lock asLock() {
        return new LockView(this);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + engine.path() + "]";
    }

    /** Holds a lease granted to a look or a timed wait; false if there was none. */
    private boolean holdIfGranted(Lease lease) {
        if (lease == null) {
            return false;
        }
        hold(lease);
        return true;
    }

    private void hold(Lease lease) {
        Holder me = holders.get();
        me.lease = lease;
        me.count = 1;
        me.ended = null;
        track(lease);
    }

    /** Counts the lease as held through this lock until it ends, or its thread's hold does. */
    private void track(Lease lease) {
        live.add(lease);
        if (listened.add(lease)) {
            lease.ended().whenComplete((state, error) -> {
                live.remove(lease);
                listened.remove(lease);
            });
        }
    }

    /**
     * Grants without a request when the current thread already has the lock, or holds the write lock of this read
     * lock's pair; refuses an upgrade from read to write.
     */
    private boolean reenter() {
        Holder me = holders.get();
        if (me.lease != null && isLive(me.lease)) {
            me.count++;
            return true;
        }
        if (me.lease != null) { // a hold whose lease ended: the thread queues afresh
            me.owed += me.count; // its releases are still owed, after the new hold's
            me.ended = me.lease;
            me.lease = null;
        }
        refuseUpgrade();
        Holder write = writePartner == null ? null : writePartner.liveHold();
        if (write != null) {
            hold(write.lease); // downgrade: share the write lock's node
            return true;
        }
        return false;
    }

    /**
     * Refuses the write lock to a thread that holds only its read lock, whichever way it asks: behind its own read node
     * it would wait for ever, and an asynchronous acquisition it then waited for would too.
     */
    private void refuseUpgrade() {
        if (wouldWaitBehindItself()) {
            throw new IllegalStateException("the current thread holds the read lock on " + engine.path()
                    + " and would wait behind itself for the write lock; release the read lock first");
        }
    }

    /**
     * Whether the current thread holds this write lock's read lock and not the write lock itself: an acquisition
     * would wait behind itself, and {@link #acquire} refuses it.
     */
    boolean wouldWaitBehindItself() {
        return readPartner != null && liveHold() == null && readPartner.liveHold() != null;
    }

    /** The current thread's side while its hold's lease has not ended; null once it has, or with no hold. */
    private Holder liveHold() {
        Holder me = holders.get();
        return me.lease != null && isLive(me.lease) ? me : null;
    }

    /** HELD, or SUSPECT and possibly HELD again: not yet lost or released. */
    private static boolean isLive(Lease lease) {
        LeaseState state = lease.state();
        return state == LeaseState.HELD || state == LeaseState.SUSPECT;
    }

    /** Whether the paired lock still holds {@code lease} for the current thread, so its node must stay. */
    private boolean partnerShares(Lease lease) {
        ThreadBoundLock partner = readPartner != null ? readPartner : writePartner;
        Holder hold = partner == null ? null : partner.liveHold();
        return hold != null && hold.lease == lease;
    }

    /** {@code ended} is the lease of the thread's hold that ended, or null if it has none. */
    private IllegalMonitorStateException notHeld(Lease ended) {
        String how = ended == null ? "" : "; its lease ended " + ended.state();
        return new IllegalMonitorStateException(
                "the current thread (" + Thread.currentThread().getName() + ") does not hold " + engine.path() + how);
    }
}
