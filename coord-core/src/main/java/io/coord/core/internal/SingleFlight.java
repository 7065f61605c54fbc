package io.coord.core.internal;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Coalesces one kind of read. A caller always gets the answer of a read sent after its call, so it never acts on
 * news older than its question. While one read is in flight, every caller that arrives shares the single next one.
 */
public final class SingleFlight<T> {
    private final Supplier<CompletableFuture<T>> sender;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private CompletableFuture<T> inFlight;
    private CompletableFuture<T> queued;

    public SingleFlight(Supplier<CompletableFuture<T>> sender) {
        this.sender = sender;
    }

    /** The answer of a read sent after this call: the one in flight is too old, so join or start the next. */
    public CompletableFuture<T> next() {
        CompletableFuture<T> start;
        lock.lock();
        try {
            if (inFlight != null) {
                if (queued == null) {
                    queued = new CompletableFuture<>();
                }
                return queued;
            }
            inFlight = start = new CompletableFuture<>();
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
                following = queued;
                queued = null;
                inFlight = following;
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
