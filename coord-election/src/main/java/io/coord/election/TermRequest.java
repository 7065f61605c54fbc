package io.coord.election;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.Executors;
import io.coord.core.internal.LeaseEngine;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.slf4j.Logger;

/**
 * The one pending request for a term of an election object (a latch's candidacy, a selector's terms). At most one
 * is pending; a grant that arrives after the request was withdrawn is released at once. Decisions are made under the
 * owner's lock, so that the owner's phase and the pending request change together; engine calls are made after it
 * is released, because the engine's own locks call back into the owner's.
 */
final class TermRequest {
    private static final Duration FIRST_RETRY_DELAY = Duration.ofSeconds(1);
    private static final Duration MAX_RETRY_DELAY = Duration.ofSeconds(30);

    /** Takes a grant, or the request's failure, under the owner's lock; returns what to do once it is released. */
    @FunctionalInterface
    interface Grant {
        Runnable take(Lease lease, Throwable error);
    }

    private final LeaseEngine engine;
    private final ReentrantLock ownerLock;
    // Guarded by ownerLock.
    private CompletableFuture<Lease> pending;
    // Requests that failed in a row, each tried again later than the one before; and the number of the retry due, so
    // that one withdrawn meanwhile does nothing when its time comes.
    private int failedInARow;
    private int retryDue;
    private int withdrawals;
    private CompletableFuture<Void> retryWait; // the wait of the retry due, if any

    TermRequest(LeaseEngine engine, ReentrantLock ownerLock) {
        this.engine = engine;
        this.ownerLock = ownerLock;
    }

    /**
     * Queues for a term, unless one is pending or {@code wanted} (read under the owner's lock) says no longer. The
     * outcome reaches {@code grant} on {@code executor}, only while this request is still the pending one.
     *
     * @throws RuntimeException what the engine throws when it cannot queue (a closed client, for example)
     */
    void send(BooleanSupplier wanted, Executor executor, Grant grant) {
        int withdrawnBefore;
        ownerLock.lock();
        try {
            withdrawnBefore = withdrawals;
        } finally {
            ownerLock.unlock();
        }
        CompletableFuture<Lease> request = engine.acquireAsync();
        boolean ours;
        ownerLock.lock();
        try {
            // A withdrawal since this send began was meant for it, though it was not pending yet.
            ours = pending == null && withdrawals == withdrawnBefore && wanted.getAsBoolean();
            if (ours) {
                pending = request;
            }
        } finally {
            ownerLock.unlock();
        }
        if (!ours) {
            // Closed or withdrawn in the meantime: the engine deletes the node, and a grant delivered before the
            // cancel is released here, since no answer will take it.
            request.cancel(false);
            request.thenAccept(Lease::close);
            return;
        }
        request.whenComplete((lease, error) -> executor.execute(() -> answered(request, lease, error, grant)));
    }

    /**
     * Under the owner's lock, before a start moves its phase: throws {@link IllegalStateException} if it started
     * before or was closed, or if the client was never started, and {@link CoordinationException} if the client is
     * closed. A start refused for its client's sake leaves the owner unstarted.
     */
    void checkStartable(boolean started, boolean closed, String name, Object phase) {
        if (closed) {
            throw startAfterClose(name);
        }
        if (started) {
            throw new IllegalStateException("already started: " + name + " is " + phase);
        }
        CuratorFrameworkState state = engine.client().getState();
        if (state == CuratorFrameworkState.LATENT) {
            throw new IllegalStateException(
                    "the client must be started before joining the election at " + engine.path());
        }
        if (state == CuratorFrameworkState.STOPPED) {
            throw new CoordinationException("the client is closed: cannot join the election at " + engine.path());
        }
    }

    /**
     * Under the owner's lock: the request failed on something ZooKeeper may grant later (a create throttled, over a
     * quota, or under an ACL that is put right later). Returns what to do once the lock is released: say so, and
     * after a delay (1 s after the first failure in a row, doubling up to 30 s) run {@code again}, unless a request
     * was sent or withdrawn meanwhile, or {@code wanted} (read under the owner's lock) says no longer.
     */
    Runnable retryLater(Logger log, String name, Throwable error, BooleanSupplier wanted, Runnable again) {
        Duration delay = retryDelay(++failedInARow);
        int retry = ++retryDue;
        // A close of the client ends the wait at once, so that the retry meets the close and says so; a withdrawal
        // cancels it.
        CompletableFuture<Void> wait = ClientContext.of(engine.client()).track(Executors.after(delay));
        retryWait = wait;
        return () -> {
            log.warn("{} could not join the election; it tries again in {}", name, delay, error);
            wait.whenCompleteAsync(
                    (due, closed) -> {
                        if (isDue(retry, wanted)) {
                            again.run();
                        }
                    },
                    ClientContext.of(engine.client()).callbacks());
        };
    }

    static Duration retryDelay(int failedInARow) {
        int doublings = Math.min(failedInARow - 1, 5);
        Duration delay = FIRST_RETRY_DELAY.multipliedBy(1L << doublings);
        return delay.compareTo(MAX_RETRY_DELAY) < 0 ? delay : MAX_RETRY_DELAY;
    }

    private boolean isDue(int retry, BooleanSupplier wanted) {
        ownerLock.lock();
        try {
            if (retry == retryDue) {
                retryWait = null;
            }
            return retry == retryDue && pending == null && wanted.getAsBoolean();
        } finally {
            ownerLock.unlock();
        }
    }

    /** What a start after close is refused with, whether or not there was a start before. */
    static IllegalStateException startAfterClose(Object name) {
        return new IllegalStateException("closed: " + name + " cannot be started again");
    }

    /** Under the owner's lock: whether a request is pending. */
    boolean isPending() {
        return pending != null;
    }

    /**
     * Under the owner's lock: forgets the pending request, so that a grant already on its way finds itself unwanted
     * and releases its lease, and a retry waiting for its time does nothing. Returns the request, for the caller to
     * cancel once the lock is released (the engine then withdraws it and deletes its node); null if none was pending.
     */
    CompletableFuture<Lease> withdraw() {
        CompletableFuture<Lease> withdrawn = pending;
        pending = null;
        withdrawals++; // and a send under way, not pending yet
        retryDue++; // a retry of a failed request is withdrawn too, and its wait ended
        failedInARow = 0;
        if (retryWait != null) {
            retryWait.cancel(false);
            retryWait = null;
        }
        return withdrawn;
    }

    private void answered(CompletableFuture<Lease> request, Lease lease, Throwable error, Grant grant) {
        Runnable after = null;
        ownerLock.lock();
        try {
            if (request == pending) {
                pending = null;
                if (error == null) {
                    failedInARow = 0;
                }
                after = grant.take(lease, error);
            }
        } finally {
            ownerLock.unlock();
        }
        if (after != null) {
            after.run();
        } else if (lease != null) {
            lease.close(); // granted after it was withdrawn
        }
    }
}
