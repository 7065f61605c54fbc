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
 * #throughOutages()}) or for answers until an event ({@link #lookUntil}), until a point in time, or for ever. Computed
 * once
 * from a nanosecond ticker; every wait then uses what remains. Saturating: a timeout too long for {@code long}
 * nanoseconds (about 292 years, {@code ChronoUnit.FOREVER} included) waits for ever instead of overflowing.
 */
public final class Deadline {
    /** The ticker of production code; tests inject their own. */
    public static final LongSupplier SYSTEM_TICKER = System::nanoTime;

    private static final Deadline NOW = new Deadline(Kind.NOW, 0, SYSTEM_TICKER, null);
    private static final Deadline FOREVER = new Deadline(Kind.FOREVER, 0, SYSTEM_TICKER, null);
    private static final Deadline THROUGH = new Deadline(Kind.THROUGH, 0, SYSTEM_TICKER, null);

    private enum Kind {
        NOW,
        LOOK,
        THROUGH,
        AT,
        FOREVER
    }

    private final Kind kind;
    private final long endNanos;
    private final LongSupplier ticker;
    private final CompletableFuture<?> ended; // LOOK's end

    private Deadline(Kind kind, long endNanos, LongSupplier ticker, CompletableFuture<?> ended) {
        this.kind = kind;
        this.endNanos = endNanos;
        this.ticker = ticker;
        this.ended = ended;
    }

    /**
     * Look once, never wait: not for room or items, nor for a lost connection. An answer on its way is waited for only
     * as long as Curator's retries of it last.
     */
    public static Deadline now() {
        return NOW;
    }

    /**
     * Look once, as {@link #now()} does, but wait for each answer interruptibly, and only until {@code ended} completes
     * (the connection dropped, say): then the wait throws {@link TimeoutException}. For a timed call whose deadline
     * passed before it looked once.
     */
    public static Deadline lookUntil(CompletableFuture<?> ended) {
        return new Deadline(Kind.LOOK, 0, SYSTEM_TICKER, Objects.requireNonNull(ended, "ended"));
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
        return new Deadline(Kind.AT, start + nanos, ticker, null);
    }

    /** False when the caller asked to look once, or to wait only for outcomes. */
    public boolean allowsWaiting() {
        return kind == Kind.AT || kind == Kind.FOREVER;
    }

    /** Whether a lost connection is waited for: not under {@link #now()} nor {@link #lookUntil}. */
    public boolean waitsForConnection() {
        return kind != Kind.NOW && kind != Kind.LOOK;
    }

    /**
     * Whether an answer is waited for as long as Curator's retries of it last, whatever interrupts arrive: under
     * {@link #now()} and {@link #throughOutages()}; the others wait with {@link #await}.
     */
    public boolean awaitsAnswersFully() {
        return kind == Kind.NOW || kind == Kind.THROUGH;
    }

    public boolean isForever() {
        return kind == Kind.FOREVER;
    }

    /** Whether this is a {@link #lookUntil} look whose event has come; the other kinds end by time, if at all. */
    public boolean lookEnded() {
        return kind == Kind.LOOK && ended.isDone();
    }

    /** Nanoseconds left: 0 for {@link #now()} and once passed, {@link Long#MAX_VALUE} for ever. */
    public long remainingNanos() {
        return switch (kind) {
            case NOW, LOOK, THROUGH -> 0;
            case FOREVER -> Long.MAX_VALUE;
            case AT -> Math.max(0, endNanos - ticker.getAsLong());
        };
    }

    public boolean expired() {
        return kind != Kind.FOREVER && remainingNanos() == 0;
    }

    /**
     * Waits for {@code future} until the deadline. {@link #now()} does not wait: it answers only if the future is
     * already done. {@link #lookUntil} waits until its event.
     */
    public <T> T await(CompletableFuture<T> future) throws InterruptedException, ExecutionException, TimeoutException {
        if (kind == Kind.FOREVER) {
            return future.get();
        }
        if (kind == Kind.LOOK) {
            try {
                CompletableFuture.anyOf(future, ended).get();
            } catch (ExecutionException e) {
                // The future failed, which the get below reports, or the event did, which ends the wait as well.
            }
            if (!future.isDone()) {
                throw new TimeoutException("the look ended before the answer came");
            }
            return future.get();
        }
        return future.get(remainingNanos(), TimeUnit.NANOSECONDS);
    }

    /** {@code timeout} in nanoseconds, {@link Long#MAX_VALUE} if it is longer than that. */
    public static long saturatedNanos(Duration timeout) {
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
            case LOOK -> ended.isDone() ? "Deadline[look, ended]" : "Deadline[look]";
            case THROUGH -> "Deadline[through outages]";
            case FOREVER -> "Deadline[forever]";
            case AT -> "Deadline[" + remainingNanos() + "ns left]";
        };
    }
}
