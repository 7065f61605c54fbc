package io.coord.core.internal;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A lease on one or more znodes created together. Every state change goes through {@link #moveTo}, and listeners
 * hear the changes in the order they happened, never on the thread that made them.
 */
final class LeaseImpl implements Lease {
    private static final Logger log = LoggerFactory.getLogger(LeaseImpl.class);

    private final ClientContext context;
    private final List<String> nodes;
    private final long fencingToken;
    private final long session;
    private final CompletableFuture<LeaseState> ended = new CompletableFuture<>();
    private final CopyOnWriteArrayList<StateListener> listeners = new CopyOnWriteArrayList<>();
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private LeaseState state;
    private final Queue<LeaseState> undelivered = new ArrayDeque<>();
    private boolean delivering;

    private record StateListener(Consumer<LeaseState> listener, Executor executor) {}

    /** {@code nodes}: full paths in sequence order, the first naming the lease; {@code session}: their owner. */
    LeaseImpl(ClientContext context, List<String> nodes, long fencingToken, long session, LeaseState initial) {
        this.context = context;
        this.nodes = List.copyOf(nodes);
        this.fencingToken = fencingToken;
        this.session = session;
        this.state = initial;
    }

    @Override
    public String path() {
        return nodes.get(0);
    }

    @Override
    public long fencingToken() {
        return fencingToken;
    }

    @Override
    public LeaseState state() {
        LeaseState now = current();
        if ((now == LeaseState.HELD || now == LeaseState.SUSPECT) && context.isClosed()) {
            return current(); // closing the client made it LOST
        }
        return now;
    }

    @Override
    public boolean isValid() {
        return state() == LeaseState.HELD;
    }

    @Override
    public CompletableFuture<LeaseState> ended() {
        // A copy, so that a caller completing or cancelling it cannot fake the lease's end for others.
        return ended.copy();
    }

    @Override
    public void addStateListener(Consumer<LeaseState> listener, Executor executor) {
        listeners.add(new StateListener(
                Objects.requireNonNull(listener, "listener"), Objects.requireNonNull(executor, "executor")));
    }

    @Override
    public CuratorOp fencedCheck() {
        try {
            return context.client().transactionOp().check().forPath(path());
        } catch (Exception e) {
            throw new CoordinationException("cannot build a check operation for " + path(), e);
        }
    }

    @Override
    public void close() {
        if (moveTo(LeaseState.RELEASED, true)) {
            nodes.forEach(context::deleteGuaranteed);
        }
    }

    @Override
    public String toString() {
        return "Lease[" + path() + ", token=" + fencingToken + ", " + current() + "]";
    }

    List<String> nodes() {
        return nodes;
    }

    long session() {
        return session;
    }

    /** Applies one transition if the current state allows it; returns whether the state changed. */
    boolean moveTo(LeaseState next) {
        return moveTo(next, false);
    }

    /**
     * @param onCallersThread the caller is the user's own thread (close()), so that with no listeners to run, the
     *     end can be completed right here instead of on another thread
     */
    private boolean moveTo(LeaseState next, boolean onCallersThread) {
        boolean startDelivery;
        boolean inline;
        lock.lock();
        try {
            if (!allowed(state, next)) {
                return false;
            }
            state = next;
            inline = onCallersThread && !delivering && listeners.isEmpty();
            if (!inline) {
                undelivered.add(next);
            }
            startDelivery = !inline && !delivering;
            delivering |= startDelivery;
        } finally {
            lock.unlock();
        }
        if (next == LeaseState.LOST || next == LeaseState.RELEASED) {
            context.forget(this);
        }
        if (inline) {
            ended.complete(next);
        } else if (startDelivery) {
            context.callbacks().execute(this::deliver);
        }
        return true;
    }

    private LeaseState current() {
        lock.lock();
        try {
            return state;
        } finally {
            lock.unlock();
        }
    }

    private static boolean allowed(LeaseState from, LeaseState to) {
        return switch (from) {
            case HELD -> to == LeaseState.SUSPECT || to == LeaseState.LOST || to == LeaseState.RELEASED;
            case SUSPECT -> to == LeaseState.HELD || to == LeaseState.LOST || to == LeaseState.RELEASED;
            case LOST, RELEASED -> false;
        };
    }

    /** Hands queued states to the listeners one at a time, in order; the final one also completes {@link #ended}. */
    private void deliver() {
        while (true) {
            LeaseState next;
            lock.lock();
            try {
                next = undelivered.poll();
                if (next == null) {
                    delivering = false;
                    return;
                }
            } finally {
                lock.unlock();
            }
            for (StateListener l : listeners) {
                notify(l, next);
            }
            if (next == LeaseState.LOST || next == LeaseState.RELEASED) {
                ended.complete(next);
            }
        }
    }

    private void notify(StateListener l, LeaseState next) {
        try {
            l.executor().execute(() -> {
                try {
                    l.listener().accept(next);
                } catch (RuntimeException e) {
                    log.warn("lease state listener failed for {} entering {}", path(), next, e);
                }
            });
        } catch (RuntimeException e) {
            log.warn("lease state listener executor rejected {} entering {}", path(), next, e);
        }
    }
}
