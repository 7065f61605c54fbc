package io.coord.micrometer;

import io.coord.core.internal.Observations;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.WeakHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.UnaryOperator;

/**
 * Micrometer meters for every coord primitive in this JVM: how long acquisitions wait and how they end, how long
 * holds last and how they end, leases lost, acquisitions pending, leadership changes, and queue calls.
 *
 * <pre>{@code
 * CoordMetrics metrics = new CoordMetrics();
 * metrics.bindTo(registry);       // from now on, every client's primitives are measured
 * ...
 * metrics.close();                // stops measuring; the meters stay registered
 * }</pre>
 *
 * <p>Meters are tagged with the primitive's {@code path} and {@code primitive} (mutex, read-lock, write-lock,
 * semaphore, leader-latch, leader-selector, queue). Each distinct path makes meters of its own: when paths carry ids
 * (one lock per order, say), give a {@code pathTag} that maps them to fewer values.
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>extra tags</th><th>what</th></tr>
 *   <tr><td>{@code coord.acquire.wait}</td><td>timer</td><td>outcome</td><td>from the call to its outcome</td></tr>
 *   <tr><td>{@code coord.acquire.outcomes}</td><td>counter</td><td>outcome</td>
 *       <td>granted, timed_out, cancelled, failed</td></tr>
 *   <tr><td>{@code coord.acquire.pending}</td><td>gauge</td><td></td><td>acquisitions under way now</td></tr>
 *   <tr><td>{@code coord.lease.hold}</td><td>timer</td><td>end</td><td>from the grant to released, lost or
 *       revoked</td></tr>
 *   <tr><td>{@code coord.lease.lost}</td><td>counter</td><td>cause</td><td>holds that ended other than by release:
 *       lost (the session ended) or revoked (somebody else deleted the node)</td></tr>
 *   <tr><td>{@code coord.lease.states}</td><td>counter</td><td>state</td><td>held leases turning SUSPECT, HELD
 *       again, or LOST</td></tr>
 *   <tr><td>{@code coord.leadership.changes}</td><td>counter</td><td>change</td><td>gained or lost</td></tr>
 *   <tr><td>{@code coord.queue.calls}</td><td>timer</td><td>operation</td><td>offer, poll, drain or claim calls,
 *       those that throw included</td></tr>
 *   <tr><td>{@code coord.queue.items}</td><td>counter</td><td>operation</td><td>items written or taken</td></tr>
 * </table>
 *
 * <p>Meters are updated on the thread where the thing happened, ZooKeeper's included; updating them never blocks.
 * An acquisition under way when the binding is made is not measured.
 */
public final class CoordMetrics implements MeterBinder, AutoCloseable {
    private final UnaryOperator<String> pathTag;
    // Guards bound, so that a close() and a bindTo() racing it leave either no observer or a live one.
    private final ReentrantLock lock = new ReentrantLock();
    private final Map<MeterRegistry, MeterObserver> bound = new IdentityHashMap<>();
    /** Per registry, its pending gauges, for every instance in this class loader (see {@link PendingGauges}). */
    private static final Map<MeterRegistry, PendingGauges> PENDING = Collections.synchronizedMap(new WeakHashMap<>());

    /** Tags each meter with the primitive's path as it is. */
    public CoordMetrics() {
        this(UnaryOperator.identity());
    }

    /**
     * Tags each meter with {@code pathTag} applied to the primitive's path. It runs at every event, where the event
     * happens (ZooKeeper's event thread among others): it must be quick, and must not block.
     */
    public CoordMetrics(UnaryOperator<String> pathTag) {
        this.pathTag = Objects.requireNonNull(pathTag, "pathTag must not be null");
    }

    /**
     * Starts updating {@code registry}'s meters. Binding again to a registry already bound does nothing; binding after
     * {@link #close()} takes up the meters where they were. Two instances bound to one registry at once both count
     * everything; one bound after another's close takes up its meters.
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        lock.lock();
        try {
            if (bound.containsKey(registry)) {
                return; // a second observer would count everything twice
            }
            PendingGauges pending = PENDING.computeIfAbsent(registry, r -> {
                PendingGauges made = new PendingGauges();
                r.config().onMeterRemoved(made::removed);
                return made;
            });
            MeterObserver observer = new MeterObserver(registry, pathTag, pending);
            bound.put(registry, observer);
            Observations.add(observer);
        } finally {
            lock.unlock();
        }
    }

    /** Stops updating the meters of every registry this was bound to. The meters stay registered. */
    @Override
    public void close() {
        lock.lock();
        try {
            for (MeterObserver observer : bound.values()) {
                Observations.remove(observer);
                observer.close(); // acquisitions under way still tell it of their ends
            }
            bound.clear();
        } finally {
            lock.unlock();
        }
    }
}
