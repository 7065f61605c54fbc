package io.coord.core.internal;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;

/**
 * How long a blocking call may wait: not at all ({@link #now()}), not for room or items but for every answer ({@link
 * #throughOutages()}), until a point in time, or for ever. Computed once
 * from a nanosecond ticker; every wait then uses what remains. Saturating: a timeout too long for {@code long}
 * nanoseconds (about 292 years, {@code ChronoUnit.FOREVER} included) waits for ever instead of overflowing.
 */
public final class Deadline {
    /** The ticker of production code; tests inject their own. */
    public static final LongSupplier SYSTEM_TICKER = System::nanoTime;

    private static final Deadline NOW = new Deadline(Kind.NOW, 0, SYSTEM_TICKER);
    private static final Deadline FOREVER = new Deadline(Kind.FOREVER, 0, SYSTEM_TICKER);
    private static final Deadline THROUGH = new Deadline(Kind.THROUGH, 0, SYSTEM_TICKER);

    private enum Kind {
        NOW,
        THROUGH,
        AT,
        FOREVER
    }

    private final Kind kind;
    private final long endNanos;
    private final LongSupplier ticker;

    private Deadline(Kind kind, long endNanos, LongSupplier ticker) {
        this.kind = kind;
        this.endNanos = endNanos;
        this.ticker = ticker;
    }

    /**
     * Look once, never wait: not for room or items, nor for a lost connection. An answer on its way is waited for only
     * as long as Curator's retries of it last.
     */
    public static Deadline now() {
        return NOW;
    }

    /**
     * Never wait for room or items, but see every request through: wait for its answer, and for a lost connection to
     * come back, as long as it takes. For callers that must learn an outcome.
     */
    public static Deadline throughOutages() {
        return THROUGH;
    }

    public static Deadline forever() {
        return FOREVER;
    }

    /** {@link Duration#ZERO} is {@link #now()}; null is {@link #forever()}. */
    public static Deadline after(Duration timeout) {
        return after(timeout, SYSTEM_TICKER);
    }

    public static Deadline after(Duration timeout, LongSupplier ticker) {
        Objects.requireNonNull(ticker, "ticker");
        if (timeout == null) {
            return FOREVER;
        }
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must not be negative: " + timeout);
        }
        if (timeout.isZero()) {
            return NOW;
        }
        long nanos = saturatedNanos(timeout);
        long start = ticker.getAsLong();
        if (nanos == Long.MAX_VALUE || start > 0 && nanos > Long.MAX_VALUE - start) {
            return FOREVER;
        }
        return new Deadline(Kind.AT, start + nanos, ticker);
    }

    /** False when the caller asked to look once, or to wait only for outcomes. */
    public boolean allowsWaiting() {
        return kind != Kind.NOW && kind != Kind.THROUGH;
    }

    /** Whether a lost connection is waited for: not under {@link #now()}. */
    public boolean waitsForConnection() {
        return kind != Kind.NOW;
    }

    public boolean isForever() {
        return kind == Kind.FOREVER;
    }

    /** Nanoseconds left: 0 for {@link #now()} and once passed, {@link Long#MAX_VALUE} for ever. */
    public long remainingNanos() {
        return switch (kind) {
            case NOW, THROUGH -> 0;
            case FOREVER -> Long.MAX_VALUE;
            case AT -> Math.max(0, endNanos - ticker.getAsLong());
        };
    }

    public boolean expired() {
        return kind != Kind.FOREVER && remainingNanos() == 0;
    }

    /**
     * Waits for {@code future} until the deadline. {@link #now()} does not wait: it answers only if the future is
     * already done.
     */
    public <T> T await(CompletableFuture<T> future) throws InterruptedException, ExecutionException, TimeoutException {
        if (kind == Kind.FOREVER) {
            return future.get();
        }
        return future.get(remainingNanos(), TimeUnit.NANOSECONDS);
    }

    /** {@code timeout} in nanoseconds, {@link Long#MAX_VALUE} if it is longer than that. */
    static long saturatedNanos(Duration timeout) {
        try {
            return timeout.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    @Override
    public String toString() {
        return switch (kind) {
            case NOW -> "Deadline[now]";
            case THROUGH -> "Deadline[through outages]";
            case FOREVER -> "Deadline[forever]";
            case AT -> "Deadline[" + remainingNanos() + "ns left]";
        };
    }
}
