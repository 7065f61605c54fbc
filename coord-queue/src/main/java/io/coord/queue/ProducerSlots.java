package io.coord.queue;

import io.coord.core.CoordinationException;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 * for its token among the items (see Producer).
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

    Slot borrow() {
        long session = queue.context.sessionId();
        for (Slot slot = idle.poll(); slot != null; slot = idle.poll()) {
            if (slot.session == session) {
                return slot;
            }
            // A slot of an ended session died with it.
        }
        return create();
    }

    void giveBack(Slot slot) {
        idle.add(slot);
    }

    /** Forgets a slot whose version is no longer known, deleting its znode if it still lives. */
    void discard(Slot slot) {
        if (queue.context.sessionId() == slot.session) {
            Zk.call(
                    queue.context,
                    cb -> queue.context.client().delete().inBackground(cb).forPath(slot.path));
        }
    }

    private Slot create() {
        for (int attempt = 0; attempt < 3; attempt++) {
            // A fresh name per attempt: after a session change, the old name may still belong to the dying session.
            String path = queue.layout.newWriterSlot();
            long session = queue.context.sessionId();
            CuratorEvent event = Zk.finish(
                    queue.context,
                    session,
                    path,
                    cb -> queue.context
                            .client()
                            .create()
                            .withMode(CreateMode.EPHEMERAL)
                            .inBackground(cb)
                            .forPath(path, new byte[0]));
            Code code = Zk.code(event);
            if (code == Code.OK || code == Code.NODEEXISTS) {
                // NodeExists: a replay of our own create, since the name is ours alone; its version is still 0.
                return new Slot(path, session, 0);
            }
            if (code == Code.NONODE) {
                Zk.awaitFully(queue.ensureLayout(), queue.layout.sessions());
                continue;
            }
            if (!Zk.isInDoubt(code)) {
                throw Zk.failure("creating", path, code);
            }
        }
        throw new CoordinationException(
                "could not create a writer slot under " + queue.layout.sessions() + " in 3 attempts");
    }
}
