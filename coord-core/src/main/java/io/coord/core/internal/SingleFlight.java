package io.coord.core.internal;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Coalesces one kind of read. A caller always gets the answer of a read sent after its call, so it never acts on
 * news older than its question. While one read is in flight, every caller that arrives shares the single next one.
 */
public final class SingleFlight<T> {
    private final Supplier<CompletableFuture<T>> sender;
    private final LongSupplier clock;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private CompletableFuture<T> inFlight;
    private long inFlightSentAt;
    private CompletableFuture<T> queued;
    private CompletableFuture<T> answered; // the last read that answered without failing
    private long answeredSentAt;

    public SingleFlight(Supplier<CompletableFuture<T>> sender) {
        this(sender, () -> 0);
    }

    /**
     * A single flight whose reads are stamped with {@code clock} when sent, for callers that only need a read sent
     * once the clock reached some value (see {@link #sentSince}); the clock counts changes, not time.
     */
    public SingleFlight(Supplier<CompletableFuture<T>> sender, LongSupplier clock) {
        this.sender = sender;
        this.clock = clock;
    }

    /**
     * The answer of a read sent once the clock had reached {@code stamp}: the last one answered or the one in flight
     * if it was, else the next one. Callers woken by one change share one read, whenever they come to ask.
     */
    public CompletableFuture<T> sentSince(long stamp) {
        return join(stamp, true);
    }

    /** The answer of a read sent after this call: the one in flight is too old, so join or start the next. */
    public CompletableFuture<T> next() {
        return join(0, false);
    }

    // One look under one lock: a caller that found the read in flight too old must not queue behind a newer one
    // that another caller started meanwhile and that is recent enough for it.
    private CompletableFuture<T> join(long stamp, boolean mayShare) {
        CompletableFuture<T> start;
        lock.lock();
        try {
            if (mayShare && inFlight != null && inFlightSentAt >= stamp) {
                return inFlight;
            }
            if (mayShare && answered != null && answeredSentAt >= stamp) {
                return answered;
            }
            if (inFlight != null) {
                if (queued == null) {
                    queued = new CompletableFuture<>();
                }
                return queued;
            }
            inFlight = start = new CompletableFuture<>();
            inFlightSentAt = clock.getAsLong();
        } finally {
            lock.unlock();
        }
        send(start);
        return start;
    }

    private void send(CompletableFuture<T> target) {
        CompletableFuture<T> answer;
        try {
            answer = sender.get();
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        answer.whenComplete((value, error) -> {
            CompletableFuture<T> following;
            lock.lock();
            try {
                if (error == null) {
                    answered = CompletableFuture.completedFuture(value);
                    answeredSentAt = inFlightSentAt;
                }
                following = queued;
                queued = null;
                inFlight = following;
                inFlightSentAt = clock.getAsLong();
            } finally {
                lock.unlock();
            }
            // Put the next read on the wire before waking this one's callers.
            if (following != null) {
                send(following);
            }
            if (error != null) {
                target.completeExceptionally(error);
            } else {
                target.complete(value);
            }
        });
    }
}
