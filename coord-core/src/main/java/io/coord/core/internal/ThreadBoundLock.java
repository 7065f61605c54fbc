package io.coord.core.internal;

import io.coord.core.DistributedLock;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import java.time.Duration;
import java.util.List;
import java.util.Map;
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
    private final Map<Thread, Hold> holds = new ConcurrentHashMap<>();
    // Releases a thread still owes holds that ended before its current one: paid after the current hold's own.
    private final Map<Thread, Integer> owed = new ConcurrentHashMap<>();
    private final Set<Lease> asyncLeases = ConcurrentHashMap.newKeySet();
    private ThreadBoundLock readPartner; // set on a write lock
    private ThreadBoundLock writePartner; // set on a read lock

    /** Only its owning thread touches a hold, so the count needs no synchronisation. */
    private static final class Hold {
        final Lease lease;
        int count = 1;

        Hold(Lease lease) {
            this.lease = lease;
        }
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
        if (!reenter()) {
            hold(engine.acquire(null));
        }
    }

    /** Like {@link #acquire()}, but an interrupt neither ends the wait nor gives up its place: {@code Lock.lock()}. */
    void acquireUninterruptibly() {
        if (!reenter()) {
            hold(engine.acquireUninterruptibly());
        }
    }

    @Override
    public boolean acquire(Duration timeout) throws InterruptedException {
        Arguments.timeout(timeout);
        if (reenter()) {
            return true;
        }
        Lease lease = engine.acquire(timeout);
        if (lease == null) {
            return false;
        }
        hold(lease);
        return true;
    }

    @Override
    public void release() {
        Thread me = Thread.currentThread();
        Hold hold = holds.get(me);
        if (hold == null) {
            Integer left = owed.get(me);
            if (left == null) {
                throw notHeld(me, null);
            }
            if (left == 1) {
                owed.remove(me);
            } else {
                owed.put(me, left - 1);
            }
            return; // owed to a hold that ended before the one just released: quiet
        }
        if (--hold.count == 0) {
            holds.remove(me, hold);
            if (isLive(hold.lease) && !partnerShares(hold.lease)) {
                hold.lease.close();
            }
        }
    }

    @Override
    public boolean isHeldByCurrentThread() {
        return liveHold(Thread.currentThread()) != null;
    }

    @Override
    public int holdCount() {
        Hold hold = liveHold(Thread.currentThread());
        return hold == null ? 0 : hold.count;
    }

    @Override
    public boolean isAcquiredInThisProcess() {
        return holds.values().stream().anyMatch(h -> isLive(h.lease))
                || asyncLeases.stream().anyMatch(ThreadBoundLock::isLive);
    }

    @Override
    public Lease lease() {
        return ownHold().lease;
    }

    @Override
    public CompletableFuture<Lease> acquireAsync() {
        CompletableFuture<Lease> future = engine.acquireAsync();
        future.thenAccept(lease -> {
            asyncLeases.add(lease);
            lease.ended().whenComplete((state, error) -> asyncLeases.remove(lease));
        });
        return future;
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

    private void hold(Lease lease) {
        holds.put(Thread.currentThread(), new Hold(lease));
    }

    /**
     * Grants without a request when the current thread already has the lock, or holds the write lock of this read
     * lock's pair; refuses an upgrade from read to write.
     */
    private boolean reenter() {
        Thread me = Thread.currentThread();
        Hold hold = liveHold(me);
        if (hold != null) {
            hold.count++;
            return true;
        }
        Hold ended = holds.remove(me); // a hold whose lease ended: the thread queues afresh
        if (ended != null) {
            owed.merge(me, ended.count, Integer::sum); // its releases are still owed, after the new hold's
        }
        if (wouldWaitBehindItself()) {
            throw new IllegalStateException("the current thread holds the read lock on " + engine.path()
                    + " and would wait behind itself for the write lock; release the read lock first");
        }
        Hold write = writePartner == null ? null : writePartner.liveHold(me);
        if (write != null) {
            holds.put(me, new Hold(write.lease)); // downgrade: share the write lock's node
            return true;
        }
        return false;
    }

    /**
     * Whether the current thread holds this write lock's read lock and not the write lock itself: an acquisition
     * would wait behind itself, and {@link #acquire} refuses it.
     */
    boolean wouldWaitBehindItself() {
        Thread me = Thread.currentThread();
        return readPartner != null && liveHold(me) == null && readPartner.liveHold(me) != null;
    }

    /** The thread's hold while its lease has not ended; null once it has, whatever releases are still owed. */
    private Hold liveHold(Thread thread) {
        Hold hold = holds.get(thread);
        return hold != null && isLive(hold.lease) ? hold : null;
    }

    /** HELD, or SUSPECT and possibly HELD again: not yet lost or released. */
    private static boolean isLive(Lease lease) {
        LeaseState state = lease.state();
        return state == LeaseState.HELD || state == LeaseState.SUSPECT;
    }

    /** Whether the paired lock still holds {@code lease} for the current thread, so its node must stay. */
    private boolean partnerShares(Lease lease) {
        ThreadBoundLock partner = readPartner != null ? readPartner : writePartner;
        Hold hold = partner == null ? null : partner.liveHold(Thread.currentThread());
        return hold != null && hold.lease == lease;
    }

    private Hold ownHold() {
        Thread me = Thread.currentThread();
        Hold hold = liveHold(me);
        if (hold == null) {
            throw notHeld(me, holds.get(me));
        }
        return hold;
    }

    private IllegalMonitorStateException notHeld(Thread thread, Hold ended) {
        String how = ended == null ? "" : "; its lease ended " + ended.lease.state();
        return new IllegalMonitorStateException(
                "the current thread (" + thread.getName() + ") does not hold " + engine.path() + how);
    }
}
