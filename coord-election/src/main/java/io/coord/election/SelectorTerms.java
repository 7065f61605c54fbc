package io.coord.election;

import static io.coord.election.Departures.logDeparture;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.internal.LeaseEngine;
import io.coord.core.internal.Observations;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LeaderSelector}'s terms: queueing, handing each grant to the selector's own thread, interrupting the task
 * when the term stops leading (LOST, or SUSPECT unless the client's policy keeps leadership through it), and
 * releasing the term when the task returns. Every phase change goes through {@link #moveTo}.
 */
final class SelectorTerms {
    private static final Logger log = LoggerFactory.getLogger(SelectorTerms.class);
    private static final AtomicInteger THREAD_IDS = new AtomicInteger();

    private enum Phase {
        LATENT,
        /** Started, not queued: the last term ended and nobody asked for another. */
        IDLE,
        QUEUED,
        /** Granted a term, from the grant until the task returns. */
        LEADING,
        CLOSED
    }

    private final LeaseEngine engine;
    private final String name;
    private final LeadershipTask task;
    // The one thread that runs the task. It starts with the first term and ends after an idle spell or close().
    private final ThreadPoolExecutor runner;

    // Set once by start(); read by lease listeners on other threads.
    private volatile SuspensionPolicy policy = SuspensionPolicy.PAUSES_LEADERSHIP;

    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock. Engine calls are made after releasing it, because the engine's locks call back into ours.
    private Phase phase = Phase.LATENT;
    private boolean autoRequeue;
    private Lease term;
    private Thread leaderThread;
    // Whether observers were told that the task leads, and not yet that it stopped: told as the task starts, and as
    // its term stops leading or the task returns, whichever comes first.
    private boolean reportedLeading;
    private Lease stoppedUnreported; // a term that stopped leading after its task was handed it, before it was reported
    private final TermRequest request;

    SelectorTerms(LeaseEngine engine, String name, LeadershipTask task) {
        this.engine = engine;
        this.name = name;
        this.task = task;
        String threadName = "coord-leader-selector-" + THREAD_IDS.incrementAndGet();
        this.runner = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
        runner.allowCoreThreadTimeOut(true);
        this.request = new TermRequest(engine, lock);
    }

    void start() {
        SuspensionPolicy clientPolicy = SuspensionPolicy.of(engine.client());
        lock.lock();
        try {
            request.checkStartable(phase != Phase.LATENT, phase == Phase.CLOSED, name, phase);
            policy = clientPolicy;
            moveTo(Phase.QUEUED);
        } finally {
            lock.unlock();
        }
        join();
    }

    void autoRequeue() {
        lock.lock();
        try {
            autoRequeue = true;
        } finally {
            lock.unlock();
        }
    }

    boolean requeue() {
        lock.lock();
        try {
            switch (phase) {
                case LATENT -> throw new IllegalStateException("not started: " + name);
                case IDLE -> moveTo(Phase.QUEUED);
                default -> {
                    return false;
                }
            }
        } finally {
            lock.unlock();
        }
        join();
        return true;
    }

    /**
     * Withdraws a queued attempt that was not granted yet, so that the selector is IDLE and {@link #requeue()} can
     * queue it again. False in any other phase.
     */
    boolean cancelQueued() {
        CompletableFuture<Lease> waiting;
        lock.lock();
        try {
            if (phase != Phase.QUEUED) {
                return false;
            }
            // A grant already on its way finds itself unwanted and releases its lease; a retry due later does nothing.
            waiting = request.withdraw();
            moveTo(Phase.IDLE);
        } finally {
            lock.unlock();
        }
        // Null while join() is still between its create and taking the lock: it finds itself withdrawn, and cancels
        // its own, even if a requeue() has queued the selector again meanwhile.
        if (waiting != null) {
            waiting.cancel(false); // the engine withdraws it and deletes its node
        }
        return true;
    }

    /** The task runs, and its term leads right now, even before the interrupt of a term that stopped leading lands. */
    boolean hasLeadership() {
        Lease running;
        lock.lock();
        try {
            running = leaderThread != null ? term : null;
        } finally {
            lock.unlock();
        }
        if (running == null) {
            return false;
        }
        // Asked outside the lock: a lease may take the client's lock to answer, and the client's lock is held while a
        // lease moves, which takes ours to interrupt the task. Then confirmed: the task may have returned meanwhile.
        LeaseState state = running.state();
        lock.lock();
        try {
            return term == running && leaderThread != null && policy.leads(state);
        } finally {
            lock.unlock();
        }
    }

    void interruptLeadership() {
        lock.lock();
        try {
            if (leaderThread != null) {
                leaderThread.interrupt();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Withdraws, interrupts, and lets the runner end once the term already handed over has released its lease. */
    void close() {
        CompletableFuture<Lease> waiting;
        lock.lock();
        try {
            if (phase == Phase.CLOSED) {
                return;
            }
            waiting = request.withdraw();
            moveTo(Phase.CLOSED);
            if (leaderThread != null) {
                leaderThread.interrupt();
            }
        } finally {
            lock.unlock();
        }
        runner.shutdown(); // a term already handed over still runs, sees CLOSED and releases its lease
        if (waiting != null) {
            waiting.cancel(false); // the engine withdraws it and deletes its node; a late grant is released
        }
    }

    // ---- terms ----

    private void join() {
        try {
            // The grant is handed over on coord's callback thread; the runner, never that thread, runs the task.
            request.send(() -> phase == Phase.QUEUED, Runnable::run, this::granted);
        } catch (RuntimeException e) {
            lock.lock();
            try {
                if (phase == Phase.QUEUED && !request.isPending()) {
                    moveTo(Phase.IDLE);
                }
            } finally {
                lock.unlock();
            }
            throw e;
        }
    }

    /**
     * Under {@link #lock}: takes the term, or the failure; returns what to do once the lock is released. A failed
     * attempt of an auto-requeueing selector is made again later, unless its client was closed: what ZooKeeper refused
     * (a create throttled, over a quota, or under an ACL that is put right later) may be granted next time.
     */
    private Runnable granted(Lease lease, Throwable error) {
        term = lease;
        if (error != null && autoRequeue && engine.client().getState() != CuratorFrameworkState.STOPPED) {
            return request.retryLater(log, name, error, () -> phase == Phase.QUEUED, this::joinAgain);
        }
        moveTo(error == null ? Phase.LEADING : Phase.IDLE);
        if (error != null) {
            return () -> logDeparture(log, engine, name + " (requeue() to try again)", error);
        }
        return () -> {
            // Runs on whichever thread moves the lease, possibly under the engine's locks, and no listener the task
            // adds to its term can hold it back: it only interrupts.
            engine.onEveryState(lease, state -> termChanged(lease, state));
            // A term ends when its node goes, whoever deletes it (see LatchCandidacy.granted): opting in to
            // revocation watches the node, and confirms a grant whose node may be gone; the task waits for that.
            engine.whenConfirmed(lease, () -> {
                try {
                    runner.execute(() -> runTerm(lease));
                } catch (RejectedExecutionException e) {
                    endTerm(lease, false); // closed between the grant and now
                }
            });
            lease.onRevocationRequested(() -> {}, Runnable::run);
        };
    }

    /** A retry's time came, and the selector is still queued: queues again. */
    private void joinAgain() {
        try {
            join();
        } catch (RuntimeException e) {
            logDeparture(log, engine, name, e);
        }
    }

    private void termChanged(Lease lease, LeaseState state) {
        // HELD after SUSPECT is the same term going on. RELEASED after the task returned finds the term over; before,
        // the task closed its own term, and the next leader may start: the task must stop as for any other end.
        if (!policy.leads(state)) {
            lock.lock();
            try {
                if (lease == term && leaderThread != null) {
                    leaderThread.interrupt();
                    if (!reportedLeading) {
                        stoppedUnreported = lease; // so that the task's start is not reported after its stop
                    }
                    reportStopped();
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /** Runs on the runner thread. */
    private void runTerm(Lease lease) {
        // A grant whose node was never seen may have been made on a node already gone: as if never made, the
        // selector queues again, whether or not it requeues by itself.
        boolean neverMade = engine.endedUnconfirmed(lease);
        boolean run;
        lock.lock();
        try {
            run = phase == Phase.LEADING && term == lease;
            if (run) {
                leaderThread = Thread.currentThread();
            }
        } finally {
            lock.unlock();
        }
        try {
            // Checked after leaderThread is set: a later change that ends leadership interrupts us, an earlier one is
            // seen here.
            if (run && neverMade) {
                log.info("{}: its node was gone before its term was confirmed, so it queues again", name);
            } else if (run && !policy.leads(lease.state())) {
                // As a task interrupted at once; the selector queues again only if it requeues by itself.
                log.info("{}: its term stopped leading before its task started, so the task did not run", name);
            } else if (run && reportStarted(lease)) {
                task.takeLeadership(lease);
            }
        } catch (InterruptedException e) {
            log.debug("{} was interrupted while leading", name);
        } catch (Exception | Error e) {
            log.warn("{}: takeLeadership failed, so its term ends", name, e);
            if (e instanceof VirtualMachineError fatal) {
                throw fatal; // the JVM is in no state to go on as if nothing happened
            }
        } finally {
            endTerm(lease, neverMade);
        }
    }

    /** Ends the term; the selector queues again if it requeues by itself, or if the term was {@code neverMade}. */
    private void endTerm(Lease lease, boolean neverMade) {
        boolean again = false;
        lock.lock();
        try {
            if (term == lease) {
                if (leaderThread == Thread.currentThread()) {
                    // Nothing interrupts this thread for this term any more: clear what was meant for it, so that
                    // it cannot leak into the next term.
                    Thread.interrupted();
                }
                reportStopped();
                term = null;
                leaderThread = null;
                stoppedUnreported = null;
                if (phase == Phase.LEADING) {
                    // A closed client ends the election for it all the same.
                    again = autoRequeue || (neverMade && engine.client().getState() != CuratorFrameworkState.STOPPED);
                    moveTo(again ? Phase.QUEUED : Phase.IDLE);
                }
            }
        } finally {
            lock.unlock();
        }
        // The next attempt's create is sent before this term's delete, and one session's requests are served in
        // order: it queues behind everyone already waiting, and ahead of whoever leads next, so that requeueing
        // selectors take turns in one order, round after round.
        try {
            if (again) {
                join();
            }
        } catch (RuntimeException e) {
            logDeparture(log, engine, name + " (queueing again after its term)", e);
        } finally {
            lease.close();
        }
    }

    /** The one place the phase changes. Runs under {@link #lock}. */
    private void moveTo(Phase next) {
        boolean allowed = switch (phase) {
            case LATENT, IDLE -> next == Phase.QUEUED || next == Phase.CLOSED;
            case QUEUED -> next == Phase.LEADING || next == Phase.IDLE || next == Phase.CLOSED;
            case LEADING -> next == Phase.IDLE || next == Phase.QUEUED || next == Phase.CLOSED;
            case CLOSED -> false;
        };
        if (!allowed) {
            throw new IllegalStateException("selector " + name + " cannot move from " + phase + " to " + next);
        }
        phase = next;
    }

    /**
     * The task is about to run: observers hear that this selector leads, unless its term stopped leading already.
     * False if the task must not start: the selector was closed since {@link #runTerm} looked (a close from then on
     * interrupts the task).
     */
    private boolean reportStarted(Lease lease) {
        lock.lock();
        try {
            if (phase != Phase.LEADING || term != lease) {
                return false;
            }
            if (!reportedLeading && stoppedUnreported != lease) {
                reportedLeading = true;
                Observations.leadershipChanged(engine, true);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Under {@link #lock}: the running term stopped leading, or its task returned. */
    private void reportStopped() {
        if (reportedLeading) {
            reportedLeading = false;
            Observations.leadershipChanged(engine, false);
        }
    }
}
