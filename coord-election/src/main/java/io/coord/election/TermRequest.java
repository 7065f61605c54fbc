package io.coord.election;

import io.coord.core.Lease;
import io.coord.core.internal.LeaseEngine;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.apache.curator.framework.imps.CuratorFrameworkState;

/**
 * The one pending request for a term of an election object (a latch's candidacy, a selector's terms). At most one
 * is pending; a grant that arrives after the request was withdrawn is released at once. Decisions are made under the
 * owner's lock, so that the owner's phase and the pending request change together; engine calls are made after it
 * is released, because the engine's own locks call back into the owner's.
 */
final class TermRequest {
    /** Takes a grant, or the request's failure, under the owner's lock; returns what to do once it is released. */
    @FunctionalInterface
    interface Grant {
        Runnable take(Lease lease, Throwable error);
    }

    private final LeaseEngine engine;
    private final ReentrantLock ownerLock;
    // Guarded by ownerLock.
    private CompletableFuture<Lease> pending;

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
        CompletableFuture<Lease> request = engine.acquireAsync();
        boolean ours;
        ownerLock.lock();
        try {
            ours = pending == null && wanted.getAsBoolean();
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
     * before or was closed, or if the client was never started. A closed client is left to the join, which fails as
     * queueing would.
     */
    void checkStartable(boolean started, boolean closed, String name, Object phase) {
        if (closed) {
            throw startAfterClose(name);
        }
        if (started) {
            throw new IllegalStateException("already started: " + name + " is " + phase);
        }
        if (engine.client().getState() == CuratorFrameworkState.LATENT) {
            engine.checkUsable();
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
     * and releases its lease. Returns the request, for the caller to cancel once the lock is released (the engine
     * then withdraws it and deletes its node); null if none was pending.
     */
    CompletableFuture<Lease> withdraw() {
        CompletableFuture<Lease> withdrawn = pending;
        pending = null;
        return withdrawn;
    }

    private void answered(CompletableFuture<Lease> request, Lease lease, Throwable error, Grant grant) {
        Runnable after = null;
        ownerLock.lock();
        try {
            if (request == pending) {
                pending = null;
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
