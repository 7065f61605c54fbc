package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ResultCodes;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;

/**
 * Proof, inside a transaction, that a session still lives. It is an EPHEMERAL znode {@code sessions/s-<uuid>}
 * created once per session of a consuming client; nobody else can ever create that name. A transaction that deletes
 * a claim starts with a check on it, so that if Curator replays the transaction on a newer session after the
 * claiming one died, the replay fails instead of deleting a claim someone else has made since.
 */
final class SessionMarker {
    private record Marker(String path, long session) {}

    private final SharedQueue queue;
    // Serializes creation only; lookups read the atomic, so callback threads never wait on it.
    private final ReentrantLock creating = new ReentrantLock();
    private final AtomicReference<Marker> current = new AtomicReference<>();

    SessionMarker(SharedQueue queue) {
        this.queue = queue;
    }

    /**
     * The marker's path if {@code owner} is still the current session, creating the marker on first use in that
     * session; null if the session has ended.
     */
    String of(long owner) {
        String existing = existing(owner);
        if (existing != null || queue.context.sessionId() != owner) {
            return existing;
        }
        creating.lock();
        try {
            existing = existing(owner);
            if (existing != null) {
                return existing;
            }
            String created = create(owner);
            if (created != null) {
                current.set(new Marker(created, owner));
            }
            return created;
        } finally {
            creating.unlock();
        }
    }

    /** The marker's path if it was made for {@code owner} and that session is current; never sends anything. */
    String existing(long owner) {
        Marker marker = current.get();
        return marker != null && marker.session() == owner && queue.context.sessionId() == owner ? marker.path() : null;
    }

    /**
     * The marker at {@code path} was found missing while {@code owner} is current: it was deleted by something other
     * than the queue. It is forgotten, so that the next {@link #of} makes another.
     */
    void gone(long owner, String path) {
        current.updateAndGet(m -> m != null && m.session() == owner && m.path().equals(path) ? null : m);
    }

    // Under the creating lock: once per session, and whoever needs the marker waits for it anyway.
    private String create(long owner) {
        for (int attempt = 0; attempt < 3; attempt++) {
            String marker = queue.layout.newSessionMarker();
            CuratorEvent event = BackgroundRequests.finish(
                    queue.context,
                    owner,
                    marker,
                    cb -> queue.context
                            .client()
                            .create()
                            .withMode(CreateMode.EPHEMERAL)
                            .inBackground(cb)
                            .forPath(marker, new byte[0]));
            Code code = BackgroundRequests.code(event);
            if (queue.context.sessionId() != owner) {
                if (code == Code.OK || code == Code.NODEEXISTS || ResultCodes.isInDoubt(code)) {
                    // Curator may have sent it again on the newer session, which would keep it for its whole life:
                    // useless as proof of this one, and the name is ours alone, so deleting it touches nobody else.
                    queue.context.deleteGuaranteed(marker);
                }
                return null;
            }
            if (code == Code.OK || code == Code.NODEEXISTS) {
                return marker; // NodeExists: a replay of our own create, since the name is ours alone
            }
            if (code == Code.NONODE) {
                BackgroundRequests.awaitFully(queue.ensureLayout(), queue.layout.sessions());
                continue;
            }
            throw BackgroundRequests.failure("creating", marker, code);
        }
        throw new CoordinationException("could not create a session marker under " + queue.layout.sessions());
    }
}
