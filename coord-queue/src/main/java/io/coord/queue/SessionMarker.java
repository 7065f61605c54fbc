package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.ResultCodes;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
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

    // How often a look waiting for another caller's create checks whether it has ended.
    private static final long LOOK_STEP_MILLIS = 20;

    private final SharedQueue queue;
    // Serializes creation only; lookups read the atomic, so callback threads never wait on it.
    private final ReentrantLock creating = new ReentrantLock();
    private final AtomicReference<Marker> current = new AtomicReference<>();

    SessionMarker(SharedQueue queue) {
        this.queue = queue;
    }

    /**
     * The marker's path if {@code owner} is still the current session, creating the marker on first use in that
     * session; null if the session has ended. Waits for the answers as long as they take (the interrupt flag is kept).
     */
    String of(long owner) {
        return BackgroundRequests.fully(deadline -> of(owner, deadline));
    }

    /**
     * Like {@link #of(long)}, waiting under {@code deadline}: for another caller's create, for the answer, and for the
     * connection when the answer is in doubt.
     *
     * @throws TimeoutException if the deadline passed first; a create still unanswered is kept as the session's marker
     *     if it lands, and deleted if it is not needed
     */
    String of(long owner, Deadline deadline) throws InterruptedException, TimeoutException {
        String existing = existing(owner);
        if (existing != null || queue.context.sessionId() != owner) {
            return existing;
        }
        lock(deadline);
        try {
            existing = existing(owner);
            if (existing != null) {
                return existing;
            }
            if (deadline.lookEnded()) {
                throw lookEnded(); // a create sent now would wait for the connection, which a look does not
            }
            String created = create(owner, deadline);
            if (created == null) {
                return null;
            }
            Marker made = new Marker(created, owner);
            Marker kept = current.updateAndGet(m -> m != null && m.session() == owner ? m : made);
            if (kept != made) {
                queue.context.deleteGuaranteed(created); // an earlier caller's create answered late, and came first
            }
            return kept.path();
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

    private void lock(Deadline deadline) throws InterruptedException, TimeoutException {
        if (deadline.awaitsAnswersFully()) {
            creating.lock(); // an untimed call waits for another's create as it would for its own
        } else if (deadline.isForever()) {
            creating.lockInterruptibly();
        } else if (!deadline.allowsWaiting()) {
            // A look waits for another's create as it would for its own: interruptibly, and until its event, which no
            // lock can wait for, hence the steps. Only a look that meets another's create in flight takes them.
            while (!creating.tryLock(LOOK_STEP_MILLIS, TimeUnit.MILLISECONDS)) {
                if (deadline.lookEnded()) {
                    throw lookEnded();
                }
            }
        } else if (!creating.tryLock(deadline.remainingNanos(), TimeUnit.NANOSECONDS)) {
            throw new TimeoutException(
                    "another caller is still creating the session marker under " + queue.layout.sessions);
        }
    }

    private TimeoutException lookEnded() {
        return new TimeoutException("the look ended before the session marker under " + queue.layout.sessions
                + " was made: the connection dropped");
    }

    // Under the creating lock: once per session, and whoever needs the marker waits for it anyway.
    private String create(long owner, Deadline deadline) throws InterruptedException, TimeoutException {
        for (int attempt = 0; attempt < 3; attempt++) {
            String marker = queue.layout.newSessionMarker();
            Code code = send(owner, marker, deadline);
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
                queue.awaitLayout(deadline);
                continue;
            }
            throw BackgroundRequests.failure("creating", marker, code);
        }
        throw new CoordinationException("could not create a session marker under " + queue.layout.sessions);
    }

    /**
     * Sends the create until its answer is not in doubt, or the session changed: a create is sent again only once
     * connected, on the session that sent it.
     */
    private Code send(long owner, String marker, Deadline deadline) throws InterruptedException, TimeoutException {
        while (true) {
            Code code =
                    queue.createOwn(marker, CreateMode.EPHEMERAL, deadline, late -> answeredLate(owner, marker, late));
            if (!ResultCodes.isInDoubt(code) || queue.context.sessionId() != owner) {
                return code;
            }
            try {
                BackgroundRequests.awaitConnection(queue.context, deadline, marker);
            } catch (TimeoutException | InterruptedException e) {
                queue.context.deleteGuaranteed(marker); // it may have landed
                throw e;
            }
        }
    }

    /**
     * A create answered after its caller stopped waiting: it becomes the session's marker if it landed on a session
     * still current that has none yet; otherwise, if it may have landed, it is deleted.
     */
    private void answeredLate(long owner, String marker, Code code) {
        boolean landed = code == Code.OK || code == Code.NODEEXISTS;
        if (landed && queue.context.sessionId() == owner) {
            Marker adopted = new Marker(marker, owner);
            if (current.updateAndGet(m -> m != null && m.session() == owner ? m : adopted) == adopted) {
                return;
            }
        }
        if (landed || ResultCodes.isInDoubt(code)) {
            queue.context.deleteGuaranteed(marker);
        }
    }
}
