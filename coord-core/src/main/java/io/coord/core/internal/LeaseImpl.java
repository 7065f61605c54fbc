package io.coord.core.internal;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import java.util.List;
import java.util.Objects;
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
    private final LeaseEngine engine;
    private final long grantedAt = System.nanoTime();
    private final List<String> nodes;
    private final long fencingToken;
    private final long session;
    private final long handle; // the client's handle the session is on: a newer one means the session ended
    private final CompletableFuture<LeaseState> ended = new CompletableFuture<>();
    // Completes once the close that released the lease has sent its deletes.
    private final CompletableFuture<Void> releaseSent = new CompletableFuture<>();
    // Completes once the lease's first node is seen as this session's at or after the grant (see #nodeSeen).
    private final CompletableFuture<Void> seen = new CompletableFuture<>();
    private final SerialExecutor events = SerialExecutor.onCallbacks();
    // Whether the last move, under the lock, was to LOST for the end of the session: then it was no revocation.
    private volatile boolean sessionEnded;
    private final OrderedListeners<Consumer<LeaseState>> listeners;
    // Coord's own reactions to every change (an election interrupting its task), which no listener may hold back.
    private final List<Consumer<LeaseState>> reactions = new CopyOnWriteArrayList<>();
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private LeaseState state;
    private RevocationWatch revocation; // made when the holder first opts in to revocation

    /**
     * {@code nodes}: full paths in sequence order, the first naming the lease; {@code session}: their owner, on the
     * client's handle {@code handle} (see {@link ClientContext#handleIndex()}).
     */
    LeaseImpl(
            ClientContext context,
            LeaseEngine engine,
            List<String> nodes,
            long fencingToken,
            long session,
            long handle,
            LeaseState initial) {
        this.context = context;
        this.engine = engine;
        this.nodes = List.copyOf(nodes);
        this.fencingToken = fencingToken;
        this.session = session;
        this.handle = handle;
        this.state = initial;
        this.listeners = new OrderedListeners<>(path(), events);
    }

    @Override
    public String path() {
        return nodes.get(0);
    }

    @Override
    public long fencingToken() {
        return fencingToken;
    }

    /**
     * The state, or what the news on its way will make it: LOST once the client is closed or its handle is on a
     * newer session, SUSPECT once the handle's connection dropped. The handle is kept current by ZooKeeper's client
     * before its event thread, which a slow callback can hold up, delivers the news that moves the lease.
     */
    @Override
    public LeaseState state() {
        LeaseState now = current();
        if (now != LeaseState.HELD && now != LeaseState.SUSPECT) {
            return now;
        }
        if (context.isClosed() || context.handleIndex() != handle) {
            return LeaseState.LOST;
        }
        return now == LeaseState.HELD && !context.handleHasConnection() ? LeaseState.SUSPECT : now;
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
        lock.lock();
        try {
            LeaseState now = state;
            if (now == LeaseState.LOST || now == LeaseState.RELEASED) {
                listeners.addAndTell(listener, executor, "ended " + now, l -> l.accept(now)); // its end, once
            } else {
                listeners.add(listener, executor);
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public CuratorOp fencedCheck() {
        return TransactionOps.check(context.client(), path());
    }

    @Override
    public void onRevocationRequested(Runnable action, Executor executor) {
        Objects.requireNonNull(action, "action must not be null");
        Objects.requireNonNull(executor, "executor must not be null");
        RevocationWatch watch;
        lock.lock();
        try {
            if (revocation == null) {
                revocation = new RevocationWatch(this, context);
            }
            watch = revocation;
        } finally {
            lock.unlock();
        }
        watch.add(action, executor);
    }

    @Override
    public void close() {
        if (context.isClosed()) {
            // Closing the client lost the hold, even if the context has not got round to saying so: state() reports
            // LOST already, and a close after that changes nothing.
            lostWithSession();
            return;
        }
        if (context.handleIndex() != handle) {
            // Its session ended, which state() reports already. The server may keep that session a while, and the
            // nodes with it: they go now, as the news of the loss would have them go.
            moveTo(LeaseState.LOST, true, () -> nodes.forEach(context::deleteGuaranteed), true);
            return;
        }
        if (!moveTo(LeaseState.RELEASED, true, this::sendRelease) && current() == LeaseState.RELEASED) {
            // Closed on another thread a moment ago: return once its deletes are sent, as that close does, so that
            // whatever this caller sends next lands after them. Sending never blocks, so this wait is short.
            releaseSent.join();
        }
    }

    /** Sent before {@link #ended} completes, so that whatever its callbacks do (close again, acquire) comes after. */
    private void sendRelease() {
        try {
            nodes.forEach(context::deleteGuaranteed);
        } finally {
            releaseSent.complete(null);
        }
    }

    @Override
    public String toString() {
        return "Lease[" + path() + ", token=" + fencingToken + ", " + current() + "]";
    }

    List<String> nodes() {
        return nodes;
    }

    /**
     * Runs {@code reaction} with every state the lease enters after the call, on the thread that moves it, once the
     * lease's lock is released: ZooKeeper's event thread among them, and in no set order between threads, sometimes
     * under the client context's lock (a close, a lost connection). So it must be quick, must not block, must not mind
     * the order, and may take only a lock under which nobody asks a lease for its state; in return, no listener of the
     * user's can delay it.
     */
    void react(Consumer<LeaseState> reaction) {
        reactions.add(Objects.requireNonNull(reaction, "reaction must not be null"));
    }

    /** Runs {@code action} once the lease has ended, LOST or RELEASED, on coord's callback thread. */
    void whenEnded(Runnable action) {
        ended.whenComplete((state, error) -> action.run());
    }

    /**
     * The lease's first node was seen as this session's at or after the grant: by the view, by the read the grant was
     * decided on, or by a read of the node since. A grant decided on a queue that the deletions heard since its read
     * have pruned cannot show that our own node is still there, since nothing watches it: somebody may have deleted
     * it. What must never act on such a node (a leader) waits for {@link #whenConfirmed}.
     */
    void nodeSeen() {
        seen.complete(null);
    }

    /** Whether the node was seen (see {@link #nodeSeen}), or the lease ended, which settles the question too. */
    boolean isConfirmed() {
        return seen.isDone() || ended.isDone();
    }

    /** Whether the lease ended before its node was seen (see {@link #nodeSeen}). */
    boolean endedUnseen() {
        return ended.isDone() && !seen.isDone();
    }

    /**
     * Runs {@code action} once the lease is confirmed (see {@link #isConfirmed}): on the thread that confirms it, or
     * at once. Confirming a grant that was not seen takes a read of its node: {@link #onRevocationRequested} sends it.
     */
    void whenConfirmed(Runnable action) {
        CompletableFuture.anyOf(seen, ended).whenComplete((any, error) -> action.run());
    }

    /** Somebody else deleted a node of ours (a forced revocation): LOST, and the rest of a multi-node lease goes too. */
    void deletedElsewhere() {
        if (moveTo(LeaseState.LOST)) {
            nodes.forEach(context.deletes()::deleteLost);
        }
    }

    long session() {
        return session;
    }

    /** The index of the client's handle it was granted on (see {@link ClientContext#handleIndex}). */
    long handle() {
        return handle;
    }

    ClientContext context() {
        return context;
    }

    /** The engine that granted it: what it reports itself as. */
    LeaseEngine engine() {
        return engine;
    }

    /** When it was granted, on System.nanoTime. */
    long grantedAt() {
        return grantedAt;
    }

    /** Applies one transition if the current state allows it; returns whether the state changed. */
    boolean moveTo(LeaseState next) {
        return moveTo(next, false, () -> {});
    }

    /**
     * LOST because its session ended or its client was closed, whatever session the handle reports by the time the
     * news is heard (Curator may have replaced the handle already, or not yet): not a revocation.
     */
    boolean lostWithSession() {
        return moveTo(LeaseState.LOST, false, () -> {}, true);
    }

    /** Whether it was lost with its session (see {@link #lostWithSession}), for observers telling why it ended. */
    boolean lostWithItsSession() {
        return sessionEnded;
    }

    /** Any move but a loss with the session (see {@link #lostWithSession}). */
    private boolean moveTo(LeaseState next, boolean onCallersThread, Runnable beforeEnd) {
        return moveTo(next, onCallersThread, beforeEnd, false);
    }

    /**
     * @param onCallersThread the caller is the user's own thread (close()), so that with no listeners and nothing
     *     still being delivered, the end can be completed right here instead of on another thread
     * @param beforeEnd run once the state moved to an end, before {@link #ended} completes
     * @param withSession the move is to LOST for the end of the lease's session
     */
    private boolean moveTo(LeaseState next, boolean onCallersThread, Runnable beforeEnd, boolean withSession) {
        LeaseState previous;
        lock.lock();
        try {
            if (!allowed(state, next)) {
                return false;
            }
            previous = state;
            state = next;
            sessionEnded = withSession;
            // Queued under the lock, so that listeners hear the states in the order they were taken.
            listeners.fire("entering " + next, l -> l.accept(next));
        } finally {
            lock.unlock();
        }
        try {
            Observations.leaseMoved(this, previous, next);
            for (Consumer<LeaseState> reaction : reactions) {
                try {
                    reaction.accept(next);
                } catch (RuntimeException e) {
                    log.error("a reaction to {} entering {} failed", this, next, e);
                }
            }
        } finally {
            // Whatever failed above, an ended lease's nodes go and its end is told: a node left in place would hold
            // up every waiter for as long as the session lives, and a second close() would wait for ever.
            if (next == LeaseState.LOST || next == LeaseState.RELEASED) {
                end(next, onCallersThread, beforeEnd);
            }
        }
        return true;
    }

    private void end(LeaseState next, boolean onCallersThread, Runnable beforeEnd) {
        try {
            context.leases().forget(this);
            beforeEnd.run();
        } finally {
            if (onCallersThread && listeners.isEmpty() && events.isIdle()) {
                ended.complete(next);
            } else {
                events.execute(() -> ended.complete(next)); // after every listener has been handed its states
            }
        }
    }

    /** The state as it is, without asking whether the client was closed meanwhile. */
    LeaseState current() {
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
}
