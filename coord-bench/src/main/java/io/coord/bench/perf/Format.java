package io.coord.bench.perf;

import java.time.Duration;
import java.util.Locale;

/** How figures print: short, with units, and "n/a" for a figure that was not measured. */
final class Format {
    static final String NA = "n/a";

    private Format() {}

    static String latency(double micros) {
        if (Double.isNaN(micros)) {
            return NA;
        }
        if (micros < 1_000) {
            return String.format(Locale.ROOT, "%.0fus", micros);
        }
        if (micros < 10_000) {
            return String.format(Locale.ROOT, "%.2fms", micros / 1_000);
        }
        if (micros < 1_000_000) {
            return String.format(Locale.ROOT, "%.1fms", micros / 1_000);
        }
        return String.format(Locale.ROOT, "%.2fs", micros / 1_000_000);
    }

    static String throughput(double perSecond) {
        if (Double.isNaN(perSecond)) {
            return NA;
        }
        return perSecond >= 100
                ? String.format(Locale.ROOT, "%,.0f/s", perSecond)
                : String.format(Locale.ROOT, "%.1f/s", perSecond);
    }

    static String perOp(double value) {
        return Double.isNaN(value) ? NA : String.format(Locale.ROOT, "%.2f", value);
    }

    static String ratio(double value) {
        if (Double.isNaN(value)) {
            return NA;
        }
        // Scenario 8's thread ratio is tiny; two decimals would print it as a misleading 0.00.
        return value != 0 && Math.abs(value) < 0.01
                ? String.format(Locale.ROOT, "%.4f", value)
                : String.format(Locale.ROOT, "%.2f", value);
    }

    /** {@code 1ms}, {@code 500us}, {@code 1.5ms}: the way {@code --rtt} is written. */
    static String duration(Duration d) {
        long nanos = d.toNanos();
        if (nanos % 1_000_000 == 0) {
            return nanos / 1_000_000 + "ms";
        }
        if (nanos % 1_000 == 0) {
            return nanos / 1_000 + "us";
        }
        return nanos + "ns";
    }

    static String count(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    static String extra(double value, String name) {
        if (name.isEmpty()) {
            return "";
        }
        return Double.isNaN(value) ? NA : String.format(Locale.ROOT, "%,.0f %s", value, name);
    }
}
