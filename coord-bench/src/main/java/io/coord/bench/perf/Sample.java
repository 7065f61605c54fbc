package io.coord.bench.perf;

import io.coord.bench.ServerCounters;
import java.util.OptionalLong;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * What one implementation did in one row, accumulated over the rounds: a latency histogram any thread can record
 * into, plus the operations, wall time and server-side requests of each measured window.
 */
public final class Sample {
    private final String impl;
    // Nanoseconds, three significant digits, resized as needed: nothing measured here is clipped.
    private final Histogram latency = new ConcurrentHistogram(3);
    private long ops;
    private long elapsedNanos;
    private long requests;
    private boolean requestsKnown = true;
    private double extra = Double.NaN;

    public Sample(String impl) {
        this.impl = impl;
    }

    public String impl() {
        return impl;
    }

    /** One operation's latency; thread-safe. */
    public void record(long nanos) {
        latency.recordValue(Math.max(0, nanos));
    }

    /** Opens a measured window: reads the servers' request counters, then starts the clock. */
    public Window open(ServerCounters counters) {
        return new Window(this, counters, counters.requestsReceived(), System.nanoTime());
    }

    public synchronized void extra(double value) {
        this.extra = value;
    }

    synchronized void add(long windowOps, long windowNanos, OptionalLong windowRequests) {
        ops += windowOps;
        elapsedNanos += windowNanos;
        if (windowRequests.isPresent()) {
            requests += windowRequests.getAsLong();
        } else {
            requestsKnown = false;
        }
    }

    public synchronized Figures figures() {
        boolean timed = latency.getTotalCount() > 0;
        return new Figures(
                impl,
                ops,
                timed ? latency.getValueAtPercentile(50) / 1_000.0 : Double.NaN,
                timed ? latency.getValueAtPercentile(99) / 1_000.0 : Double.NaN,
                timed ? latency.getMean() / 1_000.0 : Double.NaN,
                elapsedNanos > 0 ? ops * 1e9 / elapsedNanos : Double.NaN,
                requestsKnown && ops > 0 ? (double) requests / ops : Double.NaN,
                extra);
    }

    /** A measured stretch of work; {@link #close(long)} adds its time, operations and requests to the sample. */
    public static final class Window {
        private final Sample sample;
        private final ServerCounters counters;
        private final OptionalLong startRequests;
        private final long startNanos;

        private Window(Sample sample, ServerCounters counters, OptionalLong startRequests, long startNanos) {
            this.sample = sample;
            this.counters = counters;
            this.startRequests = startRequests;
            this.startNanos = startNanos;
        }

        /** Stops the clock, then reads the counters; returns the window's wall time in nanoseconds. */
        public long close(long ops) {
            long nanos = System.nanoTime() - startNanos;
            OptionalLong endRequests = counters.requestsReceived();
            OptionalLong delta = startRequests.isPresent() && endRequests.isPresent()
                    ? OptionalLong.of(endRequests.getAsLong() - startRequests.getAsLong())
                    : OptionalLong.empty();
            sample.add(ops, nanos, delta);
            return nanos;
        }
    }
}
