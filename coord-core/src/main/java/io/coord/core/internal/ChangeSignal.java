package io.coord.core.internal;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * "Something changed": waiters take a snapshot before they look at the state, and wait on it only if what they saw
 * did not let them proceed. A change that lands between the look and the wait has already completed the snapshot,
 * so no wake-up is ever lost. Firing is cheap and never blocks, so watchers on ZooKeeper's event thread may do it.
 */
public final class ChangeSignal {
    private final AtomicReference<CompletableFuture<Void>> current = new AtomicReference<>(new CompletableFuture<>());

    /** The signal's current round: it completes at the next {@link #fire}. */
    public CompletableFuture<Void> snapshot() {
        return current.get();
    }

    /** Completes the current round and starts the next. */
    public void fire() {
        current.getAndSet(new CompletableFuture<>()).complete(null);
    }

    /** Waits until {@code seen} fires or the deadline passes; false on timeout. */
    public static boolean await(CompletableFuture<Void> seen, Deadline deadline) throws InterruptedException {
        try {
            deadline.await(seen);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            throw new IllegalStateException("a signal never fails", e);
        }
    }
}
