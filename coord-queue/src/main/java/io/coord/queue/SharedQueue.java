package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ChangeSignal;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.ClientContext.SessionEvent;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.ResultCodes;
import io.coord.core.internal.SerialExecutor;
import io.coord.core.internal.SingleFlight;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.data.Stat;

/**
 * The state of one queue path in one client, shared by every {@link DistributedQueue} instance built on them: the
 * consumers' cached names and the watch ({@link ItemsWatch}), the write slots, the session marker, and what the
 * client knows of the item count. It is kept in the client's {@link ClientContext}, which also tells it of every
 * change of connection and session.
 */
final class SharedQueue {
    final String path;
    final ClientContext context;
    final Layout layout;
    final ItemsWatch items;
    final Slots slots;
    final SessionMarker marker;
    /** The claims this client holds on the queue, so that a session's end reaches them. */
    final Set<QueueClaim<?>> claims = ConcurrentHashMap.newKeySet();
    /**
     * Ends the claims of sessions the client has left and sends their withdrawals (see {@link QueueClaim}), one at a
     * time: however many claims a session held, one thread and one write slot see to them.
     */
    final Executor withdrawals = SerialExecutor.onCallbacks();
    /** The Stat of the items parent (null if it does not exist yet): numChildren is the size. */
    final SingleFlight<Stat> counts;
    /**
     * ZooKeeper's count of the creates under the items parent has reached its end, 2147483647, as a count or a write
     * of this client found: every later item would be named the same. Cleared only with the count itself, when the
     * items parent is found missing or made again: a count that finds the end short of it is older, or of a new
     * parent, and only a count sent after the end was seen can tell which (see QueueProducer).
     */
    volatile boolean counterEnded;

    /**
     * At most {@code count} items were in the queue once {@code created} items had ever been created in it, as of the
     * change to its children with {@code zxid}.
     */
    private record Known(int count, long created, long zxid) {}

    private final AtomicReference<Known> known = new AtomicReference<>();
    // Fired when the connection drops, the session ends or the client closes.
    private final ChangeSignal dropped = new ChangeSignal();

    /** The shared state of {@code path} on this context's client, made on first use; does no I/O. */
    static SharedQueue of(ClientContext context, String path) {
        return context.shared(SharedQueue.class.getName() + ":" + path, key -> {
            SharedQueue queue = new SharedQueue(context, path);
            context.addSessionListener(queue::sessionChanged);
            return queue;
        });
    }

    private SharedQueue(ClientContext context, String path) {
        this.path = path;
        this.context = context;
        this.layout = new Layout(path, context.client());
        this.items = new ItemsWatch(context, layout, this::forgetCount);
        this.slots = new Slots(this);
        this.marker = new SessionMarker(this);
        this.counts = new SingleFlight<>(this::readCount);
    }

    /**
     * Whether the client is started and not closed: only then does a missing connection mean waiting for it. A closed
     * client fails the call further on, with {@link CoordinationException}.
     */
    boolean started() {
        return context.client().getState() == CuratorFrameworkState.STARTED && !context.isClosed();
    }

    /** Refuses a call on a client never started, or on ZooKeeper's event thread, before anything is sent. */
    void checkStarted() {
        if (context.client().getState() == CuratorFrameworkState.LATENT) {
            throw new IllegalStateException("the client must be started before using the queue at " + path);
        }
        BackgroundRequests.refuseOnEventThread("using the queue at", path);
    }

    /** Creates the parents that are missing; they are never deleted by the queue. */
    CompletableFuture<Void> ensureLayout() {
        return CompletableFuture.allOf(
                Arrays.stream(layout.parents()).map(this::ensure).toArray(CompletableFuture[]::new));
    }

    /**
     * The most items the queue can hold now as far as this client knows without asking, or -1 if it does not know:
     * the count of the last read, plus every item created since, learned from the sequence numbers our own writes
     * were given. Items removed since are not subtracted, so this errs high, as long as the items parent is the one
     * counted: one made again by hand is noticed when a write or a read finds the parent (or a write slot) missing,
     * when a children read finds it made again, or when a write is numbered below the count (see {@link #wrote}).
     */
    int countBound() {
        Known k = known.get();
        return k == null ? -1 : k.count();
    }

    /** A fresh count. */
    void counted(Stat parent) {
        long created = creates(parent);
        if (created == Integer.MAX_VALUE) {
            counterEnded = true; // the next item would be named at the end
        }
        Known counted = new Known(parent.getNumChildren(), created, parent.getPzxid());
        known.accumulateAndGet(counted, (old, now) -> old == null || now.zxid() >= old.zxid() ? now : old);
    }

    /**
     * Our write, applied at {@code zxid}, created items up to {@code lastSequence}: everyone's creates since the last
     * count are now known. A write applied after the count whose sequence does not go past it was numbered by a new
     * items parent, made again since the count (by hand: the queue never deletes it): what the count said is void.
     */
    void wrote(long lastSequence, long zxid) {
        if (lastSequence >= Integer.MAX_VALUE - 1 || lastSequence < 0) {
            counterEnded = true; // the next item would be named at the end, as for a count
        }
        Known before = known.getAndUpdate(k -> {
            if (k == null || zxid <= k.zxid()) {
                return k; // no count yet, or one read after this write, which it includes
            }
            if (lastSequence + 1 <= k.created()) {
                return null;
            }
            long count = k.count() + lastSequence + 1 - k.created();
            return new Known((int) Math.min(Integer.MAX_VALUE, count), lastSequence + 1, zxid);
        });
        if (before != null && zxid > before.zxid() && lastSequence + 1 <= before.created()) {
            items.reset(); // numbered by a new items parent: what the consumers knew of the items is void too
        }
    }

    /**
     * A write found the queue reset by hand (a parent or a write slot missing): the count, and what the consumers knew
     * of the items, are void. Called before any slot is made again, so that no consumer can send a transaction made
     * of what it knew before.
     */
    void resetFound() {
        forgetCount();
        items.reset();
    }

    /** The items parent was found missing or made again: the next write that needs the size counts it. */
    void forgetCount() {
        known.set(null);
        counterEnded = false; // a new parent counts from 0
    }

    /**
     * How many children were ever created under {@code parent}, which is what ZooKeeper names the next one: the
     * server keeps that count, up to 2147483647 at the most, and reports {@code 2 * creates - numChildren} as the
     * cversion, in 32 bits that overflow past 2^30 creates. Halved unsigned, the sum is the count again.
     */
    static long creates(Stat parent) {
        return (parent.getCversion() + parent.getNumChildren()) >>> 1;
    }

    /** Fails a write once ZooKeeper's count of the creates under the items parent has ended. */
    void checkCounter() {
        if (counterEnded) {
            throw counterRanOut();
        }
    }

    CoordinationException counterRanOut() {
        return new CoordinationException("the sequence counter of " + layout.items + " has run out: ZooKeeper"
                + " names items with a 32-bit count of the creates under it, which ends at 2147483647 and then gives"
                + " every item that same name, so the queue takes no more. Once it is drained and unused, delete "
                + path + " and its count starts again from 0");
    }

    /**
     * The session that owns a claim node, or 0 if it is gone. A lost answer is asked again once connected, on a new
     * session too: the server may keep the session that made the claim for a while after the client gave it up, and
     * only the owner this answer names lets the claim be withdrawn then. A busy server's refusal is asked again after
     * a pause: read as "gone", it would leave a claim of ours that nothing withdraws.
     */
    long claimOwner(String claimPath) {
        CuratorEvent event = BackgroundRequests.answered(
                context,
                claimPath,
                cb -> context.client().checkExists().inBackground(cb).forPath(claimPath));
        return BackgroundRequests.code(event) == Code.OK ? event.getStat().getEphemeralOwner() : 0;
    }

    /** Completes when the connection next drops, the session ends or the client closes: take it before looking. */
    CompletableFuture<Void> connectionDropped() {
        return dropped.snapshot();
    }

    /**
     * The deadline of the one look a timed call gets when its own passed before it looked at the queue once: its
     * answers are waited for interruptibly, until the connection drops. Null while the client is not connected, when
     * the look would find nothing it could act on.
     *
     * @throws InterruptedException if the thread is interrupted already
     */
    Deadline lookDeadline() throws InterruptedException {
        Deadline look = Deadline.lookUntil(connectionDropped()); // before the look at the connection
        if (!context.isConnected()) {
            return null;
        }
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        return look;
    }

    /**
     * The one look a timed call gets when its deadline passed before it looked at the queue once (a timeout shorter
     * than the reads it needs, say), as the timed calls of a {@code BlockingQueue} and this library's timed locks do,
     * so that a short timeout does not miss an item, or the room, that is there: while connected, {@code look} runs
     * under {@link #lookDeadline}, waiting for its answers interruptibly. It ends with {@code nothing} if the client
     * is not connected, or if the connection drops before a write of the look is sent.
     */
    <V> V lookOnce(BackgroundRequests.Timed<V> look, V nothing) throws InterruptedException {
        Deadline deadline = lookDeadline();
        if (deadline == null) {
            return nothing;
        }
        try {
            return look.call(deadline);
        } catch (TimeoutException e) {
            return nothing;
        } catch (CoordinationException e) {
            if (!ResultCodes.isInDoubt(e)) {
                throw e;
            }
            return nothing;
        }
    }

    /**
     * Waits for {@code answer}, whatever interrupts arrive, for as long as the client stays connected: not at all if it
     * is not, and no longer once the connection drops. For a call that must not wait out an outage.
     */
    void awaitWhileConnected(CompletableFuture<?> answer, String path) {
        CompletableFuture<Void> dropped = connectionDropped();
        if (context.isConnected()) {
            BackgroundRequests.awaitFully(CompletableFuture.anyOf(answer, dropped), path);
        }
    }

    /** On Curator's listener thread: only flips local state and wakes waiters, never blocks. */
    private void sessionChanged(SessionEvent event) {
        if (event != SessionEvent.RECONNECTED && event != SessionEvent.NEW_SESSION) {
            dropped.fire();
        }
        switch (event) {
            case SUSPENDED -> {} // watches and ephemeral znodes live on unless the session ends
            case RECONNECTED -> items.reconnected(); // same session: claims and watches survived, events did not
            case SESSION_ENDED, NEW_SESSION -> {
                items.sessionEnded(context.sessionId());
                withdrawals.execute(() -> claims.forEach(QueueClaim::sessionEnded));
            }
            case CLOSED -> {
                claims.clear(); // they end with the client's session
                slots.deleteAll(); // sent ahead of the session's close, while the client can still send
                items.sessionEnded(0);
            }
        }
    }

    /**
     * Creates the parents that are missing, waiting as {@code deadline} allows: a caller that may wait rides out a lost
     * connection, and sends the creates again once connected.
     */
    void awaitLayout(Deadline deadline) throws InterruptedException, TimeoutException {
        BackgroundRequests.awaitThroughOutages(context, ensureLayout(), this::ensureLayout, deadline, "create", path);
    }

    /**
     * Sends the create of an empty node named for this client alone (a write slot, a session marker), and waits for
     * its answer under {@code deadline}. If the wait ends first, the create goes on without a waiter, and {@code late}
     * gets its answer when it comes.
     */
    Code createOwn(String node, CreateMode mode, Deadline deadline, Consumer<Code> late)
            throws InterruptedException, TimeoutException {
        CompletableFuture<CuratorEvent> answer = BackgroundRequests.call(
                context,
                node,
                cb -> context.client().create().withMode(mode).inBackground(cb).forPath(node, new byte[0]));
        try {
            return BackgroundRequests.code(BackgroundRequests.awaitWithin(answer, deadline, node));
        } catch (TimeoutException | InterruptedException e) {
            answer.thenAccept(event -> late.accept(BackgroundRequests.code(event)));
            throw e;
        }
    }

    private CompletableFuture<Void> ensure(String parent) {
        CuratorFramework client = context.client();
        return BackgroundRequests.call(
                        context,
                        parent,
                        cb -> client.create()
                                .creatingParentContainersIfNeeded()
                                .inBackground(cb)
                                .forPath(parent))
                .thenAccept(event -> {
                    Code code = BackgroundRequests.code(event);
                    if (code != Code.OK && code != Code.NODEEXISTS) {
                        throw BackgroundRequests.failure("creating", parent, code);
                    }
                });
    }

    private CompletableFuture<Stat> readCount() {
        return BackgroundRequests.call(
                        context,
                        layout.items,
                        cb -> context.client().checkExists().inBackground(cb).forPath(layout.items))
                .thenApply(event -> switch (BackgroundRequests.code(event)) {
                    case OK -> {
                        counted(event.getStat());
                        yield event.getStat();
                    }
                    case NONODE -> {
                        forgetCount();
                        yield null;
                    }
                    default ->
                        throw BackgroundRequests.failure(
                                "reading the size of", layout.items, BackgroundRequests.code(event));
                });
    }
}
