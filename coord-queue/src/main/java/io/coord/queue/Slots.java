package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.ResultCodes;
import io.coord.core.internal.TransactionOps;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Write slots make the outcome of every write knowable, whatever happens to its reply or to its session. A slot is a
 * PERSISTENT znode {@code slots/<uuid>} that one thread at a time borrows, so that its data version is known exactly
 * between writes. Every write that moves an item (an offer, a poll's or a drain's removal, a claim, an ack, a
 * release) is one transaction that also sets the slot's data at that version:
 *
 * <ul>
 *   <li>a replay of a transaction that landed (Curator resends after a lost connection) fails as a whole on the
 *       version, and that failure itself says the first send landed;
 *   <li>when the reply is lost for good (the retries ran out, or the session ended), one more setData at the same
 *       version settles it: if it succeeds the transaction can never land, and if it fails on the version the slot
 *       is read to tell whether the transaction landed or an earlier send of the settling write did.
 * </ul>
 *
 * A slot outlives the session, which is what lets a client tell after an expiry. Slots are kept for the client's
 * life, reused across sessions, and deleted when the client closes (see SharedQueue).
 */
final class Slots {
    private static final Logger log = LoggerFactory.getLogger(Slots.class);
    private static final byte[] EMPTY = new byte[0];

    /** One slot: its znode and its data version as of the last write. */
    static final class Slot {
        final String path;
        int version;
        // How many resets its client had found when it was made: one made before the last is most likely gone.
        final long resetsBefore;
        // The client's connection epoch when its last transaction was sent: a change means Curator may have sent it
        // again after a lost connection.
        long sentInEpoch;

        private Slot(String path, long resetsBefore) {
            this.path = path;
            this.resetsBefore = resetsBefore;
        }
    }

    /**
     * How a transaction ended. Landed: {@code reply} holds the results (the slot's first, then the caller's
     * operations), or is null when the landing was learned from the slot alone. Not landed: nothing of it was
     * applied, and {@code failedOp} is the index among the caller's operations of the one that failed it with
     * {@code code}, or -1 when the slot vanished or the reply was lost and the slot settled it.
     */
    record Outcome(boolean landed, CuratorEvent reply, int failedOp, Code code) {
        static Outcome landed(CuratorEvent reply) {
            return new Outcome(true, reply, -1, Code.OK);
        }

        static Outcome failed(int failedOp, Code code) {
            return new Outcome(false, null, failedOp, code);
        }
    }

    private final SharedQueue queue;
    private final ConcurrentLinkedQueue<Slot> idle = new ConcurrentLinkedQueue<>();
    private final Set<String> created = ConcurrentHashMap.newKeySet();
    private final AtomicLong resets = new AtomicLong();

    Slots(SharedQueue queue) {
        this.queue = queue;
    }

    /**
     * An idle slot, or a new one.
     *
     * @throws TimeoutException if the deadline passed while creating one; a create still unanswered then is adopted
     *     when its answer comes
     */
    Slot borrow(Deadline deadline) throws InterruptedException, TimeoutException {
        return borrow(deadline, () -> {});
    }

    private Slot borrow(Deadline deadline, Runnable inDoubt) throws InterruptedException, TimeoutException {
        Slot slot = idle.poll();
        return slot != null ? slot : create(deadline, inDoubt);
    }

    /** An idle slot, or a new one, waiting for the answers as long as they take (the interrupt flag is kept). */
    Slot borrowFully() {
        return borrowFully(() -> {});
    }

    /**
     * Like {@link #borrowFully()}, running {@code inDoubt} when a new slot's create comes back in doubt: the wait may
     * then last as long as the outage, which a caller waiting for the borrower may not wait out.
     */
    Slot borrowFully(Runnable inDoubt) {
        return BackgroundRequests.fully(deadline -> borrow(deadline, inDoubt));
    }

    /**
     * An idle slot, or a new one, without waiting for a lost connection: null if it dropped before a new slot was
     * known to be made (one that may have been is deleted).
     */
    Slot borrowNow() {
        try {
            return borrow(Deadline.now());
        } catch (TimeoutException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("a borrow that never waits was interrupted", e); // nothing waits for one
        }
    }

    /** A slot nothing was written with goes back to idle, unless a reset was found since it was made. */
    void giveBack(Slot slot) {
        if (slot.resetsBefore == resets.get()) {
            idle.add(slot);
        }
    }

    /**
     * Sends {@code ops} behind the slot's setData, sees the transaction through, and gives the slot back.
     * Waits for the outcome whatever interrupts arrive (the flag is restored), since a write on the wire is never
     * abandoned half-known.
     */
    Outcome commit(Slot slot, List<CuratorOp> ops, String what) {
        return commit(slot, ops, what, () -> {});
    }

    /** Like {@link #commit(Slot, List, String)}, running {@code inDoubt} first if the reply leaves it to be settled. */
    Outcome commit(Slot slot, List<CuratorOp> ops, String what, Runnable inDoubt) {
        if (queue.context.isClosed()) {
            throw ClientContext.closedError(what); // nothing sent
        }
        CuratorEvent reply;
        try {
            reply = BackgroundRequests.awaitFully(send(slot, ops, what), what);
        } catch (CoordinationException e) {
            throw inDoubtIfClosed(e, what);
        }
        return outcome(slot, reply, what, inDoubt);
    }

    /**
     * A write on its way when the client closed: sent ahead of the session's close, it may land, and the slot that
     * could tell is deleted with the client.
     */
    private CoordinationException inDoubtIfClosed(CoordinationException e, String what) {
        if (!queue.context.isClosed() || e instanceof WriteInDoubt) {
            return e;
        }
        return new WriteInDoubt(
                "cannot tell whether a write to " + what + " landed: the client was closed while it was in flight", e);
    }

    /** Sends {@code ops} behind the slot's setData; {@link #outcome} then reads the answer. */
    CompletableFuture<CuratorEvent> send(Slot slot, List<CuratorOp> ops, String what) {
        CuratorFramework client = queue.context.client();
        // The slot goes first: a replay of a transaction that landed must fail on it, before any other operation
        // (an item's delete, a claim's create) fails on what the first send already did.
        List<CuratorOp> all = new ArrayList<>(ops.size() + 1);
        all.add(TransactionOps.setData(client, slot.path, slot.version, EMPTY));
        all.addAll(ops);
        slot.sentInEpoch = queue.context.connectionEpoch();
        return BackgroundRequests.call(
                queue.context, what, cb -> client.transaction().inBackground(cb).forOperations(all));
    }

    /**
     * The outcome of a transaction {@link #send} sent, from its answer, and gives the slot back. An answer in doubt
     * is settled, after {@code inDoubt} runs, which waits for the server: never call it on ZooKeeper's event thread.
     */
    Outcome outcome(Slot slot, CuratorEvent reply, String what, Runnable inDoubt) {
        Code code = BackgroundRequests.code(reply);
        int failed = BackgroundRequests.failedOp(reply);
        if (code == Code.OK) {
            giveBackMoved(slot);
            return Outcome.landed(reply);
        }
        if (failed == 0 && code == Code.BADVERSION) {
            giveBackMoved(slot); // a replay: the first send landed and moved the version on
            return Outcome.landed(null);
        }
        if (failed == 0 && code == Code.NONODE) {
            if (slot.sentInEpoch != queue.context.connectionEpoch()) {
                // The connection dropped while it was in flight: this may answer Curator's second send of a
                // transaction whose first landed before the slot was deleted. Nothing can tell now.
                throw slotDeleted(slot, what);
            }
            created.remove(slot.path);
            // Deleted under us: nothing was applied, and the slot is no more. Most likely the whole queue was reset by
            // hand, which took every other slot and maybe the items parent too: the idle slots are left for new ones
            // (those still there are deleted at close with the rest), and the size is counted again.
            resets.incrementAndGet(); // before the idle ones go, so that none borrowed now comes back
            idle.clear();
            queue.resetFound();
            return Outcome.failed(-1, code);
        }
        if (failed > 0) {
            idle.add(slot); // failed as a whole, so the version is unchanged
            return Outcome.failed(failed - 1, code);
        }
        if (!ResultCodes.isInDoubt(code)
                && code != Code.NOTREADONLY
                && slot.sentInEpoch == queue.context.connectionEpoch()) {
            idle.add(slot); // the only send was refused as a whole: nothing applied, the version is unchanged
            throw BackgroundRequests.failure("writing to", what, code);
        }
        // Lost; refused by a read-only server, to which Curator sends writes though it takes none; or refused as a
        // whole after the connection changed, which may answer Curator's second send of a transaction whose first
        // landed. The slot settles it, once a connection takes writes: then the caller may send it again.
        inDoubt.run();
        return settle(slot, what);
    }

    /** Deletes every slot this client made, on the client's way out; sent ahead of the session's close. */
    void deleteAll() {
        CuratorFramework client = queue.context.client();
        for (String path : created) {
            try {
                client.getZookeeperClient()
                        .getZooKeeper()
                        .delete(ZKPaths.fixForNamespace(client.getNamespace(), path), -1, (rc, p, ctx) -> {}, null);
            } catch (Exception e) {
                log.debug("slot {} left behind: the client is already closed", path, e);
                return;
            }
        }
        created.clear();
        idle.clear();
    }

    /** Our transaction, or our settling write, moved the version on by one. */
    private void giveBackMoved(Slot slot) {
        slot.version++;
        giveBackAt(slot);
    }

    /**
     * Back to idle at its version, unless that is -1: the 32-bit version wraps there after 2^32 writes, and a write
     * at version -1 matches any version, so a replay would land again. Such a slot is deleted, and a new one made.
     */
    private void giveBackAt(Slot slot) {
        if (slot.version != -1) {
            idle.add(slot);
            return;
        }
        discard(slot);
    }

    /** Deletes a slot that no write will use: one whose version wrapped, or whose create's outcome is unknown. */
    private void discard(Slot slot) {
        created.remove(slot.path);
        queue.context.deleteGuaranteed(slot.path);
    }

    /**
     * The reply was lost for good: one setData at the version the transaction carried decides, on whatever
     * session the client has by then. Its data names the version it settles, which no transaction writes (they
     * write nothing) and no other settle can (one settle at a version moves the slot past it), so that when the
     * settling write is itself sent again after a lost reply, its own landing is not taken for the transaction's.
     */
    Outcome settle(Slot slot, String what) {
        try {
            return settling(slot, what);
        } catch (CoordinationException e) {
            throw inDoubtIfClosed(e, what);
        }
    }

    private Outcome settling(Slot slot, String what) {
        CuratorFramework client = queue.context.client();
        int carried = slot.version;
        byte[] token = settleToken(carried);
        CuratorEvent reply = BackgroundRequests.answered(
                queue.context,
                slot.path,
                cb -> client.setData().withVersion(carried).inBackground(cb).forPath(slot.path, token));
        Code code = BackgroundRequests.code(reply);
        if (code == Code.OK) {
            giveBackMoved(slot);
            return Outcome.failed(-1, Code.CONNECTIONLOSS); // it can never land now
        }
        if (code == Code.BADVERSION) {
            // Moved on by the transaction, or by an earlier send of this settling write: the slot says which.
            CuratorEvent read = readSlot(slot, what);
            int now = read.getStat().getVersion();
            // Decided before the slot goes back: once idle, another writer may borrow it and move its version.
            boolean settled = now == carried + 1 && Arrays.equals(read.getData(), token);
            slot.version = now;
            giveBackAt(slot);
            // The settle landed, so the transaction never will; else the transaction did.
            return settled ? Outcome.failed(-1, Code.CONNECTIONLOSS) : Outcome.landed(null);
        }
        if (code == Code.NONODE) {
            throw slotDeleted(slot, what);
        }
        throw BackgroundRequests.failure("settling a write with", slot.path, code);
    }

    /** The data of a settling write at {@code version}; a transaction's own setData writes none. */
    private static byte[] settleToken(int version) {
        return ("settled " + version).getBytes(StandardCharsets.US_ASCII);
    }

    /** The slot's data and version, read until an answer comes. */
    private CuratorEvent readSlot(Slot slot, String what) {
        CuratorFramework client = queue.context.client();
        CuratorEvent reply = BackgroundRequests.answered(
                queue.context,
                slot.path,
                cb -> client.getData().inBackground(cb).forPath(slot.path));
        Code code = BackgroundRequests.code(reply);
        if (code == Code.OK) {
            return reply;
        }
        if (code == Code.NONODE) {
            throw slotDeleted(slot, what);
        }
        throw BackgroundRequests.failure("reading", slot.path, code);
    }

    private WriteInDoubt slotDeleted(Slot slot, String what) {
        created.remove(slot.path);
        resets.incrementAndGet();
        idle.clear();
        queue.resetFound();
        return new WriteInDoubt("cannot tell whether a write to " + what + " landed: its slot " + slot.path
                + " was deleted by something other than the queue");
    }

    /** A write whose outcome nobody can learn any more: its slot was deleted while the outcome was in doubt. */
    static final class WriteInDoubt extends CoordinationException {
        private static final long serialVersionUID = 1L;

        WriteInDoubt(String message) {
            super(message);
        }

        WriteInDoubt(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private Slot create(Deadline deadline, Runnable inDoubt) throws InterruptedException, TimeoutException {
        if (deadline.lookEnded()) {
            // A create sent now would wait for the connection, which a look does not.
            throw new TimeoutException("the look ended before a write slot under " + queue.layout.slots
                    + " was made: the connection dropped");
        }
        Slot slot = new Slot(queue.layout.newSlot(), resets.get());
        // Recorded before the first send, so that the client's close deletes it whatever becomes of the answer (a
        // create in doubt, then a timeout or a failure, may have made it); a delete of a missing slot is harmless.
        created.add(slot.path);
        // A create in doubt is sent again once connected, for as long as a caller that waits for a lost connection
        // waits, as every other request of a write is; it counts as an attempt only for one that does not, which may
        // hear of the drop late (on Curator's listener thread, say), and is then held up for three at most.
        for (int attempt = 0; attempt < 3; ) {
            Code code = queue.createOwn(slot.path, CreateMode.PERSISTENT, deadline, late -> adopt(slot, late));
            if (code == Code.OK || code == Code.NODEEXISTS) {
                // NodeExists: a replay of our own create, since the name is ours alone.
                return slot;
            }
            if (code == Code.NONODE) {
                queue.resetFound(); // no slots parent
                queue.awaitLayout(deadline);
                attempt++;
            } else if (ResultCodes.isInDoubt(code)) {
                // It may have landed: the same name again tells, once connected. A caller that stops waiting for the
                // connection leaves no slot behind: the name is ours alone, and Curator gave up sending it.
                inDoubt.run();
                if (!deadline.waitsForConnection()) {
                    attempt++;
                }
                try {
                    BackgroundRequests.awaitConnection(queue.context, deadline, slot.path);
                } catch (TimeoutException | InterruptedException e) {
                    discard(slot);
                    throw e;
                }
            } else {
                throw BackgroundRequests.failure("creating", slot.path, code);
            }
        }
        throw new CoordinationException("could not create a write slot under " + queue.layout.slots);
    }

    /**
     * A slot create answered after its borrower stopped waiting: kept if it landed. One whose answer is in doubt (Curator
     * gave up sending it) is deleted instead, in case it landed: kept, it might be missing, and a transaction on a
     * missing slot that Curator sent twice could not tell whether it landed.
     */
    private void adopt(Slot slot, Code code) {
        if (code == Code.OK || code == Code.NODEEXISTS) {
            giveBack(slot);
        } else if (ResultCodes.isInDoubt(code)) {
            discard(slot);
        }
    }
}
