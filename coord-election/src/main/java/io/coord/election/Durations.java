package io.coord.election;

import java.time.Duration;

final class Durations {
    private Durations() {}

    /** {@code timeout} in nanoseconds; a timeout too long to count in nanoseconds (292 years) waits for ever. */
    static long toNanosSaturated(Duration timeout) {
        try {
            return timeout.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }
}
