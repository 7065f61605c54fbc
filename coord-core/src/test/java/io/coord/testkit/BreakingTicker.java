package io.coord.testkit;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * A nanosecond ticker that reads the real clock for its first {@code goodReads} calls and then throws: a failure
 * forced into a blocking call at the point where it next reads the time.
 */
public final class BreakingTicker implements LongSupplier {
    private final AtomicInteger reads = new AtomicInteger();
    private final int goodReads;

    public BreakingTicker(int goodReads) {
        this.goodReads = goodReads;
    }

    @Override
    public long getAsLong() {
        if (reads.incrementAndGet() > goodReads) {
            throw new IllegalStateException("the ticker broke");
        }
        return System.nanoTime();
    }
}
