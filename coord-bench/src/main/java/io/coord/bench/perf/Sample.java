package io.coord.bench.perf;

import io.coord.bench.ServerCounters;
import java.util.OptionalLong;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * What one implementation did in one row, accumulated over the rounds: a latency histogram any thread can record
 * into, plus the operations, wall time, and the requests the servers received and the packets they sent in each
 * measured window.
 */
public final class Sample {
    private final String impl;
    // Nanoseconds, three significant digits, resized as needed: nothing measured here is clipped.
    private final Histogram latency = new ConcurrentHistogram(3);
    private long ops;
    private long elapsedNanos;
    private long requests;
    private boolean requestsKnown = true;
    private long packets;
    private boolean packetsKnown = true;
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

    /** Opens a measured window: reads the servers' counters, then starts the clock. */
    public Window open(ServerCounters counters) {
        return new Window(this, counters, Counts.read(counters), System.nanoTime());
    }

    public synchronized void extra(double value) {
        this.extra = value;
    }

    synchronized void add(long windowOps, long windowNanos, OptionalLong windowRequests, OptionalLong windowPackets) {
        ops += windowOps;
        elapsedNanos += windowNanos;
        requests += windowRequests.orElse(0);
        requestsKnown &= windowRequests.isPresent();
        packets += windowPackets.orElse(0);
        packetsKnown &= windowPackets.isPresent();
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
                packetsKnown && ops > 0 ? (double) packets / ops : Double.NaN,
                extra);
    }

    /** The servers' counters at one moment: requests received, packets sent; empty where unknown. */
    private record Counts(OptionalLong requests, OptionalLong packets) {
        static Counts read(ServerCounters counters) {
            return new Counts(counters.requestsReceived(), counters.packetsSent());
        }

        static OptionalLong delta(OptionalLong start, OptionalLong end) {
            return start.isPresent() && end.isPresent()
                    ? OptionalLong.of(end.getAsLong() - start.getAsLong())
                    : OptionalLong.empty();
        }
    }

    /** A measured stretch of work; {@link #close(long)} adds its time, operations and counts to the sample. */
    public static final class Window {
        private final Sample sample;
        private final ServerCounters counters;
        private final Counts start;
        private final long startNanos;

        private Window(Sample sample, ServerCounters counters, Counts start, long startNanos) {
            this.sample = sample;
            this.counters = counters;
            this.start = start;
            this.startNanos = startNanos;
        }

        /** Stops the clock, then reads the counters; returns the window's wall time in nanoseconds. */
        public long close(long ops) {
            long nanos = System.nanoTime() - startNanos;
            Counts end = Counts.read(counters);
            sample.add(
                    ops,
                    nanos,
                    Counts.delta(start.requests(), end.requests()),
                    Counts.delta(start.packets(), end.packets()));
            return nanos;
        }
    }
}
