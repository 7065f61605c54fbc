package io.coord.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One registry's {@code coord.acquire.pending} gauges and the counts they read, shared by every binding to it and kept
 * as long as the registry: a gauge outlives the binding that registered it (a close, or another instance bound
 * later), and must go on reading the live count. It holds no reference to the registry.
 *
 * <p>Each gauge is registered once, and again only after the registry removed it: a registry warns when a gauge is
 * registered twice. Counts are kept by the id the registry gave the gauge, after its meter filters, so that paths a
 * filter folds into one gauge add up in it instead of the gauge reading the first path's count alone.
 */
final class PendingGauges {
    static final String NAME = "coord.acquire.pending";

    /** What one registered gauge reads: its id's count, set once the registry has said which id that is. */
    private static final class Reading {
        volatile AtomicInteger count;

        double value() {
            AtomicInteger known = count;
            return known == null ? 0 : known.get();
        }
    }

    private record Registered(Meter.Id id, AtomicInteger count) {}

    private final Map<Tags, Registered> byTags = new ConcurrentHashMap<>();
    private final Map<Meter.Id, AtomicInteger> byId = new ConcurrentHashMap<>();
    // Ids of ours the registry removed: the next use registers the gauge again, reading the same count.
    private final Set<Meter.Id> removed = ConcurrentHashMap.newKeySet();

    /** The count behind the gauge of {@code tags}, registering the gauge first if the registry does not have it. */
    AtomicInteger count(MeterRegistry registry, Tags tags) {
        Registered known = byTags.get(tags);
        if (known != null && !removed.contains(known.id())) {
            return known.count(); // the usual case: a lookup
        }
        return byTags.compute(
                        tags, (t, was) -> was != null && !removed.contains(was.id()) ? was : register(registry, t))
                .count();
    }

    /** The count behind the gauge of {@code tags} if there is one, registering nothing: for a closed binding. */
    AtomicInteger countIfKnown(Tags tags) {
        Registered known = byTags.get(tags);
        return known == null ? null : known.count();
    }

    /** The registry removed {@code meter} (by hand, or clearing itself). */
    void removed(Meter meter) {
        if (meter instanceof Gauge && byId.containsKey(meter.getId())) {
            removed.add(meter.getId());
        }
    }

    private Registered register(MeterRegistry registry, Tags tags) {
        Reading reading = new Reading();
        Gauge gauge = Gauge.builder(NAME, reading, Reading::value)
                .description("Acquisitions under way: sent, and not yet granted, refused, withdrawn or failed")
                .tags(tags)
                .strongReference(true)
                .register(registry);
        AtomicInteger count = byId.computeIfAbsent(gauge.getId(), id -> new AtomicInteger());
        reading.count = count; // unread if the registry had this id's gauge already: that one reads the same count
        removed.remove(gauge.getId());
        return new Registered(gauge.getId(), count);
    }
}
