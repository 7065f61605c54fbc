package io.coord.micrometer;

import io.coord.core.LeaseState;
import io.coord.core.internal.Observer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * Keeps one registry's meters from coord's reports; every update is a lookup and an in-memory add. Acquisitions
 * under way keep the observers they started with, so a closed one still hears of their starts and ends: it then
 * only counts them in and out of the pending counts, which a later binding reads, and holds the registry no more.
 */
final class MeterObserver implements Observer {
    private volatile MeterRegistry registry; // null once closed
    private final String name;
    private final UnaryOperator<String> pathTag;
    private final PendingGauges pending;

    /** Meters in {@code registry}; {@code pending} is the registry's, shared with every binding to it. */
    MeterObserver(MeterRegistry registry, UnaryOperator<String> pathTag, PendingGauges pending) {
        this.registry = registry;
        this.name = "MeterObserver[" + registry.getClass().getSimpleName() + "]";
        this.pathTag = pathTag;
        this.pending = pending;
    }

    /** Stops updating the registry's meters. */
    void close() {
        registry = null;
    }

    @Override
    public void acquisitionStarted(String path, String primitive) {
        Tags tags = tags(path, primitive);
        pending.count(tags).incrementAndGet();
        showPending(tags);
    }

    @Override
    public void acquisitionEnded(
            String path, String primitive, String participant, long waitNanos, AcquireOutcome outcome) {
        Tags tags = tags(path, primitive);
        pending.count(tags).decrementAndGet();
        MeterRegistry registry = this.registry;
        if (registry == null) {
            return;
        }
        Tags withOutcome = tags.and("outcome", outcome.tag());
        Timer.builder("coord.acquire.wait")
                .description("How long acquisitions waited, from the call to the outcome")
                .tags(withOutcome)
                .register(registry)
                .record(waitNanos, TimeUnit.NANOSECONDS);
        Counter.builder("coord.acquire.outcomes")
                .description("Acquisitions by outcome: granted, timed_out, cancelled, failed")
                .tags(withOutcome)
                .register(registry)
                .increment();
        showPending(tags); // last: a registry that refuses the gauge still gets the wait and the outcome
    }

    @Override
    public void holdEnded(
            String path, String primitive, String participant, long fencingToken, long holdNanos, HoldEnd end) {
        MeterRegistry registry = this.registry;
        if (registry == null) {
            return;
        }
        Tags tags = tags(path, primitive);
        Timer.builder("coord.lease.hold")
                .description("How long leases were held, from the grant to released, lost or revoked")
                .tags(tags.and("end", end.tag()))
                .register(registry)
                .record(Duration.ofNanos(holdNanos));
        if (end != HoldEnd.RELEASED) {
            Counter.builder("coord.lease.lost")
                    .description("Holds that ended without a release: lost with the session, or revoked")
                    .tags(tags.and("cause", end.tag()))
                    .register(registry)
                    .increment();
        }
    }

    @Override
    public void leaseStateChanged(
            String path, String primitive, String participant, long fencingToken, LeaseState from, LeaseState to) {
        MeterRegistry registry = this.registry;
        if (registry == null) {
            return;
        }
        Counter.builder("coord.lease.states")
                .description("Held leases turning SUSPECT, HELD again, or LOST")
                .tags(tags(path, primitive).and("state", to.name()))
                .register(registry)
                .increment();
    }

    @Override
    public void leadershipChanged(String path, String primitive, String participant, boolean gained) {
        MeterRegistry registry = this.registry;
        if (registry == null) {
            return;
        }
        Counter.builder("coord.leadership.changes")
                .description("Leadership gained or lost by this process's latches and selectors")
                .tags(tags(path, primitive).and("change", gained ? "gained" : "lost"))
                .register(registry)
                .increment();
    }

    @Override
    public void queueOperation(String path, QueueOperation operation, int requested, int items, long nanos) {
        MeterRegistry registry = this.registry;
        if (registry == null) {
            return;
        }
        Tags tags = tags(path, "queue").and("operation", operation.tag());
        Timer.builder("coord.queue.calls")
                .description("Queue calls that offer, poll, drain or claim, from the call to its return")
                .tags(tags)
                .register(registry)
                .record(nanos, TimeUnit.NANOSECONDS);
        Counter.builder("coord.queue.items")
                .description("Items written to or taken from queues")
                .tags(tags)
                .register(registry)
                .increment(items);
    }

    /**
     * Puts the gauge of the pending count of {@code tags} in the registry while this binding is open. After the count
     * has moved: a registry that refuses the gauge (a meter of another type under its name, say) must not leave the
     * start of an acquisition uncounted while its end is counted.
     */
    private void showPending(Tags tags) {
        MeterRegistry registry = this.registry;
        if (registry != null) {
            pending.ensureGauge(registry, tags);
        }
    }

    private Tags tags(String path, String primitive) {
        // Asked each time, not remembered per path: paths that carry ids are what pathTag is there to fold.
        return Tags.of("path", pathTag.apply(path), "primitive", primitive);
    }

    @Override
    public String toString() {
        return name;
    }
}
