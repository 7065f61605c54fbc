package io.coord.bench.perf;

import java.util.Locale;

/**
 * A target from the issue, judged against what this run measured. A figure that could not be measured is a miss,
 * never a pass.
 *
 * @param name what is compared, e.g. "1 uncontended latency, coord/Curator"
 * @param rule the bound, e.g. "<= 0.70"
 * @param measured the measured value, NaN when it could not be measured
 * @param pass whether the measured value meets the rule
 */
public record TargetResult(String name, String rule, double measured, boolean pass) {

    public static TargetResult atMost(String name, double measured, double limit) {
        return new TargetResult(name, "<= " + fixed(limit), measured, !Double.isNaN(measured) && measured <= limit);
    }

    public static TargetResult atLeast(String name, double measured, double limit) {
        return new TargetResult(name, ">= " + fixed(limit), measured, !Double.isNaN(measured) && measured >= limit);
    }

    public static TargetResult below(String name, double measured, double limit) {
        return new TargetResult(name, "< " + fixed(limit), measured, !Double.isNaN(measured) && measured < limit);
    }

    public String verdict() {
        return pass ? "PASS" : "MISS";
    }

    private static String fixed(double v) {
        return v == Math.rint(v) ? String.valueOf((long) v) : String.format(Locale.ROOT, "%.2f", v);
    }
}
