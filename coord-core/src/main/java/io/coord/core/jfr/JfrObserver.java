package io.coord.core.jfr;

import io.coord.core.LeaseState;
import io.coord.core.internal.Observer;
import jdk.jfr.Event;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the engine's reports into this package's events. The engine reaches its {@link #INSTANCE} by reflection
 * ({@code Observations}), so that nothing outside coord sees it.
 *
 * <p>The engine reaches it only once Flight Recorder is initialized in this JVM (a recording was made or started), so
 * that registering the events, which takes the JVM a moment, is never paid by a process that does not record. Each
 * method then asks whether a recording wants its event, which is a flag read, and builds nothing if not.
 */
final class JfrObserver implements Observer {
    private static final Logger log = LoggerFactory.getLogger(JfrObserver.class);
    static final JfrObserver INSTANCE = new JfrObserver();

    private static final EventType ACQUIRE = register(AcquireEvent.class);
    private static final EventType HOLD = register(HoldEvent.class);
    private static final EventType LEASE_STATE = register(LeaseStateEvent.class);
    private static final EventType LEADERSHIP = register(LeadershipEvent.class);
    private static final EventType QUEUE = register(QueueEvent.class);

    private JfrObserver() {}

    /** The event's type, registered; null if Flight Recorder refused it, and then it is never recorded. */
    private static EventType register(Class<? extends Event> event) {
        try {
            FlightRecorder.register(event);
            return EventType.getEventType(event);
        } catch (RuntimeException | InternalError e) {
            log.warn("Flight Recorder refused {}: coord does not record it", event.getName(), e);
            return null;
        }
    }

    private static boolean wants(EventType type) {
        return type != null && type.isEnabled();
    }

    @Override
    public void acquisitionEnded(
            String path, String primitive, String participant, long waitNanos, AcquireOutcome outcome) {
        if (!wants(ACQUIRE)) {
            return;
        }
        AcquireEvent event = new AcquireEvent();
        event.of(path, primitive, participant);
        event.waitTime = waitNanos;
        event.outcome = outcome.tag();
        event.commit();
    }

    @Override
    public void holdEnded(
            String path, String primitive, String participant, long fencingToken, long holdNanos, HoldEnd end) {
        if (!wants(HOLD)) {
            return;
        }
        HoldEvent event = new HoldEvent();
        event.of(path, primitive, participant);
        event.fencingToken = fencingToken;
        event.holdTime = holdNanos;
        event.end = end.tag();
        event.commit();
    }

    @Override
    public void leaseStateChanged(
            String path, String primitive, String participant, long fencingToken, LeaseState from, LeaseState to) {
        if (!wants(LEASE_STATE)) {
            return;
        }
        LeaseStateEvent event = new LeaseStateEvent();
        event.of(path, primitive, participant);
        event.fencingToken = fencingToken;
        event.from = from.name();
        event.to = to.name();
        event.commit();
    }

    @Override
    public void leadershipChanged(String path, String primitive, String participant, boolean gained) {
        if (!wants(LEADERSHIP)) {
            return;
        }
        LeadershipEvent event = new LeadershipEvent();
        event.of(path, primitive, participant);
        event.change = gained ? "gained" : "lost";
        event.commit();
    }

    @Override
    public void queueOperation(String path, QueueOperation operation, int requested, int items, long nanos) {
        if (!wants(QUEUE)) {
            return;
        }
        QueueEvent event = new QueueEvent();
        event.path = path;
        event.operation = operation.tag();
        event.requested = requested;
        event.items = items;
        event.callTime = nanos;
        event.commit();
    }

    @Override
    public String toString() {
        return "JfrObserver";
    }
}
