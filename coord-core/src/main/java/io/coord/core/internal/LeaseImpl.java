package io.coord.core.internal;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A lease on one znode. Every state change goes through {@link #moveTo}. */
final class LeaseImpl implements Lease {
    private static final Logger log = LoggerFactory.getLogger(LeaseImpl.class);

    private final ClientContext context;
    private final List<String> nodes;
    private final long fencingToken;
    private final AtomicReference<LeaseState> state;
    private final CompletableFuture<LeaseState> ended = new CompletableFuture<>();
    private final CopyOnWriteArrayList<StateListener> listeners = new CopyOnWriteArrayList<>();

    private record StateListener(Consumer<LeaseState> listener, Executor executor) {}

    /** {@code nodes}: the full paths of the znodes held together, in sequence order; the first names the lease. */
    LeaseImpl(ClientContext context, List<String> nodes, long fencingToken, LeaseState initial) {
        this.context = context;
        this.nodes = List.copyOf(nodes);
        this.fencingToken = fencingToken;
        this.state = new AtomicReference<>(initial);
    }

    @Override
    public String path() {
        return nodes.get(0);
    }

    List<String> nodes() {
        return nodes;
    }

    @Override
    public long fencingToken() {
        return fencingToken;
    }

    @Override
    public LeaseState state() {
        return state.get();
    }

    @Override
    public boolean isValid() {
        return state.get() == LeaseState.HELD;
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
        if (moveTo(LeaseState.RELEASED)) {
            nodes.forEach(context::deleteGuaranteed);
        }
    }

    @Override
    public String toString() {
        return "Lease[" + path() + ", token=" + fencingToken + ", " + state.get() + "]";
    }

    /** Applies one transition if it is allowed from the current state; returns whether the state changed. */
    boolean moveTo(LeaseState next) {
        LeaseState current;
        do {
            current = state.get();
            if (!allowed(current, next)) {
                return false;
            }
        } while (!state.compareAndSet(current, next));
        for (StateListener l : listeners) {
            notify(l, next);
        }
        if (next == LeaseState.LOST || next == LeaseState.RELEASED) {
            context.forget(this);
            context.callbacks().execute(() -> ended.complete(next));
        }
        return true;
    }

    private static boolean allowed(LeaseState from, LeaseState to) {
        return switch (from) {
            case HELD -> to == LeaseState.SUSPECT || to == LeaseState.LOST || to == LeaseState.RELEASED;
            case SUSPECT -> to == LeaseState.HELD || to == LeaseState.LOST || to == LeaseState.RELEASED;
            case LOST, RELEASED -> false;
        };
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
