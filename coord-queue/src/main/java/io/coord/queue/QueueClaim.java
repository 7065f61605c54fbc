package io.coord.queue;

import java.util.concurrent.locks.ReentrantLock;

/**
 * A claim held by this client: the EPHEMERAL znode {@code claims/<name>} of the session that made it. It stays ours
 * while that session lives, which is why every step compares the current session with the one that claimed.
 *
 * <p>States: HELD -> ACKED (item removed), HELD -> RELEASED (claim deleted), HELD -> LOST (the session ended, or
 * the ack found the claim gone). The end states are final.
 */
final class QueueClaim<T> implements Claim<T> {
    private enum State {
        HELD,
        ACKED,
        RELEASED,
        LOST
    }

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

    @Override
    public boolean ack() {
        lock.lock();
        try {
            switch (state) {
                case ACKED:
                    return true;
                case RELEASED:
                case LOST:
                    return false;
                case HELD:
                    break;
            }
            boolean removed = queue.context.sessionId() == session && queue.claims.remove(name, session);
            state = removed ? State.ACKED : State.LOST;
            queue.items.names().dropHeld(name, session); // only this claim's record: a newer one may hold the name
            return removed;
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
                queue.items.names().dropHeld(name, session);
                return;
            }
            // Waits for the first answer only, so that a poll right after close() finds the item at the head; a
            // delete that cannot reach the server keeps trying after reconnecting, while the claim lives.
            Requests.awaitFully(queue.claims.release(name, session), queue.layout.claim(name));
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
}
