package io.coord.core.internal;

import io.coord.core.LeaseState;
import io.coord.core.internal.Observer.AcquireOutcome;
import io.coord.core.internal.Observer.HoldEnd;
import io.coord.core.internal.Observer.QueueOperation;
import java.lang.reflect.Field;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.locks.ReentrantLock;
import jdk.jfr.FlightRecorder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the engine, the queue and the elections report what they did, and where {@link Observer}s register. Each
 * report goes to Flight Recorder, which drops it at the cost of a flag read or two unless a recording wants it, and
 * to every observer registered; with no observer and no recording, a report allocates nothing.
 */
public final class Observations {
    private static final Logger log = LoggerFactory.getLogger(Observations.class);
    private static final Observer[] NONE = {};
    // Without the jdk.jfr module (a runtime image made without it) coord records nothing and never links to it.
    private static final boolean JFR_PRESENT =
            ModuleLayer.boot().findModule("jdk.jfr").isPresent();
    private static final ReentrantLock LOCK = new ReentrantLock();
    // Copy on write: reports read it without a lock.
    private static volatile Observer[] observers = NONE;

    private Observations() {}

    /** Makes {@code observer} hear every report from now on, in every client of this class loader. */
    public static void add(Observer observer) {
        Objects.requireNonNull(observer, "observer must not be null");
        LOCK.lock();
        try {
            Observer[] now = observers;
            Observer[] next = Arrays.copyOf(now, now.length + 1);
            next[now.length] = observer;
            observers = next;
        } finally {
            LOCK.unlock();
        }
    }

    /** Stops {@code observer} hearing new reports; false if it was not registered. */
    public static boolean remove(Observer observer) {
        LOCK.lock();
        try {
            Observer[] now = observers;
            int at = Arrays.asList(now).indexOf(observer);
            if (at < 0) {
                return false;
            }
            Observer[] next = new Observer[now.length - 1];
            System.arraycopy(now, 0, next, 0, at);
            System.arraycopy(now, at + 1, next, at, now.length - at - 1);
            observers = next;
            return true;
        } finally {
            LOCK.unlock();
        }
    }

    /** Whether Flight Recorder is up in this JVM; until it is, no event class of coord is even loaded. */
    private static boolean recorder() {
        return JFR_PRESENT && FlightRecorder.isInitialized();
    }

    /**
     * The observer that turns reports into Flight Recorder events. It is not API, so it is package-private in its own
     * package and reached here by reflection; loading it registers coord's events, which happens on first use only.
     */
    private static final class Recorder {
        static final Observer OBSERVER = load();

        private static Observer load() {
            try {
                Field instance = Class.forName("io.coord.core.jfr.JfrObserver").getDeclaredField("INSTANCE");
                instance.setAccessible(true);
                return (Observer) instance.get(null);
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                // A LinkageError: a shaded jar that kept the observer but dropped an event class, say.
                log.warn("coord records no Flight Recorder events: its observer did not load", e);
                return new Observer() {};
            }
        }
    }

    // ---- acquisitions ----

    /** An attempt starts: returns the observers told, who are the ones to hear its end. */
    static Observer[] acquisitionStarted(LeaseEngine engine) {
        Observer[] told = observers;
        for (Observer o : told) {
            try {
                o.acquisitionStarted(engine.path(), engine.primitive());
            } catch (RuntimeException | Error e) {
                failed(o, engine.path(), e);
            }
        }
        return told;
    }

    /**
     * An attempt's result is set: a lease, null for a one-look attempt refused, or an error. {@code gaveUp} is why
     * the caller withdrew it, if it did.
     */
    static void acquisitionEnded(
            LeaseEngine engine,
            Observer[] told,
            long startedAt,
            LeaseImpl lease,
            Throwable error,
            AcquireOutcome gaveUp) {
        AcquireOutcome outcome = outcome(lease, error, gaveUp);
        long waited = System.nanoTime() - startedAt;
        if (recorder()) {
            record(
                    engine.path(),
                    () -> Recorder.OBSERVER.acquisitionEnded(
                            engine.path(), engine.primitive(), engine.participantId(), waited, outcome));
        }
        for (Observer o : told) {
            try {
                o.acquisitionEnded(engine.path(), engine.primitive(), engine.participantId(), waited, outcome);
            } catch (RuntimeException | Error e) {
                failed(o, engine.path(), e);
            }
        }
    }

    private static AcquireOutcome outcome(LeaseImpl lease, Throwable error, AcquireOutcome gaveUp) {
        if (lease != null) {
            return AcquireOutcome.GRANTED;
        }
        if (error == null) {
            return AcquireOutcome.TIMED_OUT; // one look, and the queue said no
        }
        if (error instanceof CancellationException) { // the attempt's own future: cancelled, never wrapped
            return gaveUp == null ? AcquireOutcome.CANCELLED : gaveUp;
        }
        return AcquireOutcome.FAILED;
    }

    // ---- leases ----

    /** A lease moved from {@code from} to {@code to}: a state change, the end of its hold, or both. */
    static void leaseMoved(LeaseImpl lease, LeaseState from, LeaseState to) {
        LeaseEngine engine = lease.engine();
        String path = engine.path();
        if (to != LeaseState.RELEASED) {
            if (recorder()) {
                record(
                        path,
                        () -> Recorder.OBSERVER.leaseStateChanged(
                                path, engine.primitive(), engine.participantId(), lease.fencingToken(), from, to));
            }
            for (Observer o : observers) {
                try {
                    o.leaseStateChanged(
                            path, engine.primitive(), engine.participantId(), lease.fencingToken(), from, to);
                } catch (RuntimeException | Error e) {
                    failed(o, path, e);
                }
            }
        }
        if (to == LeaseState.RELEASED || to == LeaseState.LOST) {
            HoldEnd end = to == LeaseState.RELEASED ? HoldEnd.RELEASED : lossCause(lease);
            long held = System.nanoTime() - lease.grantedAt();
            if (recorder()) {
                record(
                        path,
                        () -> Recorder.OBSERVER.holdEnded(
                                path, engine.primitive(), engine.participantId(), lease.fencingToken(), held, end));
            }
            for (Observer o : observers) {
                try {
                    o.holdEnded(path, engine.primitive(), engine.participantId(), lease.fencingToken(), held, end);
                } catch (RuntimeException | Error e) {
                    failed(o, path, e);
                }
            }
        }
    }

    /**
     * Why a lease is LOST. Its session lives on exactly when the lease was not lost with it, and the client is open
     * and still on the session that owns the node; then the node can only have gone because somebody else deleted it,
     * which is a revocation. The end of a session may be told while the handle still reports it, hence the first.
     */
    private static HoldEnd lossCause(LeaseImpl lease) {
        ClientContext context = lease.context();
        boolean sessionLives =
                !lease.lostWithItsSession() && !context.isClosed() && context.sessionId() == lease.session();
        return sessionLives ? HoldEnd.REVOKED : HoldEnd.LOST;
    }

    // ---- elections and queues ----

    /** The latch or selector over {@code engine} gained or lost leadership. */
    public static void leadershipChanged(LeaseEngine engine, boolean gained) {
        if (recorder()) {
            record(
                    engine.path(),
                    () -> Recorder.OBSERVER.leadershipChanged(
                            engine.path(), engine.primitive(), engine.participantId(), gained));
        }
        for (Observer o : observers) {
            try {
                o.leadershipChanged(engine.path(), engine.primitive(), engine.participantId(), gained);
            } catch (RuntimeException | Error e) {
                failed(o, engine.path(), e);
            }
        }
    }

    /**
     * A queue call that started at {@code startedAt} (System.nanoTime) returned or threw, having moved {@code items}.
     */
    public static void queueOperation(String path, QueueOperation operation, int requested, int items, long startedAt) {
        long took = System.nanoTime() - startedAt;
        if (recorder()) {
            record(path, () -> Recorder.OBSERVER.queueOperation(path, operation, requested, items, took));
        }
        for (Observer o : observers) {
            try {
                o.queueOperation(path, operation, requested, items, took);
            } catch (RuntimeException | Error e) {
                failed(o, path, e);
            }
        }
    }

    /** Hands a report to Flight Recorder, guarded as every observer's report is. */
    private static void record(String path, Runnable report) {
        try {
            report.run();
        } catch (RuntimeException | Error e) {
            failed("Flight Recorder", path, e);
        }
    }

    private static void failed(Object observer, String path, Throwable e) {
        log.warn("observer {} failed on a report for {}", observer, path, e);
    }
}
