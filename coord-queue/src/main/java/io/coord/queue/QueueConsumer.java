package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ChangeSignal;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.Executors;
import io.coord.core.internal.MultiRead;
import io.coord.core.internal.Observations;
import io.coord.core.internal.Observer.QueueOperation;
import io.coord.core.internal.ResultCodes;
import io.coord.core.internal.TransactionOps;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.IntSupplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.OpResult;

/**
 * The consuming side of one {@link DistributedQueue}: poll, take, drain, claim and peek over the shared
 * {@link ItemsWatch}.
 *
 * <p>A take is two requests: one read of the items' data (a multi-read of up to a batch of small items), then one
 * transaction that removes them and proves, item by item, that nobody holds a claim on it: {create claims/X, delete
 * claims/X, delete items/X}, which fails as a whole if claims/X exists and leaves nothing behind when it succeeds.
 * The transaction also sets a write slot, so that its outcome is known whatever happens to the reply or the session
 * (see {@link Slots}): an item is delivered exactly once. A batch that loses a race to another consumer is sent again
 * with what is left. A claim is the same read, then {create claims/X EPHEMERAL, check items/X}.
 *
 * <p>Waiting (for an item, a read, the connection, a new slot) honours interrupts and the deadline, and a timed call
 * sends no write while disconnected. Once a write is sent it is seen through whatever interrupts arrive, and its
 * result is returned with the interrupt flag still set: an item already removed is never dropped on the floor.
 */
final class QueueConsumer<T> {
    /** Items taken in one round trip at most. */
    static final int MAX_BATCH = 100;
    /** How long a name whose claim this client may not read stays out before it is tried again. */
    static final Duration UNREADABLE_CLAIM_LOOK = Duration.ofSeconds(1);

    private final SharedQueue queue;
    private final ItemReads<T> reads;
    // A removal whose outcome nobody can learn, met by a round after others had taken items: the call returned those,
    // and the next call throws this, since a read cannot bring the failure back as it brings back an unreadable item.
    private final AtomicReference<Slots.WriteInDoubt> owed = new AtomicReference<>();

    QueueConsumer(SharedQueue queue, QueueSerializer<T> serializer) {
        this.queue = queue;
        this.reads = new ItemReads<>(queue, serializer);
    }

    /** An item, with the claim on it when one was asked for. */
    record Taken<T>(T item, QueueClaim<T> claim) {}

    /**
     * Takes up to {@code max} items (one claimed item if {@code claim}), in queue order, waiting until the deadline
     * for the first one; once it has some, it takes what is there and returns. With {@link Deadline#now()} it never
     * waits, and reads the children once, after the call, if it knows of no item. A deadline that passes before the
     * call looked at the queue once still gets that look.
     */
    List<Taken<T>> take(int max, boolean claim, Deadline deadline) throws InterruptedException {
        return take(max, claim, deadline, null);
    }

    /**
     * Moves up to {@code max} items into {@code sink} as {@link #take} takes them, each round's before the next round
     * removes more, and no more in a round than a bounded {@link BlockingQueue} sink has room for then; returns how
     * many. A sink that throws ends the call with its exception, as it is: the items of that round after the one it
     * refused are lost, and no more are removed.
     */
    int drain(Collection<? super T> sink, int max, Deadline deadline) throws InterruptedException {
        IntSupplier room = sink instanceof BlockingQueue<?> bounded ? bounded::remainingCapacity : () -> max;
        try {
            return take(max, false, deadline, new Sink<>(sink::add, room)).size();
        } catch (SinkRefused e) {
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw (RuntimeException) e.getCause();
        }
    }

    /** Where a drain puts its items, and how many it has room for now. */
    private record Sink<T>(Consumer<? super T> add, IntSupplier room) {}

    /** What a drain's sink threw, carried past the failure handling of the rounds. */
    private static final class SinkRefused extends RuntimeException {
        private static final long serialVersionUID = 1L;

        SinkRefused(Throwable cause) {
            super(cause);
        }
    }

    private List<Taken<T>> take(int max, boolean claim, Deadline deadline, Sink<T> sink) throws InterruptedException {
        queue.checkStarted();
        long startedAt = System.nanoTime();
        List<Taken<T>> taken = new ArrayList<>();
        try {
            Slots.WriteInDoubt failure = owed.getAndSet(null);
            if (failure != null) {
                throw failure;
            }
            if (!takeItems(max, claim, deadline, sink, taken) && taken.isEmpty() && deadline.allowsWaiting()) {
                // The deadline passed before the call looked at the queue once: it gets one look (see SharedQueue).
                queue.lookOnce(look -> takeItems(max, claim, look, sink, taken), false);
            }
            return taken;
        } finally { // a call that throws is a call too, having moved what its sink took before it refused, or nothing
            QueueOperation operation =
                    claim ? QueueOperation.CLAIM : sink != null ? QueueOperation.DRAIN : QueueOperation.POLL;
            Observations.queueOperation(queue.path, operation, max, taken.size(), startedAt);
        }
    }

    /**
     * Fills {@code taken}; returns whether the call looked at the queue once: a round of names ended, or a read of the
     * children answered and left no name to try.
     */
    private boolean takeItems(int max, boolean claim, Deadline deadline, Sink<T> sink, List<Taken<T>> taken)
            throws InterruptedException {
        int delivered = 0; // how many of them the sink has
        ItemsWatch items = queue.items;
        boolean waiting = false;
        boolean listed = false; // the call read the children (or its read went with the connection)
        boolean looked = false; // a round ended: its names are taken, gone, held or back in play
        boolean foundNone = false; // a read of the children answered, and left no name to try
        try {
            while (taken.size() < max) {
                if (looked && taken.isEmpty() && deadline.allowsWaiting() && deadline.expired()) {
                    // Each name tried so far was gone or held: no new write past the deadline, however many are left.
                    return looked || foundNone;
                }
                CompletableFuture<Void> seen = items.signal();
                // Before a name is taken: a write sent while disconnected would be waited for past the deadline. A
                // call that never waits answers at once while disconnected, from its first round on, and so does one
                // that has taken items: it moves what it has rather than wait for more.
                if (deadline.allowsWaiting() && taken.isEmpty()
                        ? !queue.context.awaitConnected(deadline)
                        : queue.started() && !queue.context.isConnected()) {
                    return looked || foundNone;
                }
                int room = sink == null
                        ? max - taken.size()
                        : Math.min(max - taken.size(), sink.room().getAsInt());
                if (room <= 0) {
                    return looked || foundNone; // a bounded sink that is full: nothing more is taken
                }
                List<String> names =
                        items.names().take(claim ? 1 : Math.min(room, MAX_BATCH), ItemCodec.smallItemsPerRead());
                if (!names.isEmpty()) {
                    boolean deadlinePassed = !round(names, claim, deadline, taken);
                    delivered = deliver(taken, delivered, sink);
                    if (deadlinePassed) {
                        return looked || foundNone;
                    }
                    looked = true;
                    continue;
                }
                foundNone |= listed;
                if (!deadline.allowsWaiting() || !taken.isEmpty()) {
                    // What is there, without waiting for more: the names known ran out, so one read sent after the
                    // call, so that an item written before it is seen (the names may be an earlier call's).
                    if (listed || (deadline.allowsWaiting() && deadline.expired())) {
                        return looked || foundNone;
                    }
                    listed = true;
                    if (deadline.allowsWaiting()) {
                        // A call that has taken items ends with them rather than wait for a lost connection.
                        CompletableFuture<Void> dropped = queue.connectionDropped();
                        if (!queue.context.isConnected()) {
                            return looked || foundNone;
                        }
                        BackgroundRequests.await(
                                CompletableFuture.anyOf(items.read(), dropped), deadline, queue.layout.items);
                    } else {
                        BackgroundRequests.awaitWithin(items.read(), deadline, queue.layout.items);
                    }
                    continue;
                }
                if (deadline.expired()) {
                    return looked || foundNone;
                }
                if (!waiting) {
                    waiting = true; // the watch first: arming it counts as a change, so a read follows
                    items.awaitArmed(items.watch.join(), deadline);
                    continue;
                }
                CompletableFuture<Void> armed = items.watch.ensureArmed();
                if (!armed.isDone() || armed.isCompletedExceptionally()) {
                    items.awaitArmed(armed, deadline); // a session end took the watch away
                } else if (items.changedSinceRead()) {
                    if (!read(deadline)) {
                        return looked || foundNone;
                    }
                    listed = true;
                } else if (!ChangeSignal.await(seen, deadline)) {
                    return looked || foundNone;
                }
            }
            return looked || foundNone;
        } catch (TimeoutException e) {
            return looked || foundNone;
        } catch (RuntimeException | Error | InterruptedException e) {
            if (taken.isEmpty() || e instanceof SinkRefused) {
                throw e;
            }
            // Items already removed are the caller's whatever a later round meets, an Error from the serializer
            // included: they go out now (a drain's sink has them already, as each round hands its items over as it
            // ends), and the next call meets the failure (an item that failed is back in place, and the interrupt
            // flag is kept).
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            } else if (e instanceof Slots.WriteInDoubt inDoubt) {
                owed.set(inDoubt);
            }
            return true;
        } finally {
            if (waiting) {
                items.watch.leave();
            }
        }
    }

    /** Hands the items from {@code from} on to the sink, if there is one; returns how many it has now. */
    private static <T> int deliver(List<Taken<T>> taken, int from, Sink<T> sink) {
        if (sink == null) {
            return taken.size();
        }
        for (int i = from; i < taken.size(); i++) {
            try {
                sink.add().accept(taken.get(i).item());
            } catch (RuntimeException | Error e) {
                throw new SinkRefused(e);
            }
        }
        return taken.size();
    }

    /** The first item nobody holds, left in place: one multi-read of the item and its claim per name looked at. */
    T peek() {
        queue.checkStarted();
        NameCache names = queue.items.names();
        boolean listed = false;
        while (true) {
            String name = names.head();
            if (name == null) {
                if (listed) {
                    return null;
                }
                listed = true;
                BackgroundRequests.awaitFully(queue.items.read(), queue.layout.items);
                continue;
            }
            // Not sent again after a lost connection: the call never waits for it.
            List<OpResult> results = BackgroundRequests.awaitFully(
                    MultiRead.read(queue.context, List.of(queue.layout.item(name), queue.layout.claim(name)), false),
                    queue.layout.item(name));
            byte[] stored = ItemReads.data(results.get(0), queue.layout.item(name));
            if (stored == null) {
                names.gone(name);
            } else if (ItemReads.claimed(results.get(1), queue.layout.claim(name))) {
                watchClaim(name);
            } else {
                return reads.decode(name, stored);
            }
        }
    }

    /**
     * Takes or claims the named items, which the caller holds out of play; every name ends gone, held, watched or
     * back in play. Returns false if the deadline passed before a write was sent.
     */
    private boolean round(List<String> names, boolean claim, Deadline deadline, List<Taken<T>> taken)
            throws InterruptedException {
        NameCache cache = queue.items.names();
        Slots.Slot slot = null;
        ItemReads.Stored stored;
        long readAt = cache.epoch(); // before anything read ahead is taken
        // A call that has taken items ends with them rather than wait for a lost connection.
        boolean waitsForConnection = deadline.waitsForConnection() && taken.isEmpty();
        try {
            slot = queue.slots.borrow(deadline.waitsForConnection() && !waitsForConnection ? Deadline.now() : deadline);
            stored = reads.read(names, deadline, waitsForConnection);
        } catch (TimeoutException e) {
            abandon(names, slot);
            return false;
        } catch (RuntimeException | InterruptedException e) {
            abandon(names, slot);
            if (e instanceof CoordinationException && !taken.isEmpty() && ResultCodes.isInDoubt(e)) {
                return false; // a read lost with the connection, not sent again: the call ends with what it took
            }
            throw e;
        }
        List<String> present = new ArrayList<>();
        List<T> decoded = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            try {
                byte[] one = stored.of(i);
                if (one == null) {
                    cache.gone(name);
                    continue;
                }
                decoded.add(reads.decode(name, one));
                present.add(name);
            } catch (RuntimeException | Error e) {
                // Nothing is removed unless it is known to be readable, by this client and by the serializer. The
                // items before it go out now; this one fails the next call that reaches it.
                names.subList(i, names.size()).forEach(queue.items::putBack);
                if (present.isEmpty()) {
                    queue.slots.giveBack(slot);
                    throw e;
                }
                break;
            }
        }
        if (present.isEmpty()) {
            queue.slots.giveBack(slot);
            return true;
        }
        if (!waitsForConnection && !queue.context.isConnected()) {
            abandon(present, slot); // a write sent now would be waited for until the connection is back
            return false;
        }
        if (claim) {
            return claimOne(slot, present.get(0), decoded.get(0), taken, readAt, deadline);
        }
        return resetSince(readAt, present, slot) || remove(slot, present, decoded, taken, deadline);
    }

    /**
     * Whether the queue was found reset since the data was read ({@code readAt}, the cache's epoch then): what was
     * read ahead of the reset may be an old item's, and its name a new item's. Then the round ends before its write,
     * and the names go back in play, for a read after the reset to settle. Asked right before the write is sent.
     */
    private boolean resetSince(long readAt, List<String> names, Slots.Slot slot) {
        if (queue.items.names().epoch() == readAt) {
            return false;
        }
        abandon(names, slot);
        return true;
    }

    /** A round that ended before its write: the names go back in play, and the slot, if borrowed, back to idle. */
    private void abandon(List<String> names, Slots.Slot slot) {
        names.forEach(queue.items::putBack);
        if (slot != null) {
            queue.slots.giveBack(slot); // nothing was written with it, so its version is still known
        }
    }

    /** False if the deadline passed after a transaction that failed as a whole, while the queue's parents were made. */
    private boolean remove(
            Slots.Slot slot, List<String> names, List<T> decoded, List<Taken<T>> taken, Deadline deadline)
            throws InterruptedException {
        CuratorFramework client = queue.context.client();
        List<CuratorOp> ops = new ArrayList<>(3 * names.size());
        for (String name : names) {
            String claimPath = queue.layout.claim(name);
            ops.add(TransactionOps.create(client, claimPath, CreateMode.EPHEMERAL, new byte[0]));
            ops.add(TransactionOps.delete(client, claimPath));
            ops.add(TransactionOps.delete(client, queue.layout.item(name)));
        }
        Slots.Outcome outcome = commit(slot, ops, queue.layout.items, names);
        NameCache cache = queue.items.names();
        if (outcome.landed()) {
            for (int i = 0; i < names.size(); i++) {
                cache.gone(names.get(i));
                taken.add(new Taken<>(decoded.get(i), null));
            }
            return true;
        }
        int failed = outcome.failedOp();
        int lost = failed >= 0 && failed < ops.size() ? failed / 3 : -1;
        for (int i = 0; i < names.size(); i++) {
            if (i != lost) {
                queue.items.putBack(names.get(i));
            }
        }
        // Per item: create claims/X, delete claims/X, delete items/X.
        return lost < 0 || settleLost(names.get(lost), failed % 3 != 2, outcome.code(), deadline);
    }

    /**
     * Claims one item: {create claims/X EPHEMERAL, check items/X}. The claim is ours if the session we sent it on is
     * still the client's when the answer comes; if the session changed, or the landing was learned from the slot,
     * the claim's own owner says. Returns false if, while the session's marker was made, the deadline passed or the
     * connection dropped under a deadline that does not wait for it: then nothing was sent.
     */
    private boolean claimOne(Slots.Slot slot, String name, T item, List<Taken<T>> taken, long readAt, Deadline deadline)
            throws InterruptedException {
        CuratorFramework client = queue.context.client();
        String claimPath = queue.layout.claim(name);
        long session = queue.context.sessionId();
        // The marker before the claim: once the claim lands, nothing may fail before it is handed out or put back.
        String marker;
        try {
            marker = queue.marker.of(session, deadline);
            if (marker == null) {
                abandon(List.of(name), slot); // the session ended meanwhile
                return true;
            }
        } catch (TimeoutException e) {
            abandon(List.of(name), slot);
            return false;
        } catch (RuntimeException | Error | InterruptedException e) {
            abandon(List.of(name), slot);
            throw e;
        }
        if (resetSince(readAt, List.of(name), slot)) {
            return true;
        }
        if (!deadline.waitsForConnection() && !queue.context.isConnected()) {
            abandon(List.of(name), slot); // the connection dropped while the marker was made
            return false;
        }
        Slots.Outcome outcome = commit(
                slot,
                List.of(
                        TransactionOps.create(client, claimPath, CreateMode.EPHEMERAL, new byte[0]),
                        TransactionOps.check(client, queue.layout.item(name))),
                claimPath,
                List.of(name));
        NameCache cache = queue.items.names();
        if (!outcome.landed()) {
            if (outcome.failedOp() == 0 || outcome.failedOp() == 1) {
                return settleLost(name, outcome.failedOp() == 0, outcome.code(), deadline);
            }
            queue.items.putBack(name);
            return true;
        }
        long owner =
                outcome.reply() != null && queue.context.sessionId() == session ? session : queue.claimOwner(claimPath);
        String provenBy = owner != 0 && owner == session ? marker : null;
        if (owner == 0 || owner != queue.context.sessionId()) {
            queue.items.putBack(name); // the claim died with its session before it could be used
            QueueClaim.withdraw(queue, name, provenBy); // though the server may keep its session a while
            return true;
        }
        // A claim that landed on a newer session than the marker's (Curator sent it again there) is held all the
        // same: the claim makes that session's marker when it needs it.
        cache.held(name, owner);
        if (queue.context.sessionId() != owner) {
            // The session ended after the check above but before the name was held, so its end passed the name by.
            queue.items.released(name, owner);
            QueueClaim.withdraw(queue, name, provenBy);
            return true;
        }
        taken.add(new Taken<>(item, QueueClaim.held(queue, name, owner, item, provenBy)));
        return true;
    }

    /**
     * Commits with the slot. A failure with no outcome (a refusal of the slot's own write, a slot deleted by hand)
     * puts the names back in play: a later read finds out which of them are gone.
     */
    private Slots.Outcome commit(Slots.Slot slot, List<CuratorOp> ops, String what, List<String> names) {
        try {
            return queue.slots.commit(slot, ops, what);
        } catch (RuntimeException | Error e) {
            names.forEach(queue.items::putBack);
            throw e;
        }
    }

    /**
     * An item a transaction failed on: claimed by someone (watch the claim), or gone. {@code onClaim}: the request that
     * failed was on the item's claim, not on the item. False if the deadline passed while the queue's parents were
     * made again.
     */
    private boolean settleLost(String name, boolean onClaim, Code code, Deadline deadline) throws InterruptedException {
        NameCache cache = queue.items.names();
        if (onClaim && code == Code.NODEEXISTS) {
            watchClaim(name);
        } else if (!onClaim && code == Code.NONODE) {
            cache.gone(name); // taken by another consumer
        } else if (onClaim && code == Code.NONODE) {
            queue.items.putBack(name); // no claims parent yet
            try {
                queue.awaitLayout(deadline);
            } catch (TimeoutException e) {
                return false;
            }
        } else {
            queue.items.putBack(name);
            throw BackgroundRequests.failure(
                    "taking", onClaim ? queue.layout.claim(name) : queue.layout.item(name), code);
        }
        return true;
    }

    /**
     * Holds the name out until another client's claim on it goes: a getData with a watch, since exists would leave a
     * watch on a claim that is not there. Held out before the read, so that a delete that fires the watch at once
     * still finds it; answered in the background.
     */
    private void watchClaim(String name) {
        NameCache cache = queue.items.names();
        cache.watch(name);
        String claimPath = queue.layout.claim(name);
        BackgroundRequests.call(
                        queue.context,
                        claimPath,
                        cb -> queue.context
                                .client()
                                .getData()
                                .usingWatcher(queue.items.claimsWatcher())
                                .inBackground(cb)
                                .forPath(claimPath))
                .whenComplete((event, error) -> {
                    Code code = error != null ? null : BackgroundRequests.code(event);
                    if (code == Code.NOAUTH) {
                        // This client may not read the claim, so it cannot watch it: the name comes back a while
                        // later, not at once, or the consumers here would go round it in a loop of requests.
                        Executors.later(() -> queue.items.claimGone(name), UNREADABLE_CLAIM_LOOK);
                    } else if (code != Code.OK) {
                        queue.items.claimGone(name); // gone already, or unknown: the next attempt finds out
                    }
                });
    }

    /** Reads the children for a consumer; true once a read answered, false if the deadline passed first. */
    private boolean read(Deadline deadline) throws InterruptedException {
        try {
            // Curator's retries run out on a lost connection: a waiting consumer waits for it to come back.
            BackgroundRequests.awaitThroughOutages(
                    queue.context,
                    queue.items.readCurrent(),
                    queue.items::readCurrent,
                    deadline,
                    "read",
                    queue.layout.items);
            return true;
        } catch (TimeoutException e) {
            return false;
        }
    }
}
