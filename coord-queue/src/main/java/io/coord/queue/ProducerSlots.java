package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.ResultCodes;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;

/**
 * Writer slots make a replayed write recognisable. A slot is an EPHEMERAL znode {@code sessions/w-<uuid>} that
 * one writing thread at a time borrows. Each write is one transaction {create the items..., setData slot
 * version=v}: if Curator replays it after a lost connection and the first attempt had landed, the setData fails
 * with BadVersion and the whole replay fails with it, so nothing is written twice, and the BadVersion itself says
 * the write landed. Only the slot's borrower writes it, so its version is known exactly between writes.
 *
 * <p>A slot dies with its session. A write whose slot vanished may or may not have landed; the producer then looks
 * for its token among the items (see QueueProducer).
 */
final class ProducerSlots {
    /** One slot: the znode, the session that owns it, and its data version as of the last write. */
    static final class Slot {
        final String path;
        final long session;
        int version;

        Slot(String path, long session, int version) {
            this.path = path;
            this.session = session;
            this.version = version;
        }
    }

    private final SharedQueue queue;
    private final ConcurrentLinkedQueue<Slot> idle = new ConcurrentLinkedQueue<>();

    ProducerSlots(SharedQueue queue) {
        this.queue = queue;
    }

    /**
     * A slot of the current session, made if none is idle; null if the deadline passed first. Nothing waits past the
     * deadline: a create still unanswered then is adopted when its answer comes, as an idle slot if it landed.
     */
    Slot borrow(Deadline deadline) throws InterruptedException {
        long session = queue.context.sessionId();
        for (Slot slot = idle.poll(); slot != null; slot = idle.poll()) {
            if (slot.session == session) {
                return slot;
            }
            // A slot of an ended session died with it.
        }
        return create(deadline);
    }

    void giveBack(Slot slot) {
        idle.add(slot);
    }

    /** Forgets a slot whose version is no longer known, deleting its znode if it still lives. */
    void discard(Slot slot) {
        if (queue.context.sessionId() == slot.session) {
            queue.context.deleteGuaranteed(slot.path);
        }
    }

    private Slot create(Deadline deadline) throws InterruptedException {
        for (int attempt = 0; attempt < 3; attempt++) {
            // A fresh name per attempt: after a session change, the old name may still belong to the dying session.
            String path = queue.layout.newWriterSlot();
            long session = queue.context.sessionId();
            Code code;
            try {
                code = send(path, session, deadline);
            } catch (TimeoutException e) {
                return null;
            }
            if (code == Code.OK || code == Code.NODEEXISTS) {
                // NodeExists: a replay of our own create, since the name is ours alone; its version is still 0.
                return new Slot(path, session, 0);
            }
            if (code == Code.NONODE) {
                try {
                    Requests.awaitWithin(queue.ensureLayout(), deadline, queue.layout.sessions());
                } catch (TimeoutException e) {
                    return null;
                }
                continue;
            }
            if (!ResultCodes.isInDoubt(code)) {
                throw Requests.failure("creating", path, code);
            }
        }
        throw new CoordinationException(
                "could not create a writer slot under " + queue.layout.sessions() + " in 3 attempts");
    }

    /**
     * Creates the slot's znode, sending it again across lost connections while {@code session} lives (a replay
     * answers NodeExists). Returns the last answer's code.
     *
     * @throws TimeoutException if the deadline passed first; the create in flight is then adopted or deleted
     */
    private Code send(String path, long session, Deadline deadline) throws InterruptedException, TimeoutException {
        while (true) {
            CompletableFuture<CuratorEvent> answer = Requests.call(
                    queue.context,
                    path,
                    cb -> queue.context
                            .client()
                            .create()
                            .withMode(CreateMode.EPHEMERAL)
                            .inBackground(cb)
                            .forPath(path, new byte[0]));
            Code code;
            try {
                code = Requests.code(Requests.awaitWithin(answer, deadline, path));
            } catch (TimeoutException | InterruptedException e) {
                answer.thenAccept(late -> adopt(path, session, Requests.code(late)));
                throw e;
            }
            if (!ResultCodes.isInDoubt(code) || queue.context.sessionId() != session) {
                return code;
            }
            // The create may have landed: send it again once connected, or delete it if the caller gives up first.
            try {
                if (!deadline.allowsWaiting()) {
                    Requests.awaitFully(queue.context.connected(), path);
                } else if (!queue.context.awaitConnected(deadline)) {
                    queue.context.deleteGuaranteed(path);
                    throw new TimeoutException("no connection to create " + path);
                }
            } catch (InterruptedException e) {
                queue.context.deleteGuaranteed(path);
                throw e;
            }
        }
    }

    /** A slot create answered after its writer stopped waiting: keep the slot if it landed, delete it if in doubt. */
    private void adopt(String path, long session, Code code) {
        if (code == Code.OK || code == Code.NODEEXISTS) {
            giveBack(new Slot(path, session, 0));
        } else if (ResultCodes.isInDoubt(code) && queue.context.sessionId() == session) {
            queue.context.deleteGuaranteed(path);
        }
    }
}
