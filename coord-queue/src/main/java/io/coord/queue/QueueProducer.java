package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.ResultCodes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.data.Stat;

/**
 * The producing side of one {@link DistributedQueue}: a write is one transaction that creates the items and sets
 * a write slot (see {@link Slots}), so that it lands exactly once and its writer always learns whether it did.
 *
 * <p>The capacity check reads the count only when it must. Each write's reply carries the sequence numbers of the
 * items it created, which count every item anyone created since the last read; so a producer knows an upper bound
 * of the size without asking, and reads the size again only when that bound leaves no room. Producers of other
 * clients are counted only from the next reply, so the queue can overshoot its capacity by at most one write per
 * producer racing at the bound. Making it exact would put every producer in a compare-and-set loop on one znode.
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
     * <p>Every wait before the transaction (the count, creating the parents, the watch, the connection, a new slot)
     * ends at the deadline. Once the transaction is sent it is seen through, past the deadline if need be, so that
     * the caller learns whether the items landed.
     */
    boolean write(List<byte[]> stored, Deadline deadline) throws InterruptedException {
        boolean waiting = false;
        try {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; ) {
                CompletableFuture<Void> seen = queue.items.signal();
                int bound = queue.countBound();
                if (bound < 0 || bound + stored.size() > capacity) {
                    Stat stat = count(deadline);
                    if (stat == null) {
                        await(queue.ensureLayout(), deadline);
                        attempt++;
                        continue;
                    }
                    if (stat.getNumChildren() + stored.size() > capacity) {
                        if (!deadline.allowsWaiting() || deadline.expired()) {
                            return false;
                        }
                        if (!waiting) {
                            waiting = true;
                            await(queue.items.join(), deadline); // then count again: room may have come before
                        } else if (!ChangeSignal.await(seen, deadline)) {
                            return false;
                        } else {
                            await(queue.items.ensureArmed(), deadline); // a session end took the watch away
                        }
                        continue;
                    }
                }
                // Not sent while disconnected: a timed caller would otherwise wait for it past its deadline.
                if (deadline.allowsWaiting() && !queue.context.awaitConnected(deadline)) {
                    return false;
                }
                Slots.Outcome outcome =
                        queue.slots.commit(queue.slots.borrow(deadline), creates(stored), queue.layout.items());
                if (outcome.landed()) {
                    if (outcome.reply() != null) {
                        queue.wrote(lastSequence(outcome.reply().getOpResults(), stored.size()));
                    }
                    return true;
                }
                attempt++;
                if (outcome.failedOp() >= 0 && outcome.failedOp() < stored.size() && outcome.code() == Code.NONODE) {
                    await(queue.ensureLayout(), deadline); // no items parent: nothing was written
                } else if (outcome.failedOp() >= 0 && outcome.failedOp() < stored.size()) {
                    throw Requests.failure("writing to", queue.layout.items(), outcome.code());
                }
                // Otherwise nothing landed, and it is worth sending again: the slot vanished, or the reply was lost.
            }
            throw new CoordinationException(
                    "could not write to " + queue.layout.items() + " in " + MAX_ATTEMPTS + " attempts");
        } catch (TimeoutException e) {
            return false; // every timed wait comes before the transaction, or after one that failed as a whole
        } finally {
            if (waiting) {
                queue.items.leave();
            }
        }
    }

    /** A fresh count; a caller that may wait rides out a lost connection. */
    private Stat count(Deadline deadline) throws InterruptedException, TimeoutException {
        while (true) {
            try {
                return await(queue.counts.next(), deadline);
            } catch (CoordinationException e) {
                if (!deadline.allowsWaiting() || !ResultCodes.isInDoubt(e) || queue.context.isClosed()) {
                    throw e;
                }
                if (!queue.context.awaitConnected(deadline)) {
                    throw new TimeoutException("no connection to count " + queue.layout.items());
                }
            }
        }
    }

    private List<CuratorOp> creates(List<byte[]> stored) {
        CuratorFramework client = queue.context.client();
        List<CuratorOp> ops = new ArrayList<>(stored.size());
        for (byte[] data : stored) {
            String prefix = queue.layout.itemPrefix(ItemCodec.isSmall(data));
            ops.add(TransactionOps.create(client, prefix, CreateMode.PERSISTENT_SEQUENTIAL, data));
        }
        return ops;
    }

    private static long lastSequence(List<CuratorTransactionResult> results, int creates) {
        String path = results.get(creates).getResultPath(); // the slot's result comes first
        return Layout.node(path.substring(path.lastIndexOf('/') + 1)).sequence();
    }

    /** Waits under the deadline when the caller may wait, and fully (restoring the flag) when it may not. */
    private <V> V await(CompletableFuture<V> answer, Deadline deadline) throws InterruptedException, TimeoutException {
        return Requests.awaitWithin(answer, deadline, queue.layout.items());
    }
}
