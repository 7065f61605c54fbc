package io.coord.bench.perf;

import io.coord.bench.ServerCounters;
import java.lang.management.ManagementFactory;
import java.util.OptionalLong;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * What one implementation did in one row, accumulated over the rounds: a latency histogram any thread can record
 * into, plus the operations, wall time, the requests the servers received and the packets they sent in each
 * measured window, and the CPU time the bench's process spent in it.
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
    private long cpuNanos;
    private boolean cpuKnown = true;
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

    synchronized void add(long windowOps, long windowNanos, Counts counted) {
        ops += windowOps;
        elapsedNanos += windowNanos;
        requests += counted.requests().orElse(0);
        requestsKnown &= counted.requests().isPresent();
        packets += counted.packets().orElse(0);
        packetsKnown &= counted.packets().isPresent();
        cpuNanos += counted.cpuNanos().orElse(0);
        cpuKnown &= counted.cpuNanos().isPresent();
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
                cpuKnown && ops > 0 ? cpuNanos / 1_000.0 / ops : Double.NaN,
                extra);
    }

    /**
     * The servers' counters at one moment (requests received, packets sent), and the CPU time this process has used;
     * empty where unknown. Within a window they are deltas.
     */
    private record Counts(OptionalLong requests, OptionalLong packets, OptionalLong cpuNanos) {
        static Counts read(ServerCounters counters) {
            return new Counts(counters.requestsReceived(), counters.packetsSent(), processCpuNanos());
        }

        Counts since(Counts start) {
            return new Counts(
                    delta(start.requests, requests), delta(start.packets, packets), delta(start.cpuNanos, cpuNanos));
        }

        /** What every thread of this process has run, the embedded servers' and the proxy's included. */
        private static OptionalLong processCpuNanos() {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                long nanos = os.getProcessCpuTime();
                return nanos < 0 ? OptionalLong.empty() : OptionalLong.of(nanos);
            }
            return OptionalLong.empty();
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
            sample.add(ops, nanos, Counts.read(counters).since(start));
            return nanos;
        }
    }
}
