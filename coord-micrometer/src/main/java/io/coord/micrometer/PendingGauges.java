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
 * as long as the registry. It holds no reference to the registry.
 *
 * <p>The counts are kept by the tags coord gives them, whether or not a binding is open: an acquisition counted in
 * when it started is counted out when it ends, even if the binding that heard its start was closed meanwhile, so
 * that a later binding reads the live count. Each gauge is registered once, and again only after the registry
 * removed it (a registry warns when a gauge is registered twice), and reads the sum of the counts whose tags the
 * registry's meter filters fold into its id, so that paths a filter folds add up in one gauge.
 */
final class PendingGauges {
    static final String NAME = "coord.acquire.pending";

    /** What one registered gauge reads: the counts folded into its id, once the registry has said which id that is. */
    private static final class Reading {
        volatile Set<AtomicInteger> counts = Set.of();

        double value() {
            return counts.stream().mapToInt(AtomicInteger::get).sum();
        }
    }

    private final Map<Tags, AtomicInteger> counts = new ConcurrentHashMap<>();
    // Tags whose gauge is registered, with the id the registry gave it after its filters.
    private final Map<Tags, Meter.Id> registered = new ConcurrentHashMap<>();
    private final Map<Meter.Id, Set<AtomicInteger>> folded = new ConcurrentHashMap<>();
    // Ids of ours the registry removed: the next use registers the gauge again, reading the same counts.
    private final Set<Meter.Id> removed = ConcurrentHashMap.newKeySet();

    /** The count of the acquisitions under way with {@code tags}. */
    AtomicInteger count(Tags tags) {
        return counts.computeIfAbsent(tags, t -> new AtomicInteger());
    }

    /** Registers the gauge of {@code tags} in {@code registry}, unless it is there: a lookup, once it is. */
    void ensureGauge(MeterRegistry registry, Tags tags) {
        Meter.Id known = registered.get(tags);
        if (known == null || removed.contains(known)) {
            registered.compute(tags, (t, was) -> was != null && !removed.contains(was) ? was : register(registry, t));
        }
    }

    /** The registry removed {@code meter} (by hand, or clearing itself). */
    void removed(Meter meter) {
        if (meter instanceof Gauge && folded.containsKey(meter.getId())) {
            removed.add(meter.getId());
        }
    }

    private Meter.Id register(MeterRegistry registry, Tags tags) {
        Reading reading = new Reading();
        Gauge gauge = Gauge.builder(NAME, reading, Reading::value)
                .description("Acquisitions under way: sent, and not yet granted, refused, withdrawn or failed")
                .tags(tags)
                .strongReference(true)
                .register(registry);
        Meter.Id id = gauge.getId();
        Set<AtomicInteger> sources = folded.computeIfAbsent(id, i -> ConcurrentHashMap.newKeySet());
        sources.add(count(tags));
        reading.counts = sources; // unread if the registry had this id's gauge already: that one reads the same set
        removed.remove(id);
        return id;
    }
}
