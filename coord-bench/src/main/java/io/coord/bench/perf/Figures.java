package io.coord.bench.perf;

/**
 * One implementation's figures for one row, final and comparable. {@code NaN} marks a figure that was not measured
 * (no per-operation latency in scenario 8, four-letter words refused by an external ensemble), and prints as "n/a".
 *
 * @param impl what ran, e.g. "coord ReentrantMutex"
 * @param ops operations measured
 * @param medianMicros median latency of one operation
 * @param p99Micros 99th percentile latency
 * @param meanMicros mean latency
 * @param throughput operations per second of wall time
 * @param requestsPerOp ZooKeeper requests the servers received, per operation
 * @param packetsPerOp packets the servers sent to clients, per operation: replies and watch notifications alike
 * @param cpuMicrosPerOp CPU time the bench's process used per operation, every thread counted: the embedded
 *     servers' too, so on one machine it is what an operation costs the whole system
 * @param extra a scenario-specific figure named by its row, such as the added thread count
 */
public record Figures(
        String impl,
        long ops,
        double medianMicros,
        double p99Micros,
        double meanMicros,
        double throughput,
        double requestsPerOp,
        double packetsPerOp,
        double cpuMicrosPerOp,
        double extra) {

    /** {@code this / other} for each figure; NaN where either is missing or the divisor is zero. */
    public Ratios over(Figures other) {
        return new Ratios(
                other.impl,
                ratio(medianMicros, other.medianMicros),
                ratio(p99Micros, other.p99Micros),
                ratio(meanMicros, other.meanMicros),
                ratio(throughput, other.throughput),
                ratio(requestsPerOp, other.requestsPerOp),
                ratio(packetsPerOp, other.packetsPerOp),
                ratio(cpuMicrosPerOp, other.cpuMicrosPerOp),
                ratio(extra, other.extra));
    }

    static double ratio(double a, double b) {
        if (Double.isNaN(a) || Double.isNaN(b) || b == 0) {
            return Double.NaN;
        }
        return a / b;
    }

    /** coord's figures divided by one Curator counterpart's. */
    public record Ratios(
            String versus,
            double median,
            double p99,
            double mean,
            double throughput,
            double requestsPerOp,
            double packetsPerOp,
            double cpuPerOp,
            double extra) {}
}
