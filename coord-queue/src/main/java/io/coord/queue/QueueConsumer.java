package io.coord.queue;

import io.coord.core.internal.Deadline;
import io.coord.core.internal.ResultCodes;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.KeeperException.Code;

/**
 * The consuming side of one {@link DistributedQueue}: poll, take, claim and peek over the shared {@link ItemsWatch}.
 *
 * <p>Waiting (for an item, for a children read, or for the connection) honours interrupts and the deadline, and a
 * timed call sends no claim while disconnected. An attempt on one item, once its first write (the claim) is sent,
 * is seen through whatever interrupts arrive and however long it takes, and its result is returned with the
 * interrupt flag still set: an item already removed is never dropped on the floor.
 */
final class QueueConsumer<T> {
    private final SharedQueue queue;
    private final QueueSerializer<T> serializer;

    QueueConsumer(SharedQueue queue, QueueSerializer<T> serializer) {
        this.queue = queue;
        this.serializer = serializer;
    }

    /** An item, with the claim on it when one was asked for. */
    record Taken<T>(T item, QueueClaim<T> claim) {}

    /**
     * Takes (or claims) the first item nobody else holds; null if there is none by the deadline. With
     * {@link Deadline#now()} it reads the children once, after the call, and never waits.
     */
    Taken<T> consume(boolean claim, Deadline deadline) throws InterruptedException {
        ItemsWatch items = queue.items;
        boolean waiting = false;
        boolean listed = false;
        try {
            while (true) {
                CompletableFuture<Void> seen = items.signal();
                // Before a name is taken: a claim sent while disconnected would be waited for past the deadline.
                if (deadline.allowsWaiting() && !queue.context.awaitConnected(deadline)) {
                    return null;
                }
                String name = items.names().next();
                if (name != null) {
                    Taken<T> taken = attempt(name, claim);
                    if (taken != null) {
                        return taken;
                    }
                    continue;
                }
                if (!deadline.allowsWaiting()) {
                    if (listed) {
                        return null;
                    }
                    // A read sent after the call, so that an item written before it is seen.
                    listed = true;
                    if (!Requests.awaitFully(items.read(false), queue.layout.items())) {
                        return null;
                    }
                    continue;
                }
                if (deadline.expired()) {
                    return null;
                }
                if (!waiting) {
                    waiting = true;
                    items.joinWaiters();
                }
                boolean inTime = items.armedAndEmpty() ? ChangeSignal.await(seen, deadline) : refresh(deadline);
                if (!inTime) {
                    return null;
                }
            }
        } finally {
            if (waiting) {
                items.leaveWaiters();
            }
        }
    }

    /** The first item nobody holds, left in place; null when there is none. Costs two reads per item looked at. */
    T peek() {
        NameCache names = queue.items.names();
        boolean listed = false;
        while (true) {
            String name = names.head();
            if (name == null) {
                if (listed) {
                    return null;
                }
                listed = true;
                Requests.awaitFully(queue.items.read(false), queue.layout.items());
                continue;
            }
            String itemPath = queue.layout.item(name);
            CuratorEvent item = Requests.awaitFully(
                    Requests.call(
                            queue.context,
                            itemPath,
                            cb -> queue.context
                                    .client()
                                    .getData()
                                    .inBackground(cb)
                                    .forPath(itemPath)),
                    itemPath);
            if (Requests.code(item) == Code.NONODE) {
                names.forget(name);
                continue;
            }
            if (Requests.code(item) != Code.OK) {
                throw Requests.failure("reading", itemPath, Requests.code(item));
            }
            if (!isClaimed(name)) {
                return serializer.deserialize(ItemCodec.payload(item.getData()));
            }
        }
    }

    /** Asks with a watch whether someone holds the item's claim: getData, since exists would leave a watch. */
    private boolean isClaimed(String name) {
        NameCache names = queue.items.names();
        CuratorEvent claim = queue.readClaimWatched(name);
        Code code = Requests.code(claim);
        if (code == Code.OK) {
            return true; // the name stays out of play until the watch sees the claim go
        }
        names.unwatchClaim(name, true);
        if (code != Code.NONODE) {
            throw Requests.failure("reading", queue.layout.claim(name), code);
        }
        return false;
    }

    /** Claims one item, reads it, and removes it unless a claim was asked for. Null if it was not ours to have. */
    private Taken<T> attempt(String name, boolean claim) {
        try {
            ClaimOps.Claimed claimed = queue.claims.claim(name);
            if (claimed.outcome() == ClaimOps.Outcome.OURS || claimed.outcome() == ClaimOps.Outcome.GONE) {
                queue.items.names().settled(name);
            }
            if (claimed.outcome() != ClaimOps.Outcome.OURS) {
                return null;
            }
            long session = claimed.session();
            byte[] stored = queue.claims.read(name, session);
            if (stored == null) {
                queue.claims.release(name, session);
                return null;
            }
            T item;
            try {
                item = serializer.deserialize(ItemCodec.payload(stored));
            } catch (RuntimeException | Error e) {
                // Nothing is removed before the item is known to be readable: give the claim back, then fail.
                Requests.awaitFully(queue.claims.release(name, session), queue.layout.claim(name));
                throw e;
            }
            if (claim) {
                queue.items.names().holdHere(name, session, queue.context.sessionId());
                return new Taken<>(item, new QueueClaim<>(queue, name, session, item));
            }
            return queue.claims.remove(name, session) ? new Taken<>(item, null) : null;
        } finally {
            queue.items.names().attempted(name);
        }
    }

    /** Reads the children for a blocked consumer; false if the deadline passed first. */
    private boolean refresh(Deadline deadline) throws InterruptedException {
        CompletableFuture<Boolean> answer = queue.items.read(true);
        boolean exists;
        try {
            exists = deadline.await(answer);
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            if (!ResultCodes.isInDoubt(e.getCause()) || queue.context.isClosed()) {
                throw Requests.failure("listing", queue.layout.items(), e.getCause());
            }
            // Curator's retries ran out on a lost connection: a blocked consumer waits for it to come back.
            return queue.context.awaitConnected(deadline);
        }
        if (!exists) {
            // No items parent, so no watch could be left: create it, and the next read leaves one.
            try {
                Requests.await(queue.ensureLayout(), deadline, queue.layout.items());
            } catch (TimeoutException e) {
                return false;
            }
        }
        return true;
    }
}
