package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.SequenceNode;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.ResultCodes;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.data.Stat;

/**
 * The producing side of one {@link DistributedQueue}: a write is one Stat read of the items parent, for the count,
 * then one transaction that creates the items and bumps the writer's slot (see {@link ProducerSlots}).
 *
 * <p>The capacity check is not atomic with the write: producers that read the count at the same moment may all
 * pass it, so the queue can overshoot its capacity by at most the number of writes racing at that moment. Making it
 * exact would put every producer in a compare-and-set loop on one znode.
 *
 * <p>No write is applied twice. A replay after a lost connection fails atomically on the slot's version. If the
 * session ends in the middle of a write, the slot dies with it and cannot tell; the producer then reads the items
 * whose sequence is at or above the parent's next sequence before the write (where its own must be) and looks for its
 * token. The one gap left: if a consumer took the landed item before that look, the producer writes it again.
 */
final class QueueProducer {
    private static final int MAX_ATTEMPTS = 10;

    private final SharedQueue queue;
    private final int capacity;

    QueueProducer(SharedQueue queue, int capacity) {
        this.queue = queue;
        this.capacity = capacity;
    }

    /**
     * Writes the stored forms of one or more items in one transaction once there is room for all of them. Returns
     * false if the deadline passed before the transaction was sent, in which case nothing was written. With
     * {@link Deadline#now()} it never waits for room, but waits for each answer as long as it takes.
     *
     * <p>Every wait before the transaction (the count read, creating the parents, the room watch, the connection,
     * the writer slot) ends at the deadline. Once the transaction is sent it is seen through, past the deadline if
     * need be, so that the caller learns whether the items landed: see {@link #commit}.
     */
    boolean write(List<byte[]> stored, byte[] token, Deadline deadline) throws InterruptedException {
        boolean waiting = false;
        try {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; ) {
                CompletableFuture<Void> seen = queue.room.signal();
                Stat stat;
                try {
                    stat = await(queue.counts.next(), deadline);
                } catch (CoordinationException e) {
                    if (!deadline.allowsWaiting() || !ResultCodes.isInDoubt(e) || queue.context.isClosed()) {
                        throw e;
                    }
                    // Curator's retries ran out on a lost connection: a caller that may wait, waits for it.
                    if (!queue.context.awaitConnected(deadline)) {
                        return false;
                    }
                    continue;
                }
                if (stat == null) {
                    await(queue.ensureLayout(), deadline);
                    attempt++;
                    continue;
                }
                if (stat.getNumChildren() + stored.size() <= capacity) {
                    // Not sent while disconnected: a timed caller would otherwise wait for it past its deadline.
                    if (deadline.allowsWaiting() && !queue.context.awaitConnected(deadline)) {
                        return false;
                    }
                    ProducerSlots.Slot slot = queue.slots.borrow(deadline);
                    if (slot == null) {
                        return false;
                    }
                    if (commit(slot, stored, token, nextSequence(stat))) {
                        return true;
                    }
                    attempt++;
                    continue;
                }
                if (!deadline.allowsWaiting() || deadline.expired()) {
                    return false;
                }
                if (!waiting) {
                    waiting = true;
                    await(queue.room.join(), deadline); // then count again: room may have come before the watch
                    continue;
                }
                CompletableFuture<Void> armed = queue.room.ensureArmed();
                if (!armed.isDone() || armed.isCompletedExceptionally()) {
                    await(armed, deadline); // a reconnection took the watch away: put it back, then count again
                    continue;
                }
                if (!ChangeSignal.await(seen, deadline)) {
                    return false;
                }
            }
            throw new CoordinationException(
                    "could not write to " + queue.layout.items() + " in " + MAX_ATTEMPTS + " attempts");
        } catch (TimeoutException e) {
            return false; // every timed wait comes before the transaction, or after one that failed as a whole
        } finally {
            if (waiting) {
                queue.room.leave();
            }
        }
    }

    /**
     * One transaction from {@code slot}, which it returns to the pool; true if the items are in the queue, false if
     * nothing was written and it is worth retrying. Seen through whatever the caller's deadline: Curator's retries,
     * then a resend after each reconnection while the slot's session lives, and if that session ends, a look for the
     * token among the items.
     */
    boolean commit(ProducerSlots.Slot slot, List<byte[]> stored, byte[] token, int lowestSequence) {
        CuratorFramework client = queue.context.client();
        List<CuratorOp> ops = new ArrayList<>(stored.size() + 1);
        for (byte[] data : stored) {
            ops.add(TransactionOps.create(client, queue.layout.itemPrefix(), CreateMode.PERSISTENT_SEQUENTIAL, data));
        }
        int slotOp = stored.size();
        ops.add(TransactionOps.setData(client, slot.path, slot.version, new byte[0]));
        CuratorEvent event = Requests.finish(
                queue.context,
                slot.session,
                queue.layout.items(),
                cb -> client.transaction().inBackground(cb).forOperations(ops));
        Code code = Requests.code(event);
        int failed = Requests.failedOp(event);
        if (code == Code.OK) {
            slot.version = event.getOpResults().get(slotOp).getResultStat().getVersion();
            queue.slots.giveBack(slot);
            return true;
        }
        if (failed == slotOp && code == Code.BADVERSION) {
            slot.version++; // a replay: the first attempt landed and moved the version on
            queue.slots.giveBack(slot);
            return true;
        }
        if (failed >= 0 && failed < slotOp && code == Code.NONODE) {
            // No items parent: nothing was written, and the slot is untouched. The next count finds the parent
            // missing and creates it, under the caller's deadline.
            queue.slots.giveBack(slot);
            return false;
        }
        if ((failed == slotOp && code == Code.NONODE) || ResultCodes.isInDoubt(code)) {
            queue.slots.discard(slot); // the session ended during the write: only the items can tell
            return landed(token, lowestSequence);
        }
        queue.slots.giveBack(slot); // failed atomically, so the version is unchanged
        throw Requests.failure("writing to", queue.layout.items(), code);
    }

    /** Looks for an item carrying {@code token} among those at or above {@code lowestSequence}. */
    private boolean landed(byte[] token, int lowestSequence) {
        CuratorFramework client = queue.context.client();
        String items = queue.layout.items();
        CuratorEvent listing = Requests.awaitFully(
                Requests.call(
                        queue.context,
                        items,
                        cb -> client.getChildren().inBackground(cb).forPath(items)),
                items);
        if (Requests.code(listing) == Code.NONODE) {
            return false;
        }
        if (Requests.code(listing) != Code.OK) {
            throw Requests.failure("listing", items, Requests.code(listing));
        }
        // Sent all at once, then awaited: one round trip for the lot.
        List<CompletableFuture<CuratorEvent>> reads = listing.getChildren().stream()
                .map(Layout::parse)
                .flatMap(Optional::stream)
                .filter(n -> n.sequence() >= lowestSequence)
                .map(SequenceNode::name)
                .map(name -> Requests.call(
                        queue.context,
                        queue.layout.item(name),
                        cb -> client.getData().inBackground(cb).forPath(queue.layout.item(name))))
                .toList();
        boolean found = false;
        for (CompletableFuture<CuratorEvent> read : reads) {
            CuratorEvent item = Requests.awaitFully(read, items);
            found |= Requests.code(item) == Code.OK && ItemCodec.carriesToken(item.getData(), token);
        }
        return found;
    }

    /** Waits under the deadline when the caller may wait, and fully (restoring the flag) when it may not. */
    private <V> V await(CompletableFuture<V> answer, Deadline deadline) throws InterruptedException, TimeoutException {
        return Requests.awaitWithin(answer, deadline, queue.layout.items());
    }

    /**
     * The sequence the parent's next child will get. ZooKeeper numbers children by creates alone, but reports a
     * cversion that counts deletes too (twice the creates less the children left), so undo that.
     */
    static int nextSequence(Stat parent) {
        return (parent.getCversion() + parent.getNumChildren()) / 2;
    }
}
