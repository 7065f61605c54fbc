package io.coord.election;

import static io.coord.election.Departures.logDeparture;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.LeaseEngine;
import io.coord.core.internal.Observations;
import io.coord.core.internal.OrderedListeners;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LeaderLatch}'s place in the election: the pending request, the term it holds, and the phase they put the
 * latch in. Every phase change goes through {@link #moveTo}, which is also where listeners are told.
 */
final class LatchCandidacy {
    private static final Logger log = LoggerFactory.getLogger(LatchCandidacy.class);

    private enum Phase {
        LATENT,
        /** Queued for a term. */
        WAITING,
        /** Holding a HELD term. */
        LEADING,
        /**
         * Holding a SUSPECT term under a policy that pauses leadership: not leading until the reconnect confirms the
         * znode is still ours. Under a policy that keeps leadership, a SUSPECT term stays {@link #LEADING}.
         */
        SUSPENDED,
        /** Left the election: its client was closed. */
        FAILED,
        CLOSED
    }

    private final LeaseEngine engine;
    private final String name;
    // Grants and lease states are handled here, one at a time, in the order they happened.
    private final Executor events;
    private final OrderedListeners<LeaderListener> listeners;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    // Guarded by lock. Engine calls are made after releasing it: the engine's own locks call back into ours.
    private Phase phase = Phase.LATENT;
    private SuspensionPolicy policy = SuspensionPolicy.PAUSES_LEADERSHIP;
    private final TermRequest request;
    private Lease term;
    private Throwable failure;

    LatchCandidacy(LeaseEngine engine, String name, Executor events, OrderedListeners<LeaderListener> listeners) {
        this.engine = engine;
        this.name = name;
        this.events = events;
        this.listeners = listeners;
        this.request = new TermRequest(engine, lock);
    }

    void start() {
        SuspensionPolicy clientPolicy = SuspensionPolicy.of(engine.client());
        lock.lock();
        try {
            request.checkStartable(phase != Phase.LATENT, phase == Phase.CLOSED, name, phase);
            policy = clientPolicy;
            moveTo(Phase.WAITING);
        } finally {
            lock.unlock();
        }
        try {
            join();
        } catch (RuntimeException e) {
            leaveOnFailure(e);
            throw e;
        }
    }

    /** The term while it leads: HELD, or SUSPECT under a policy that keeps leadership; empty otherwise. */
    Optional<Lease> term() {
        lock.lock();
        try {
            return leading() ? Optional.of(term) : Optional.empty();
        } finally {
            lock.unlock();
        }
    }

    /** Waits until leading; false when the deadline passes first. */
    boolean await(Deadline deadline) throws InterruptedException {
        lock.lockInterruptibly();
        try {
            while (!leading()) {
                checkCanLead();
                long remaining = deadline.isForever() ? Long.MAX_VALUE : deadline.remainingNanos();
                if (remaining <= 0) {
                    return false;
                }
                // The grant comes with an event that this thread would have to deliver.
                BackgroundRequests.refuseOnEventThread("awaiting leadership at", engine.path());
                if (deadline.isForever()) {
                    changed.await();
                } else {
                    changed.awaitNanos(remaining);
                }
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    void close() {
        CompletableFuture<Lease> waiting;
        Lease held;
        lock.lock();
        try {
            if (phase == Phase.CLOSED) {
                return;
            }
            waiting = request.withdraw();
            held = term;
            term = null;
            moveTo(Phase.CLOSED); // notLeader() is queued before the node goes
        } finally {
            lock.unlock();
        }
        if (waiting != null) {
            waiting.cancel(false); // the engine withdraws it and deletes its node; a late grant is released
        }
        if (held != null) {
            held.close();
        }
    }

    // ---- events ----

    /** Queues for a term. The grant, and every later state of its lease, is handled on {@link #events}. */
    private void join() {
        request.send(() -> phase == Phase.WAITING && term == null, events, this::granted);
    }

    /**
     * Under {@link #lock}: takes the term, or the failure; returns what to do once the lock is released. A request
     * ZooKeeper refused is made again later (see {@link TermRequest#retryLater}); only a closed client ends the
     * candidacy.
     */
    private Runnable granted(Lease lease, Throwable error) {
        if (error != null) {
            if (engine.client().getState() != CuratorFrameworkState.STOPPED) {
                return request.retryLater(
                        log, name, error, () -> phase == Phase.WAITING && term == null, this::joinAgain);
            }
            failure = error;
            moveTo(Phase.FAILED);
            return () -> logDeparture(log, engine, name, error);
        }
        term = lease;
        return () -> {
            // Not an ordinary listener: the user's listeners on the term share its queue, and one that blocks there
            // (waiting for the latch, say) would hold back the latch's own step down. Moves come from whichever
            // thread makes them, so each is handed to the latch's queue, which reads the state the lease is in then.
            engine.onEveryState(lease, state -> events.execute(() -> termChanged(lease, lease.state())));
            // A term ends when its node goes, whoever deletes it. A term granted without the client's view has
            // nothing that hears the deletion but a holder that opted in to revocation: opting in watches the node,
            // and its first read confirms a grant made on a queue pruned since it was read, where our node may be
            // gone already. Leadership waits for that.
            engine.whenConfirmed(lease, () -> events.execute(() -> termChanged(lease, lease.state())));
            lease.onRevocationRequested(() -> {}, Runnable::run);
            // The lease may have moved before the listener was added: start from its state now.
            termChanged(lease, lease.state());
        };
    }

    /**
     * Follows the term's lease. Runs on {@link #events} with the lease's state at that moment, so a later move is
     * never undone by an earlier one handed over after it; moves there and back in between are not seen, as
     * {@link #leading()} reads the lease itself.
     */
    private void termChanged(Lease lease, LeaseState state) {
        boolean rejoin = false;
        lock.lock();
        try {
            if (lease != term) {
                return; // an earlier term, or the latch was closed
            }
            switch (state) {
                case HELD -> {
                    if (confirmedLive(lease)) {
                        moveTo(Phase.LEADING);
                    }
                }
                // Under the session policy the term leads on through SUSPECT: nothing fires unless it turns LOST.
                case SUSPECT -> {
                    if (confirmedLive(lease)) {
                        moveTo(policy == SuspensionPolicy.KEEPS_LEADERSHIP ? Phase.LEADING : Phase.SUSPENDED);
                    }
                }
                case LOST, RELEASED -> {
                    // The znode is gone or going: queue again with a new one, which can only get a later epoch.
                    term = null;
                    moveTo(Phase.WAITING);
                    rejoin = true;
                }
            }
        } finally {
            lock.unlock();
        }
        if (rejoin) {
            try {
                join();
            } catch (RuntimeException e) {
                logDeparture(log, engine, name + " (queueing again after its term)", e);
                leaveOnFailure(e);
            }
        }
    }

    /**
     * Whether the read that confirms a term found its node this session's, and the term has not ended since. A term
     * that ended counts as confirmed too (nothing waits for it any more), and a term's end can come between the look
     * at its state and this one: its LOST is on its way, and it must not lead meanwhile.
     */
    private boolean confirmedLive(Lease lease) {
        return engine.isConfirmed(lease) && !lease.ended().isDone();
    }

    /** A retry's time came, and the latch still waits: queues again. */
    private void joinAgain() {
        try {
            join();
        } catch (RuntimeException e) {
            logDeparture(log, engine, name, e);
            leaveOnFailure(e);
        }
    }

    private void leaveOnFailure(RuntimeException e) {
        lock.lock();
        try {
            if (phase == Phase.WAITING && !request.isPending() && term == null) {
                failure = e;
                moveTo(Phase.FAILED);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Adds a listener. One added while the latch leads is told {@code isLeader} with the term first, so that the
     * {@code notLeader} that ends the term always follows an {@code isLeader}. Under the lock, so that no change of
     * phase falls between the look and the registration.
     */
    void addListener(LeaderListener listener, Executor executor) {
        lock.lock();
        try {
            if (phase == Phase.LEADING) {
                Lease leaderTerm = term;
                listeners.addAndTell(listener, executor, "isLeader", l -> l.isLeader(leaderTerm));
            } else {
                listeners.add(listener, executor);
            }
        } finally {
            lock.unlock();
        }
    }

    // ---- state ----

    /** The one place the phase changes. Runs under {@link #lock}; listeners hear of it after the change. */
    private void moveTo(Phase next) {
        Phase previous = phase;
        boolean allowed = switch (previous) {
            case LATENT -> next == Phase.WAITING || next == Phase.CLOSED;
            case WAITING -> next != Phase.LATENT;
            case LEADING, SUSPENDED -> next != Phase.LATENT && next != Phase.FAILED;
            case FAILED -> next == Phase.CLOSED;
            case CLOSED -> false;
        };
        if (!allowed) {
            throw new IllegalStateException(name + " cannot move from " + previous + " to " + next);
        }
        phase = next;
        if (next == Phase.LEADING && previous != Phase.LEADING) {
            Lease leaderTerm = term;
            listeners.fire("isLeader", l -> l.isLeader(leaderTerm));
            Observations.leadershipChanged(engine, true);
        } else if (previous == Phase.LEADING && next != Phase.LEADING) {
            listeners.fire("notLeader", LeaderListener::notLeader);
            Observations.leadershipChanged(engine, false);
        }
        changed.signalAll();
    }

    /**
     * Leading needs both: the phase says so, and the lease leads right now (HELD, or SUSPECT if the policy allows),
     * even before its latest event reaches us.
     */
    private boolean leading() {
        return phase == Phase.LEADING && policy.leads(term.state());
    }

    private void checkCanLead() {
        switch (phase) {
            case LATENT -> throw new IllegalStateException("not started: " + name);
            case CLOSED -> throw new IllegalStateException("closed: " + name);
            case FAILED -> throw new CoordinationException(name + " left the election: " + failure, failure);
            default -> {}
        }
    }
}
