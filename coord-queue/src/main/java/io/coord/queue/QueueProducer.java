package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ChangeSignal;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.Observations;
import io.coord.core.internal.Observer.QueueOperation;
import io.coord.core.internal.TransactionOps;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
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
 * <p>Concurrent untimed writes through one instance share transactions (see {@link #combined}), so producers on
 * many threads of one client pay less than one request per write.
 *
 * <p>The capacity check reads the count only when it must. Each write's reply carries the sequence numbers of the
 * items it created, which count every item anyone created since the last read; so a producer knows an upper bound
 * of the size without asking, and reads the size again only when that bound leaves no room. Writes of other
 * clients, and writes of this one still in flight that go alone, are counted only from their replies, so the queue
 * can overshoot its capacity by at most one write per thread racing at the bound. Making it exact would put every
 * writer in a compare-and-set loop on one znode.
 */
final class QueueProducer {
    private static final int MAX_ATTEMPTS = 10;
    /** Transactions of one producer in flight at once before further writes gather into a shared one. */
    private static final int MAX_IN_FLIGHT = 1;

    /**
     * Writes gathered for one transaction. Once it is their turn the batch is closed, and the first of its writers to
     * see that sends it; until then a writer may still leave it.
     */
    private static final class Batch {
        // Guarded by the producer's lock: each writer's items, in the order they joined.
        final List<List<byte[]>> writes = new ArrayList<>();
        long bytes;
        int items;
        boolean claimed;
        final CompletableFuture<Void> turn = new CompletableFuture<>();
        final CompletableFuture<Boolean> landed = new CompletableFuture<>();

        void add(List<byte[]> stored, long size) {
            writes.add(stored);
            bytes += size;
            items += stored.size();
        }

        List<byte[]> stored() {
            List<byte[]> all = new ArrayList<>(items);
            writes.forEach(all::addAll);
            return all;
        }
    }

    private final SharedQueue queue;
    private final int capacity;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock: the transactions in flight, the batch gathering behind them, and the items of all of them,
    // which the count bound does not hold yet.
    private int sending;
    private Batch forming;
    private int reserved;

    QueueProducer(SharedQueue queue, int capacity) {
        this.queue = queue;
        this.capacity = capacity;
    }

    /**
     * Writes the stored forms of one or more items in one transaction once there is room for all of them. Returns
     * false if the deadline passed, and the one look it then got, before a transaction was sent, in which case nothing
     * was written. With
     * {@link Deadline#now()} it never waits for room, but waits for each answer as long as it takes.
     *
     * <p>Every wait before the transaction (the count, creating the parents, the watch, the connection, a new slot)
     * ends at the deadline, but a call whose deadline passed before it looked at the queue once then makes the look
     * of one that never waits. Once the transaction is sent it is seen through, past the deadline if need be, so that
     * the caller learns whether the items landed.
     */
    boolean write(List<byte[]> stored, Deadline deadline) throws InterruptedException {
        queue.checkStarted();
        long startedAt = System.nanoTime();
        boolean landed = false;
        try {
            landed = writeItems(stored, deadline);
        } catch (TimeoutException e) {
            // The one look (see SharedQueue#lookOnce), which goes alone rather than join a transaction in flight.
            landed = deadline.allowsWaiting() && queue.lookOnce(look -> writeItems(stored, look), false);
        } finally { // a call that throws is a call too, having written nothing
            Observations.queueOperation(
                    queue.path, QueueOperation.OFFER, stored.size(), landed ? stored.size() : 0, startedAt);
        }
        return landed;
    }

    /**
     * Returns whether the items landed.
     *
     * @throws TimeoutException if the deadline passed before the call looked at the queue once: before a count found
     *     it full, and before a transaction was sent
     */
    private boolean writeItems(List<byte[]> stored, Deadline deadline) throws InterruptedException, TimeoutException {
        // A call that never waits answers at once while disconnected; one that waits does so before a write goes out,
        // interruptibly, instead of in a shared transaction Curator holds until the connection is back. A closed
        // client fails the call, below.
        if (!queue.context.isClosed()
                && !(deadline.allowsWaiting() ? queue.context.awaitConnected(deadline) : queue.context.isConnected())) {
            return false;
        }
        checkCounter(deadline);
        if (deadline.awaitsAnswersFully() || deadline.isForever()) {
            Boolean combined = combined(stored, deadline.allowsWaiting());
            if (combined != null) {
                return combined;
            }
        }
        boolean waiting = false;
        boolean looked = false; // a count found the queue full, or a transaction was sent
        try {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; ) {
                CompletableFuture<Void> seen = queue.items.signal();
                int bound = queue.countBound();
                if (bound < 0 || (long) bound + stored.size() > capacity) {
                    Stat stat = count(deadline);
                    if (stat == null) {
                        queue.awaitLayout(deadline);
                        attempt++;
                        continue;
                    }
                    if (stat.getNumChildren() + stored.size() > capacity) {
                        looked = true;
                        if (!deadline.allowsWaiting() || deadline.expired()) {
                            return false;
                        }
                        if (!waiting) {
                            waiting = true;
                            // Then count again: room may have come before.
                            queue.items.awaitArmed(queue.items.watch.join(), deadline);
                            continue;
                        }
                        // The watch is looked at after the signal was taken, as a consumer does: a session end that
                        // took it away since then fires that signal, and one before is seen here.
                        CompletableFuture<Void> armed = queue.items.watch.ensureArmed();
                        if (!armed.isDone() || armed.isCompletedExceptionally()) {
                            queue.items.awaitArmed(armed, deadline); // then count again
                        } else if (!ChangeSignal.await(seen, deadline)) {
                            return false;
                        }
                        continue;
                    }
                }
                queue.checkCounter();
                // Not sent while disconnected: a caller would otherwise wait for it past its deadline, or at all.
                if (deadline.allowsWaiting() ? !queue.context.awaitConnected(deadline) : !queue.context.isConnected()) {
                    return false;
                }
                Slots.Slot slot = queue.slots.borrow(deadline);
                if (!deadline.waitsForConnection() && !queue.context.isConnected()) {
                    queue.slots.giveBack(slot); // the connection dropped while the slot was made
                    return false;
                }
                looked = true;
                if (landed(queue.slots.commit(slot, creates(stored), queue.layout.items), stored.size(), deadline)) {
                    return true;
                }
                attempt++;
            }
            throw new CoordinationException(
                    "could not write to " + queue.layout.items + " in " + MAX_ATTEMPTS + " attempts");
        } catch (TimeoutException e) {
            // Every timed wait comes before the transaction, or after one that failed as a whole.
            if (looked) {
                return false;
            }
            throw e;
        } finally {
            if (waiting) {
                queue.items.watch.leave();
            }
        }
    }

    /**
     * Concurrent untimed writes through this producer share transactions: while {@value #MAX_IN_FLIGHT} are in
     * flight, the writes that arrive gather into the next, which one of them sends as soon as one in flight is
     * answered. Each write so goes out within one round trip, keeps its items together and in order, and returns once
     * its transaction landed. Returns null when the write must go alone: the known bound leaves no room for it beside
     * the items already gathered, the next transaction is full, or the bound was forgotten before its transaction
     * landed.
     *
     * <p>An {@code interruptible} write that is interrupted while its batch still gathers leaves it, and nothing of it
     * is written; once the batch is closed it is seen through, and the interrupt flag kept.
     */
    private Boolean combined(List<byte[]> stored, boolean interruptible) throws InterruptedException {
        long bytes = 0;
        for (byte[] one : stored) {
            bytes += ItemCodec.requestBytes(queue.layout, one.length - ItemCodec.HEADER_BYTES);
        }
        Batch batch;
        lock.lock();
        try {
            int bound = queue.countBound();
            if (bound < 0 || (long) bound + reserved + stored.size() > capacity) {
                return null;
            }
            if (sending < MAX_IN_FLIGHT) {
                sending++;
                batch = new Batch();
                batch.turn.complete(null);
            } else if (forming == null) {
                forming = batch = new Batch();
            } else if (forming.bytes + bytes <= ItemCodec.requestLimit(queue.layout)) {
                batch = forming;
            } else {
                return null;
            }
            batch.add(stored, bytes);
            reserved += stored.size();
        } finally {
            lock.unlock();
        }
        if (!awaitTurn(batch, stored, bytes, interruptible)) {
            return false; // the connection dropped while the batch still gathered, and the call does not wait
        }
        if (claim(batch)) {
            send(batch);
        }
        return BackgroundRequests.awaitFully(batch.landed, queue.layout.items);
    }

    /**
     * Waits for the batch to close; false if the call left it before, having written nothing. An interruptible call
     * leaves it if interrupted, and throws. One that must not wait leaves it if the connection drops: the write ahead
     * of it could then wait for the connection to come back. Once the batch is closed it is seen through.
     */
    private boolean awaitTurn(Batch batch, List<byte[]> stored, long bytes, boolean interruptible)
            throws InterruptedException {
        if (interruptible) {
            try {
                batch.turn.get();
                return true;
            } catch (InterruptedException e) {
                if (leave(batch, stored, bytes)) {
                    throw e;
                }
                Thread.currentThread().interrupt(); // kept for the caller, as for any write already on its way
            } catch (ExecutionException e) {
                throw new IllegalStateException("a batch's turn never fails", e);
            }
        } else {
            queue.awaitWhileConnected(batch.turn, queue.layout.items);
            if (!batch.turn.isDone() && leave(batch, stored, bytes)) {
                return false;
            }
        }
        BackgroundRequests.awaitFully(batch.turn, queue.layout.items); // closed already: seen through
        return true;
    }

    /** Takes the call's items out of the batch if it still gathers; false if it is closed already. */
    private boolean leave(Batch batch, List<byte[]> stored, long bytes) {
        return Locked.get(lock, () -> {
            if (forming != batch) {
                return false;
            }
            batch.writes.removeIf(write -> write == stored); // this call's own list, not an equal one
            batch.bytes -= bytes;
            batch.items -= stored.size();
            reserved -= stored.size();
            if (batch.writes.isEmpty()) {
                forming = null; // nobody is left to send it: the next write starts a new one
            }
            return true;
        });
    }

    /** Whether the caller is the one of the batch's writers to send it. */
    private boolean claim(Batch batch) {
        return Locked.get(lock, () -> {
            boolean first = !batch.claimed;
            batch.claimed = true;
            return first;
        });
    }

    /** Sends a closed batch, then hands the turn to the batch gathering behind it, if any. */
    private void send(Batch batch) {
        try {
            queue.checkCounter(); // its writers checked before joining, but a batch ahead may have ended the count
            batch.landed.complete(sendCombined(batch.stored()));
        } catch (RuntimeException | Error e) {
            batch.landed.completeExceptionally(e);
        } finally {
            Batch next = Locked.get(lock, () -> {
                reserved -= batch.items;
                Batch behind = forming;
                forming = null;
                if (behind == null) {
                    sending--;
                }
                return behind;
            });
            if (next != null) {
                next.turn.complete(null);
            }
        }
    }

    /**
     * True once landed; null if nothing was sent because the count that let the writes in was forgotten meanwhile, or
     * the connection dropped before the transaction went out: each goes alone, and waits for the connection as its
     * caller does.
     */
    private Boolean sendCombined(List<byte[]> stored) {
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            queue.checkCounter();
            Slots.Slot slot = queue.slots.borrowNow();
            if (slot == null) {
                return null;
            }
            if (!queue.context.isConnected()) {
                // Dropped since the batch's turn came: sent now, its writers would wait for the connection, and one
                // that never waits must answer at once. Each goes alone, as its caller's deadline says.
                queue.slots.giveBack(slot);
                return null;
            }
            Slots.Outcome outcome = queue.slots.commit(slot, creates(stored), queue.layout.items);
            if (BackgroundRequests.fully(deadline -> landed(outcome, stored.size(), deadline))) {
                return true;
            }
            if (queue.countBound() < 0) {
                return null; // the queue was reset by hand: the capacity must be checked again, write by write
            }
        }
        throw new CoordinationException(
                "could not write to " + queue.layout.items + " in " + MAX_ATTEMPTS + " attempts");
    }

    /**
     * True if the transaction landed; false if nothing landed and it is worth sending again (the items parent was
     * missing and is now made, the slot vanished, or the reply was lost and the slot settled it).
     */
    private boolean landed(Slots.Outcome outcome, int creates, Deadline deadline)
            throws InterruptedException, TimeoutException {
        if (outcome.landed()) {
            if (outcome.reply() != null) {
                List<CuratorTransactionResult> results = outcome.reply().getOpResults();
                // The slot's setData comes first, and its Stat tells when the transaction was applied.
                queue.wrote(
                        lastSequence(results, creates),
                        results.get(0).getResultStat().getMzxid());
            } else {
                // Landed, its reply lost: the bound misses these items, so the next write that needs it counts.
                queue.forgetCount();
            }
            return true;
        }
        if (outcome.failedOp() >= 0 && outcome.code() == Code.NONODE) {
            queue.resetFound(); // no items parent: nothing was written, and the next one may be a new parent
            queue.awaitLayout(deadline);
        } else if (outcome.failedOp() >= 0 && outcome.code() == Code.NODEEXISTS) {
            // Named like an item already there: ZooKeeper's count of creates has ended (a client that did not see it
            // end wrote at the end's name as well).
            queue.counterEnded = true;
            throw queue.counterRanOut();
        } else if (outcome.failedOp() >= 0) {
            throw BackgroundRequests.failure("writing to", queue.layout.items, outcome.code());
        }
        return false;
    }

    /**
     * Refuses the write if ZooKeeper's count of the creates under the items parent has ended, as a fresh count says:
     * the path may have been made again since this client learnt it.
     */
    private void checkCounter(Deadline deadline) throws InterruptedException, TimeoutException {
        if (queue.counterEnded) {
            // A count sent now: if it finds the count short of its end, the items parent was made again since.
            Stat fresh = count(deadline);
            if (fresh != null && SharedQueue.creates(fresh) != Integer.MAX_VALUE) {
                queue.forgetCount();
            }
        }
        queue.checkCounter();
    }

    /** A fresh count; a caller that may wait rides out a lost connection. */
    private Stat count(Deadline deadline) throws InterruptedException, TimeoutException {
        return BackgroundRequests.awaitThroughOutages(
                queue.context, queue.counts.next(), queue.counts::next, deadline, "count", queue.layout.items);
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
        String path = results.get(creates).getResultPath();
        return Layout.node(path.substring(path.lastIndexOf('/') + 1)).sequence();
    }
}
