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
 */
public final class ThreadBoundLock implements DistributedLock {
    private final LeaseEngine engine;
    private final Map<Thread, Hold> holds = new ConcurrentHashMap<>();
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
            holds.put(Thread.currentThread(), new Hold(engine.acquire(null)));
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
        holds.put(Thread.currentThread(), new Hold(lease));
        return true;
    }

    @Override
    public void release() {
        Hold hold = ownHold();
        if (--hold.count == 0) {
            holds.remove(Thread.currentThread());
            if (!partnerShares(hold.lease)) {
                hold.lease.close();
            }
        }
    }

    @Override
    public boolean isHeldByCurrentThread() {
        Hold hold = holds.get(Thread.currentThread());
        return hold != null && isLive(hold.lease);
    }

    @Override
    public int holdCount() {
        Hold hold = holds.get(Thread.currentThread());
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
    public Lock asLock() {
        return new LockView(this);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + engine.path() + "]";
    }

    /**
     * Grants without a request when the current thread already has the lock, or holds the write lock of this read
     * lock's pair; refuses an upgrade from read to write.
     */
    private boolean reenter() {
        Thread me = Thread.currentThread();
        Hold hold = holds.get(me);
        if (hold != null) {
            checkNotLost(hold);
            hold.count++;
            return true;
        }
        if (readPartner != null && readPartner.holds.containsKey(me)) {
            throw new IllegalStateException("the current thread holds the read lock on " + engine.path()
                    + " and would wait behind itself for the write lock; release the read lock first");
        }
        Hold write = writePartner == null ? null : writePartner.holds.get(me);
        if (write != null) {
            checkNotLost(write);
            holds.put(me, new Hold(write.lease)); // downgrade: share the write lock's node
            return true;
        }
        return false;
    }

    /** HELD, or SUSPECT and possibly HELD again: not yet lost or released. */
    private static boolean isLive(Lease lease) {
        LeaseState state = lease.state();
        return state == LeaseState.HELD || state == LeaseState.SUSPECT;
    }

    private void checkNotLost(Hold hold) {
        if (hold.lease.state() == LeaseState.LOST) {
            throw new IllegalStateException("the lease on " + engine.path()
                    + " was lost; release() it before acquiring again (hold count " + hold.count + ")");
        }
    }

    /** Whether the paired lock still holds {@code lease} for the current thread, so its node must stay. */
    private boolean partnerShares(Lease lease) {
        ThreadBoundLock partner = readPartner != null ? readPartner : writePartner;
        Hold hold = partner == null ? null : partner.holds.get(Thread.currentThread());
        return hold != null && hold.lease == lease;
    }

    private Hold ownHold() {
        Hold hold = holds.get(Thread.currentThread());
        if (hold == null) {
            throw new IllegalMonitorStateException(
                    "the current thread (" + Thread.currentThread().getName() + ") does not hold " + engine.path());
        }
        return hold;
    }
}
