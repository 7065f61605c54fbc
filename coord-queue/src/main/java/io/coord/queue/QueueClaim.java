package io.coord.queue;

import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ResultCodes;
import io.coord.core.internal.TransactionOps;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.zookeeper.KeeperException.Code;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A claim held by this client: the EPHEMERAL znode {@code claims/<name>} of the session that made it. It stays ours
 * while that session lives, which is why every step compares the current session with the one that claimed, and
 * every delete of the claim is guarded by that session's marker (see {@link SessionMarker}).
 *
 * <p>States: HELD -> ACKED (item removed), HELD -> RELEASED (claim deleted), HELD -> LOST (the session ended, or
 * the ack found the claim gone). The end states are final.
 */
final class QueueClaim<T> implements Claim<T> {
    private static final Logger log = LoggerFactory.getLogger(QueueClaim.class);

    private enum State {
        HELD,
        ACKED,
        RELEASED,
        LOST
    }

    // Markers made again for one ack or close, when something other than the queue keeps deleting them.
    private static final int MAX_MARKERS = 3;

    private final SharedQueue queue;
    private final String name;
    private final long session;
    private final T item;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private State state = State.HELD;

    QueueClaim(SharedQueue queue, String name, long session, T item) {
        this.queue = queue;
        this.name = name;
        this.session = session;
        this.item = item;
    }

    @Override
    public T item() {
        return item;
    }

    /**
     * {check marker, delete items/X, delete claims/X} with a write slot: if the reply is lost, the slot says whether
     * the item was removed, so a true answer means it was, exactly once.
     */
    @Override
    public boolean ack() {
        lock.lock();
        try {
            if (state != State.HELD) {
                return state == State.ACKED;
            }
            state = remove() ? State.ACKED : State.LOST;
            if (state == State.ACKED) {
                queue.items.names().acked(name, session);
            }
            return state == State.ACKED;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (state != State.HELD) {
                return;
            }
            state = State.RELEASED;
            if (queue.context.sessionId() != session) {
                // The claim died with its session, and the name came back then. A newer claim on the item, ours or
                // anyone's, is not this one's to release.
                return;
            }
            // Waits for the first answer only, so that a poll right after close() finds the item at the head; a
            // delete that cannot reach the server keeps trying after reconnecting, while the claim lives.
            for (int markersMade = 0; markersMade <= MAX_MARKERS; markersMade++) {
                CompletableFuture<Boolean> firstAnswer = new CompletableFuture<>();
                release(firstAnswer);
                if (!BackgroundRequests.awaitFully(firstAnswer, queue.layout.claim(name))) {
                    return;
                }
                // The marker is gone but not its session, so the claim lives on: a new marker proves it as well.
                if (queue.marker.of(session) == null) {
                    return; // the session ended meanwhile, and the claim with it
                }
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        lock.lock();
        try {
            return "Claim[" + queue.layout.item(name) + ", " + state + "]";
        } finally {
            lock.unlock();
        }
    }

    private boolean remove() {
        CuratorFramework client = queue.context.client();
        String marker = queue.marker.existing(session);
        int markersMade = 0;
        while (true) {
            if (marker == null) {
                return false; // the session ended: the claim died with it
            }
            Slots.Outcome outcome = queue.slots.commit(
                    queue.slots.borrowFully(),
                    List.of(
                            TransactionOps.check(client, marker),
                            TransactionOps.delete(client, queue.layout.item(name)),
                            TransactionOps.delete(client, queue.layout.claim(name))),
                    queue.layout.item(name));
            if (outcome.landed()) {
                return true;
            }
            if (outcome.failedOp() == 0 && markersMade < MAX_MARKERS && queue.context.sessionId() == session) {
                // The marker is gone but not its session, so the claim lives on: a new marker proves it as well.
                queue.marker.gone(session, marker);
                marker = queue.marker.of(session);
                markersMade++;
                continue;
            }
            if (outcome.failedOp() >= 0) {
                return false; // the marker (so the session) or the claim is gone
            }
            // The reply was lost and nothing landed: send again while the claim's session lives.
            marker = queue.marker.existing(session);
        }
    }

    /**
     * {check marker, delete claims/X}, sent again after each reconnection while the claim's session lives. The first
     * answer completes {@code firstAnswer}: true if the marker was found missing while its session lives, which the
     * caller mends (making a marker waits for the server, which a callback must not).
     */
    private void release(CompletableFuture<Boolean> firstAnswer) {
        String claimPath = queue.layout.claim(name);
        String marker = queue.marker.existing(session);
        if (marker == null) {
            firstAnswer.complete(false); // the claim died with its session
            return;
        }
        CuratorFramework client = queue.context.client();
        List<CuratorOp> ops = List.of(TransactionOps.check(client, marker), TransactionOps.delete(client, claimPath));
        BackgroundRequests.call(
                        queue.context,
                        claimPath,
                        cb -> client.transaction().inBackground(cb).forOperations(ops))
                .whenComplete((event, error) -> {
                    Code code = error == null ? BackgroundRequests.code(event) : null;
                    if (code != null
                            && code != Code.OK
                            && BackgroundRequests.failedOp(event) == 0
                            && queue.context.sessionId() == session) {
                        queue.marker.gone(session, marker);
                        if (!firstAnswer.complete(true)) {
                            log.debug("release of {} left to its session's end: its marker was deleted", claimPath);
                        }
                        return;
                    }
                    if (code == Code.OK || code == Code.NONODE) {
                        queue.items.released(name, session); // deleted, or already gone with its session
                    } else if (code != null && ResultCodes.isInDoubt(code) && queue.context.sessionId() == session) {
                        queue.context.whenConnected(() -> release(firstAnswer)); // sending never blocks
                    } else {
                        log.debug(
                                "release of {} left to its session's end: {}", claimPath, error != null ? error : code);
                    }
                    firstAnswer.complete(false);
                });
    }
}
