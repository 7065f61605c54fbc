package io.coord.core.jfr;

import io.coord.core.LeaseState;
import io.coord.core.internal.Observer;
import jdk.jfr.EventType;

/**
 * Turns the engine's reports into this package's events. The engine reports to it directly; applications have no use
 * for it. <b>Not API</b>: it is public only because the engine lives in another package.
 *
 * <p>Each method first asks whether a recording wants its event, which is a flag read, and builds nothing if not.
 */
public final class JfrObserver implements Observer {
    public static final JfrObserver INSTANCE = new JfrObserver();

    private static final EventType ACQUIRE = EventType.getEventType(AcquireEvent.class);
    private static final EventType HOLD = EventType.getEventType(HoldEvent.class);
    private static final EventType LEASE_STATE = EventType.getEventType(LeaseStateEvent.class);
    private static final EventType LEADERSHIP = EventType.getEventType(LeadershipEvent.class);
    private static final EventType QUEUE = EventType.getEventType(QueueEvent.class);

    private JfrObserver() {}

    @Override
    public void acquisitionEnded(
            String path, String primitive, String participant, long waitNanos, AcquireOutcome outcome) {
        if (!ACQUIRE.isEnabled()) {
            return;
        }
        AcquireEvent event = new AcquireEvent();
        event.path = path;
        event.primitive = primitive;
        event.participant = participant;
        event.waitTime = waitNanos;
        event.outcome = outcome.tag();
        event.commit();
    }

    @Override
    public void holdEnded(
            String path, String primitive, String participant, long fencingToken, long holdNanos, HoldEnd end) {
        if (!HOLD.isEnabled()) {
            return;
        }
        HoldEvent event = new HoldEvent();
        event.path = path;
        event.primitive = primitive;
        event.participant = participant;
        event.fencingToken = fencingToken;
        event.holdTime = holdNanos;
        event.end = end.tag();
        event.commit();
    }

    @Override
    public void leaseStateChanged(
            String path, String primitive, String participant, long fencingToken, LeaseState from, LeaseState to) {
        if (!LEASE_STATE.isEnabled()) {
            return;
        }
        LeaseStateEvent event = new LeaseStateEvent();
        event.path = path;
        event.primitive = primitive;
        event.participant = participant;
        event.fencingToken = fencingToken;
        event.from = from.name();
        event.to = to.name();
        event.commit();
    }

    @Override
    public void leadershipChanged(String path, String primitive, String participant, boolean gained) {
        if (!LEADERSHIP.isEnabled()) {
            return;
        }
        LeadershipEvent event = new LeadershipEvent();
        event.path = path;
        event.primitive = primitive;
        event.participant = participant;
        event.change = gained ? "gained" : "lost";
        event.commit();
    }

    @Override
    public void queueOperation(String path, QueueOperation operation, int requested, int items, long nanos) {
        if (!QUEUE.isEnabled()) {
            return;
        }
        QueueEvent event = new QueueEvent();
        event.path = path;
        event.operation = operation.tag();
        event.requested = requested;
        event.items = items;
        event.duration = nanos;
        event.commit();
    }

    @Override
    public String toString() {
        return "JfrObserver";
    }
}
