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
 */
public final class ThreadBoundLock implements DistributedLock {
    private final LeaseEngine engine;
    private final Map<Thread, Hold> holds = new ConcurrentHashMap<>();
    private final Set<Lease> asyncLeases = ConcurrentHashMap.newKeySet();

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
            hold.lease.close();
        }
    }

    @Override
    public boolean isHeldByCurrentThread() {
        Hold hold = holds.get(Thread.currentThread());
        return hold != null && hold.lease.state() != LeaseState.LOST;
    }

    @Override
    public int holdCount() {
        Hold hold = holds.get(Thread.currentThread());
        return hold == null ? 0 : hold.count;
    }

    @Override
    public boolean isAcquiredInThisProcess() {
        return !holds.isEmpty() || asyncLeases.stream().anyMatch(l -> l.state() != LeaseState.LOST);
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

    /** Counts one more hold if the current thread already has the lock. */
    private boolean reenter() {
        Hold hold = holds.get(Thread.currentThread());
        if (hold == null) {
            return false;
        }
        if (hold.lease.state() == LeaseState.LOST) {
            throw new IllegalStateException("the lease on " + engine.path()
                    + " was lost; release() it before acquiring again (hold count " + hold.count + ")");
        }
        hold.count++;
        return true;
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
