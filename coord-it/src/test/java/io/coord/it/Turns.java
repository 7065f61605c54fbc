package io.coord.it;

import io.coord.core.DistributedLock;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.semaphore.DistributedSemaphore;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.curator.framework.CuratorFramework;

/**
 * Workers' turns under an {@link ExclusionChecker}: acquire with a timeout, do some work only while the lease is
 * valid, release. Timeouts and failures are counted, not thrown, so that a run goes on.
 *
 * <p>Most turns are short. One in {@link #LONG_HOLD_ONE_IN} holds on for {@link #LONG_HOLD}, as real work does, so that
 * faults land inside holds: the holder acts every {@link #ACT_EVERY}, each act checked against every other valid
 * holder; it stops acting and leaves while its lease is SUSPECT, comes back if the lease turns HELD again (where the
 * checker requires that no later holder has entered meanwhile), and stops once the lease is LOST. A hold that is
 * SUSPECT when its time is up waits for the verdict. A holder whose znode the servers have already deleted goes on
 * until its lease tells it, however long its hold was meant to be, so that {@link StaleHolders#LIMIT} bounds how long
 * a client believes in a hold its session no longer has.
 */
final class Turns {
    static final int LONG_HOLD_ONE_IN = 20;
    static final Duration LONG_HOLD = Duration.ofMillis(300);
    private static final Duration ACT_EVERY = Duration.ofMillis(1);
    // A stale holder that is never told, or a suspended one never given a verdict, still ends: past the stale limit
    // (which the checker flags), and past the time a session takes to end.
    private static final Duration GIVE_UP = StaleHolders.LIMIT.multipliedBy(2);

    /** Waits up to the timeout for a lease; empty when it timed out. */
    @FunctionalInterface
    private interface Acquisition {
        Optional<Lease> within(Duration timeout) throws InterruptedException;
    }

    private final ExclusionChecker checker;
    private final Timeline timeline;
    private final Duration acquireTimeout;
    private final List<String> errors = new CopyOnWriteArrayList<>();
    private final AtomicInteger timeouts = new AtomicInteger();
    private final AtomicInteger lostOnGrant = new AtomicInteger();
    private final AtomicInteger longHolds = new AtomicInteger();
    private final AtomicInteger longHoldsSuspended = new AtomicInteger();
    private final AtomicInteger longHoldsResumed = new AtomicInteger();
    private final AtomicInteger longHoldsLost = new AtomicInteger();

    Turns(ExclusionChecker checker, Timeline timeline, Duration acquireTimeout) {
        this.checker = checker;
        this.timeline = timeline;
        this.acquireTimeout = acquireTimeout;
    }

    /** One turn of the calling thread on {@code lock}, entering the checker in {@code mode}. */
    void take(String worker, CuratorFramework client, DistributedLock lock, ExclusionChecker.Mode mode, long workNanos)
            throws InterruptedException {
        take(
                worker,
                client,
                mode,
                workNanos,
                timeout -> granted(worker, lock, timeout),
                lease -> lock.release(),
                lock::participants);
    }

    /** One turn on {@code semaphore} for {@code mode.permits()} permits, entering the checker in {@code mode}. */
    void take(
            String worker,
            CuratorFramework client,
            DistributedSemaphore semaphore,
            ExclusionChecker.Mode mode,
            long workNanos)
            throws InterruptedException {
        take(
                worker,
                client,
                mode,
                workNanos,
                timeout -> semaphore.tryAcquire(mode.permits(), timeout),
                Lease::close,
                semaphore::participants);
    }

    /**
     * The lease of a granted thread-bound hold. A hold ends with its lease, so a lease lost between the grant and
     * {@code lease()} (the holder's session expired at that moment) leaves nothing to read: the thread then pays
     * the release it owes, a quiet no-op, and the turn is over.
     */
    private Optional<Lease> granted(String worker, DistributedLock lock, Duration timeout) throws InterruptedException {
        if (!lock.acquire(timeout)) {
            return Optional.empty();
        }
        try {
            return Optional.of(lock.lease());
        } catch (IllegalMonitorStateException e) {
            lock.release();
            lostOnGrant.incrementAndGet();
            throw new HoldEnded(worker + " lost its hold as soon as it was granted: " + e.getMessage());
        }
    }

    /** A granted hold that had already ended when its lease was asked for. */
    private static final class HoldEnded extends RuntimeException {
        private static final long serialVersionUID = 1L;

        HoldEnded(String message) {
            super(message, null, false, false);
        }
    }

    /** Holds that ended between their grant and the first look at their lease. */
    int lostOnGrant() {
        return lostOnGrant.get();
    }

    /** Acquisitions that failed with an exception; a healthy run has none. */
    List<String> errors() {
        return List.copyOf(errors);
    }

    int timeouts() {
        return timeouts.get();
    }

    /** The long holds, and what faults did to them, for run summaries. */
    String describeLongHolds() {
        return longHolds.get() + " long holds (" + longHoldsSuspended.get() + " suspended, " + longHoldsResumed.get()
                + " resumed, " + longHoldsLost.get() + " lost)";
    }

    private void take(
            String worker,
            CuratorFramework client,
            ExclusionChecker.Mode mode,
            long workNanos,
            Acquisition acquisition,
            Consumer<Lease> release,
            Supplier<List<Participant>> queue)
            throws InterruptedException {
        Optional<Lease> granted;
        try {
            granted = acquisition.within(acquireTimeout);
        } catch (HoldEnded e) {
            timeline.add(e.getMessage());
            return;
        } catch (RuntimeException e) {
            // Waiting rides out connection loss and expiry; only a closed client or a hard error ends it.
            String error =
                    worker + " failed to acquire " + mode.name() + " at " + timeline.at(System.nanoTime()) + ": " + e;
            timeline.add(error);
            errors.add(error);
            return;
        }
        if (granted.isEmpty()) {
            timeouts.incrementAndGet();
            timeline.add(worker + " timed out on " + mode.name() + "; the queue is " + describe(queue));
            return;
        }
        Lease lease = granted.get();
        try {
            lease.addStateListener(state -> timeline.add(worker + ": " + lease.path() + " is " + state), Runnable::run);
            long sessionId = ClusterFixture.sessionId(client);
            if (ThreadLocalRandom.current().nextInt(LONG_HOLD_ONE_IN) == 0) {
                holdLong(worker, mode, lease, sessionId);
                return;
            }
            checker.enter(worker, mode, lease, sessionId).ifPresent(holder -> {
                // The protected work: tiny, and abandoned as soon as the lease is no longer valid.
                if (lease.isValid()) {
                    LockSupport.parkNanos(workNanos);
                }
                checker.exit(holder);
            });
        } finally {
            release.accept(lease);
        }
    }

    /** A long hold: acts while the lease is valid, leaves while it is SUSPECT, ends when it is LOST (see above). */
    private void holdLong(String worker, ExclusionChecker.Mode mode, Lease lease, long sessionId) {
        longHolds.incrementAndGet();
        long end = System.nanoTime() + LONG_HOLD.toNanos();
        long giveUp = end + GIVE_UP.toNanos();
        boolean suspended = false;
        Optional<ExclusionChecker.Holder> inside = checker.enter(worker, mode, lease, sessionId);
        try {
            while (System.nanoTime() - giveUp < 0) {
                LeaseState state = lease.state();
                if (state == LeaseState.LOST || state == LeaseState.RELEASED) {
                    if (state == LeaseState.LOST) {
                        longHoldsLost.incrementAndGet();
                    }
                    return;
                }
                if (state == LeaseState.HELD) {
                    if (inside.isEmpty()) {
                        inside = checker.enter(worker, mode, lease, sessionId);
                        if (suspended && inside.isPresent()) {
                            longHoldsResumed.incrementAndGet();
                        }
                    }
                    inside.ifPresent(checker::act);
                } else {
                    if (!suspended) {
                        suspended = true;
                        longHoldsSuspended.incrementAndGet();
                    }
                    inside.ifPresent(checker::exit);
                    inside = Optional.empty();
                }
                if (System.nanoTime() - end >= 0 && inside.isPresent() && !checker.isStale(inside.get())) {
                    return;
                }
                LockSupport.parkNanos(ACT_EVERY.toNanos());
            }
        } finally {
            inside.ifPresent(checker::exit);
        }
    }

    private static String describe(Supplier<List<Participant>> queue) {
        try {
            return queue.get().toString();
        } catch (RuntimeException e) {
            return "unreadable (" + e + ")";
        }
    }
}
