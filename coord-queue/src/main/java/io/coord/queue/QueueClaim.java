package io.coord.queue;

import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ResultCodes;
import io.coord.core.internal.TransactionOps;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
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
    // Written under lock; read without it only to be shown, since an ack holds the lock through an outage.
    private volatile State state = State.HELD;
    // The session marker known to prove this claim (see proving). Used by one thread at a time: an acker under the
    // lock, or the one releaser after the state left HELD.
    private volatile String provenBy;
    // The ack under way, if any: it holds the lock until its removal is answered, through an outage if need be.
    private volatile CompletableFuture<Void> acking;

    // Times a withdrawal is sent again while its replies are lost (see withdraw), and a release whose slot vanished
    // while its outcome was in doubt, found not to have landed (see release).
    private static final int WITHDRAWALS = 3;

    private QueueClaim(SharedQueue queue, String name, long session, T item, String marker) {
        this.queue = queue;
        this.name = name;
        this.session = session;
        this.item = item;
        this.provenBy = marker;
    }

    /**
     * A claim made on {@code session}, held until acknowledged, closed or its session ends. {@code marker} is the
     * session marker that was current when the claim was made, if it was made on it.
     */
    static <T> QueueClaim<T> held(SharedQueue queue, String name, long session, T item, String marker) {
        QueueClaim<T> claim = new QueueClaim<>(queue, name, session, item, marker);
        queue.claims.add(claim);
        if (queue.context.sessionId() != session) {
            queue.withdrawals.execute(claim::sessionEnded); // its end passed the claim by
        }
        return claim;
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
        State now = state;
        if (now != State.HELD) {
            return now == State.ACKED; // an end state is final
        }
        BackgroundRequests.refuseOnEventThread("acknowledging", queue.layout.item(name));
        CompletableFuture<Void> done = new CompletableFuture<>();
        acking = done; // before the lock, so that a close that finds the lock taken finds this too
        lock.lock();
        try {
            if (state != State.HELD) {
                return state == State.ACKED;
            }
            state = remove() ? State.ACKED : State.LOST;
            queue.claims.remove(this);
            if (state == State.ACKED) {
                queue.items.names().acked(name, session);
            }
            return state == State.ACKED;
        } finally {
            lock.unlock();
            done.complete(null);
        }
    }

    @Override
    public void close() {
        // On ZooKeeper's event thread nothing may wait for an answer that thread delivers: neither the release's nor
        // an ack's (nor on Curator's background thread, which sends what waits for a connection). Nor may any closer
        // wait behind an ack under way, which holds the lock until it is answered, through an outage if need be: its
        // answer may need the news that the connection is back, which a closer on Curator's listener thread would hold
        // up for good. The close is then decided after the ack, on another thread.
        boolean onCallbackThread = BackgroundRequests.onCallbackThread();
        if (!lock.tryLock()) {
            CompletableFuture<Void> ack = acking;
            if (ack != null && !ack.isDone()) {
                ack.thenRunAsync(this::close, queue.context.callbacks());
                return;
            }
            if (onCallbackThread) {
                queue.context.callbacks().execute(this::close);
                return;
            }
            lock.lock(); // another close, or a session's end: each holds the lock only for a moment
        }
        CompletableFuture<Void> answered = new CompletableFuture<>();
        try {
            if (state != State.HELD) {
                return;
            }
            state = State.RELEASED;
            queue.claims.remove(this);
            if (queue.context.sessionId() != session) {
                // The claim died with its session, and the name came back then; its node may live on at the server.
                withdraw(queue, name, provenBy);
                return;
            }
            // On another thread: settling a lost reply or making a marker again waits for the server, which neither
            // the closer (for ever) nor ZooKeeper's event thread (at all) may do.
            queue.context.callbacks().execute(() -> release(answered, WITHDRAWALS));
        } finally {
            lock.unlock();
        }
        // Until the release is answered, so that a poll right after close() finds the item at the head; and not
        // through an outage, where the release goes on without the closer.
        if (!onCallbackThread) {
            queue.awaitWhileConnected(answered, queue.layout.claim(name));
        }
    }

    @Override
    public String toString() {
        return "Claim[" + queue.layout.item(name) + ", " + state + "]";
    }

    private boolean remove() {
        CuratorFramework client = queue.context.client();
        String itemPath = queue.layout.item(name);
        Slots.Outcome outcome = guarded(
                proving(queue.marker.of(session)),
                marker -> List.of(
                        TransactionOps.check(client, marker),
                        TransactionOps.delete(client, itemPath),
                        TransactionOps.delete(client, queue.layout.claim(name))),
                itemPath,
                () -> {});
        if (outcome == null) {
            if (queue.context.sessionId() != session) {
                withdraw(queue, name, provenBy); // nothing sent landed, and the session may live on at the server
            }
            return false; // the session ended, or the claim is gone
        }
        if (outcome.landed()) {
            return true;
        }
        if (outcome.code() != Code.NONODE) {
            // Refused (a permission, say), and the claim still ours: the caller hears it, and may close it.
            throw BackgroundRequests.failure("acknowledging", itemPath, outcome.code());
        }
        // The marker (so the session), the item or the claim is gone. A session's end gives the name back itself;
        // while the session lives, the name is ours to settle.
        if (outcome.failedOp() == 1) {
            queue.items.names().acked(name, session); // the item is gone for everyone
            // Its claim would outlive it until the session ends; deleted on the side, since the answer is known.
            queue.withdrawals.execute(this::dropClaim);
        } else if (outcome.failedOp() == 2) {
            queue.items.released(name, session); // only the claim is gone: the item is in play again
        }
        return false;
    }

    /**
     * Deletes the claim node of an item found gone (deleted by hand), if it is still this session's, guarded as a
     * release is; one the queue cannot delete so is left to the session's end. The ack that found the item gone has
     * ended the claim, so nothing else uses {@link #provenBy} now.
     */
    private void dropClaim() {
        String claimPath = queue.layout.claim(name);
        CuratorFramework client = queue.context.client();
        try {
            if (queue.context.sessionId() != session || queue.claimOwner(claimPath) != session) {
                return;
            }
            guarded(
                    proving(queue.marker.existing(session)),
                    m -> List.of(TransactionOps.check(client, m), TransactionOps.delete(client, claimPath)),
                    claimPath,
                    () -> {});
        } catch (RuntimeException e) {
            if (!againAfterPause(queue, e, () -> queue.withdrawals.execute(this::dropClaim))) {
                log.debug("the claim {} of a vanished item left to its session's end", claimPath, e);
            }
        }
    }

    /**
     * Commits {@code ops} (made for a marker) with a write slot, guarded by a marker of the claim's session, while the
     * session lives: sent again while nothing landed, and with a new marker (a few at most) when something other than
     * the queue deleted it. Returns how it ended, having landed or failed on an operation, or null once no marker may
     * prove the claim: its session ended, or the claim is gone (the name back in play). {@code pastWaiting} runs when
     * what is left may take as long as the session: a reply in doubt to settle, a marker to make again.
     */
    private Slots.Outcome guarded(
            String marker, Function<String, List<CuratorOp>> ops, String what, Runnable pastWaiting) {
        int markersMade = 0;
        while (marker != null) {
            Slots.Outcome outcome =
                    queue.slots.commit(queue.slots.borrowFully(pastWaiting), ops.apply(marker), what, pastWaiting);
            boolean markerGone = outcome.failedOp() == 0 && outcome.code() == Code.NONODE;
            if (markerGone && markersMade < MAX_MARKERS && queue.context.sessionId() == session) {
                pastWaiting.run();
                marker = markerAgain(marker);
                markersMade++;
            } else if (!outcome.landed() && outcome.failedOp() == -1) {
                marker = proving(queue.marker.existing(session)); // nothing landed: send it again
            } else {
                return outcome;
            }
        }
        return null;
    }

    /**
     * The client is on a new session, or has none: a claim made on an older one is lost to its holder. Waits for the
     * claim's lock, so never on ZooKeeper's threads: on the queue's {@code withdrawals}.
     */
    void sessionEnded() {
        Locked.run(lock, () -> {
            if (state != State.HELD || queue.context.sessionId() == session) {
                return;
            }
            state = State.LOST;
            queue.claims.remove(this);
            withdraw(queue, name, provenBy);
        });
    }

    /**
     * Deletes the claim on {@code name} made by a session the client has left, if nothing of ours has deleted it
     * since. Curator declares a session lost once it has been cut off for the session timeout, and the server may
     * keep the session, and with it the claim, for a while yet, hiding the item from every consumer. The delete is
     * guarded by that session's {@code marker}, which lives on the server exactly as long as the session (none: the
     * claim is left to the session's end), and by a write slot, so that it never deletes a claim made since. Sent
     * once connected, and again while nothing is known to have landed, a few times at most.
     */
    static void withdraw(SharedQueue queue, String name, String marker) {
        withdraw(queue, name, marker, WITHDRAWALS);
    }

    private static void withdraw(SharedQueue queue, String name, String marker, int tries) {
        if (marker == null || tries == 0) {
            return; // never proven by a marker of its session: left to that session's end
        }
        queue.context.whenConnected(() -> queue.withdrawals.execute(() -> send(queue, name, marker, tries)));
    }

    private static void send(SharedQueue queue, String name, String marker, int tries) {
        String claimPath = queue.layout.claim(name);
        CuratorFramework client = queue.context.client();
        try {
            Slots.Outcome outcome = queue.slots.commit(
                    queue.slots.borrowFully(),
                    List.of(TransactionOps.check(client, marker), TransactionOps.delete(client, claimPath)),
                    claimPath);
            if (!outcome.landed() && outcome.failedOp() == -1) {
                withdraw(queue, name, marker, tries - 1);
            } else {
                log.debug("{} of an ended session withdrawn: {}", claimPath, outcome.code());
            }
        } catch (RuntimeException e) {
            if (!againAfterPause(queue, e, () -> queue.withdrawals.execute(() -> send(queue, name, marker, tries)))) {
                log.debug("{} of an ended session left to that session's end", claimPath, e);
            }
        }
    }

    /**
     * Runs {@code task} again after a pause if {@code failure} is a busy server's refusal (THROTTLEDOP), which Curator
     * does not send again and after which nothing else would: the claim would stay until its session ends, hiding the
     * item from every consumer. True if so. Only a request that changed nothing fails so: a transaction refused as a
     * whole on the connection it was sent on, a marker's create. One whose outcome is in doubt is settled through such
     * refusals (see {@link Slots#settle}), so that a release that landed is never sent again, to delete a claim made
     * since.
     */
    private static boolean againAfterPause(SharedQueue queue, RuntimeException failure, Runnable task) {
        if (!ResultCodes.isThrottled(failure)) {
            return false;
        }
        log.debug("refused by a busy server: sent again after a pause", failure);
        queue.context.sendAgainLater(task);
        return true;
    }

    /** The marker at {@code lost} is gone but not its session: a new one, or null if the claim is gone too. */
    private String markerAgain(String lost) {
        queue.marker.gone(session, lost);
        return proving(queue.marker.of(session));
    }

    /**
     * {@code marker} if it may prove this claim, else null. One other than the marker known to prove it was made
     * since the claim (the one before vanished), perhaps after the queue was reset by hand, which deletes markers and
     * claims alike; the same name may then stand for a new item that another consumer claims. So the claim node must
     * still be ours before the new marker proves it: else the claim is gone, and its name back in play. One request,
     * and only then: a session keeps one marker.
     */
    private String proving(String marker) {
        if (marker == null || marker.equals(provenBy)) {
            return marker;
        }
        if (releasedUnlessOurs(queue.layout.claim(name))) {
            return null;
        }
        provenBy = marker;
        return marker;
    }

    /** The name is back in play here if the claim node is not ours (any more); true if so. */
    private boolean releasedUnlessOurs(String claimPath) {
        if (queue.claimOwner(claimPath) != session) {
            queue.items.released(name, session);
            return true;
        }
        return false;
    }

    /**
     * {check marker, delete claims/X} with a write slot, sent again while the claim's session lives until its outcome
     * is known: a replay of a release that landed fails on the slot's version, so it never deletes a claim somebody
     * made since. Completes {@code answered} once the closer need wait no longer: when the outcome is known, when
     * the transaction's reply is lost, when a new write slot's create is, or before a session marker must be made or
     * proven. A new write slot is otherwise waited for, so that the item is back in play when the closer returns; a
     * lost create, like a marker's wait, is sent again for as long as the session lives, which a closer on Curator's
     * connection listener thread (where the news of an outage comes from) must not wait out. A release that cannot
     * tell whether it landed, its slot gone, looks at the claim node: one still ours was not released, and the release
     * is sent again with another slot, up to {@code tries} times in all.
     */
    private void release(CompletableFuture<Void> answered, int tries) {
        String claimPath = queue.layout.claim(name);
        CuratorFramework client = queue.context.client();
        try {
            String marker = queue.marker.existing(session);
            if (marker == null || !marker.equals(provenBy)) {
                answered.complete(null);
                // A claim that landed on a newer session than it was sent on, or a marker made since the claim.
                marker = proving(marker != null ? marker : queue.marker.of(session));
            }
            Slots.Outcome outcome = guarded(
                    marker,
                    m -> List.of(TransactionOps.check(client, m), TransactionOps.delete(client, claimPath)),
                    claimPath,
                    () -> answered.complete(null));
            if (outcome != null && (outcome.landed() || (outcome.failedOp() == 1 && outcome.code() == Code.NONODE))) {
                queue.items.released(name, session); // deleted, or already gone (with its session, or by hand)
            } else if (queue.context.sessionId() != session) {
                withdraw(queue, name, provenBy); // nothing sent landed, and the session may live on at the server
            } else if (outcome != null) {
                // Refused (a permission on the claims, say): nobody can take the item until this session ends.
                log.warn(
                        "the release of {} was refused ({}): the item stays claimed until this client's session ends",
                        claimPath,
                        outcome.code());
            }
        } catch (Slots.WriteInDoubt e) {
            // The release may have landed: the claim node says. A name held for good would hide the item from every
            // consumer until the session ends; a replay of the release fails on its vanished slot.
            try {
                if (!releasedUnlessOurs(claimPath) && queue.context.sessionId() == session) {
                    if (tries > 1) {
                        release(answered, tries - 1);
                    } else {
                        log.warn(
                                "the release of {} could not be made: the item stays claimed until this client's"
                                        + " session ends",
                                claimPath,
                                e);
                    }
                }
            } catch (RuntimeException again) {
                log.debug("release of {} left to its session's end", claimPath, again);
            }
        } catch (RuntimeException e) {
            Runnable resend = () -> queue.context.callbacks().execute(() -> release(answered, tries));
            if (queue.context.sessionId() != session || queue.context.isClosed()) {
                log.debug("release of {} left to its session's end", claimPath, e);
            } else if (ResultCodes.isInDoubt(e)) {
                queue.context.whenConnected(resend); // lost with the connection, on a session that lives on
            } else if (!againAfterPause(queue, e, resend)) {
                log.warn(
                        "the release of {} failed: the item stays claimed until this client's session ends",
                        claimPath,
                        e);
            }
        } finally {
            answered.complete(null);
        }
    }
}
