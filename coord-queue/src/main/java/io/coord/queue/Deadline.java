package io.coord.queue;

import java.time.Duration;

/** How long a call may wait for the queue to change: not at all, until a point in time, or without end. */
final class Deadline {
    private static final Deadline NOW = new Deadline(false, 0);
    private static final Deadline NEVER = new Deadline(true, 0);

    private final boolean endless;
    private final long endNanos;

    private Deadline(boolean endless, long endNanos) {
        this.endless = endless;
        this.endNanos = endNanos;
    }

    static Deadline now() {
        return NOW;
    }

    static Deadline never() {
        return NEVER;
    }

    /** Computed once from {@code nanoTime}; each wait then uses what remains. */
    static Deadline after(Duration timeout) {
        if (timeout.isZero()) {
            return NOW;
        }
        long nanos;
        try {
            nanos = timeout.toNanos();
        } catch (ArithmeticException e) {
            return NEVER; // longer than 292 years
        }
        long start = System.nanoTime();
        return nanos > Long.MAX_VALUE - start ? NEVER : new Deadline(false, start + nanos);
    }

    /** False when the caller asked not to wait at all. */
    boolean allowsWaiting() {
        return this != NOW;
    }

    boolean isEndless() {
        return endless;
    }

    long remainingNanos() {
        return endless ? Long.MAX_VALUE : Math.max(0, endNanos - System.nanoTime());
    }

    boolean expired() {
        return !endless && remainingNanos() == 0;
    }
}
