package io.coord.queue;

import io.coord.core.internal.ResultCodes;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The claim protocol, shared by poll, take and claim. An item is taken in three requests:
 *
 * <ol>
 *   <li>one transaction {create claims/X EPHEMERAL, check items/X}: claims the item only if it still exists, and
 *       fails with NodeExists if someone else holds it, so a claimed item is never handed out twice;
 *   <li>getData items/X, then deserialize: a serializer that throws leaves the item in place;
 *   <li>for poll and take, or a claim's ack: one transaction {check our session marker, delete items/X, delete
 *       claims/X}. A claim's close is {check our session marker, delete claims/X}.
 * </ol>
 *
 * Curator retries each request after a lost connection, and every replay is recognisable: a replayed claim finds
 * claims/X already there with our session as its ephemeral owner and no local claim holding it (a claim that one of
 * our consumers holds is never taken for a replay), and a replayed removal passes the marker check and then finds
 * the nodes gone, which only we can have done while our session, and so our claim, lives. If the session ended, the
 * marker check fails the replay as a whole (see {@link SessionMarker}).
 */
final class ClaimOps {
    private static final Logger log = LoggerFactory.getLogger(ClaimOps.class);

    /** How a claim attempt ended. */
    enum Outcome {
        OURS,
        GONE,
        CLAIMED_ELSEWHERE,
        SESSION_ENDED
    }

    /** The outcome, and the session that owns the claim when it is ours. */
    record Claimed(Outcome outcome, long session) {}

    private final SharedQueue queue;

    ClaimOps(SharedQueue queue) {
        this.queue = queue;
    }

    /** Creates claims/X for the current session if the item exists and nobody else holds it. */
    Claimed claim(String name) {
        CuratorFramework client = queue.context.client();
        Layout layout = queue.layout;
        String claimPath = layout.claim(name);
        List<CuratorOp> ops = List.of(
                TransactionOps.create(client, claimPath, CreateMode.EPHEMERAL, new byte[0]),
                TransactionOps.check(client, layout.item(name)));
        for (int attempt = 0; attempt < 3; attempt++) {
            long session = queue.context.sessionId();
            CuratorEvent event = Requests.finish(
                    queue.context,
                    session,
                    claimPath,
                    cb -> client.transaction().inBackground(cb).forOperations(ops));
            Code code = Requests.code(event);
            if (code == Code.OK) {
                // A session that changed across the transaction may own the node: ask the node itself.
                return withMarker(
                        queue.context.sessionId() == session ? new Claimed(Outcome.OURS, session) : whoHolds(name));
            }
            int failed = Requests.failedOp(event);
            if (failed == 0 && code == Code.NODEEXISTS && queue.items.names().deferOnFirstSighting(name)) {
                // Competing consumers meet here all the time: try the next name, then this one again, without the
                // extra read. A second sighting asks who holds the claim, which also recognises a claim of our own
                // that a replay created.
                return new Claimed(Outcome.CLAIMED_ELSEWHERE, 0);
            }
            if (ResultCodes.isInDoubt(code) || (failed == 0 && code == Code.NODEEXISTS)) {
                // Held by someone, or by us if a retry on a newer session landed: the node's owner says which.
                Claimed holder = whoHolds(name);
                if (holder.outcome() != Outcome.GONE) {
                    return withMarker(holder);
                }
                continue; // nobody holds it now: try again
            }
            if (failed == 1 && code == Code.NONODE) {
                return new Claimed(Outcome.GONE, 0);
            }
            if (failed == 0 && code == Code.NONODE) {
                Requests.awaitFully(queue.ensureLayout(), layout.claims()); // the claims parent is missing
                continue;
            }
            throw Requests.failure("claiming", claimPath, code);
        }
        return new Claimed(Outcome.CLAIMED_ELSEWHERE, 0);
    }

    /**
     * Makes sure the owning session has its marker, which every later delete of the claim checks; created here, on
     * the consumer's thread, so that a release sent from a callback never has to wait for it.
     */
    private Claimed withMarker(Claimed claimed) {
        if (claimed.outcome() != Outcome.OURS || queue.marker.of(claimed.session()) != null) {
            return claimed;
        }
        return new Claimed(Outcome.SESSION_ENDED, 0); // the claim died with the session before it could be used
    }

    /**
     * Reads claims/X with a watch, so that a claim held elsewhere brings the name back when it goes. The name is
     * held out before the read, so a deletion that fires the watch at once still finds it.
     */
    private Claimed whoHolds(String name) {
        NameCache names = queue.items.names();
        CuratorEvent event = queue.readClaimWatched(name);
        Code code = Requests.code(event);
        long session = queue.context.sessionId();
        if (code == Code.OK && event.getStat().getEphemeralOwner() == session) {
            names.unwatchClaim(name, false);
            if (names.holds(name, session)) {
                // A claim of ours that a local consumer holds, not a replay: the node stays its holder's, and its
                // ack or close brings the name back.
                return new Claimed(Outcome.CLAIMED_ELSEWHERE, 0);
            }
            return new Claimed(Outcome.OURS, session); // our own replayed create
        }
        if (code == Code.OK) {
            return new Claimed(Outcome.CLAIMED_ELSEWHERE, 0);
        }
        names.unwatchClaim(name, false);
        if (code == Code.NONODE) {
            return new Claimed(Outcome.GONE, 0);
        }
        if (ResultCodes.isInDoubt(code)) {
            return new Claimed(Outcome.SESSION_ENDED, 0);
        }
        throw Requests.failure("reading", queue.layout.claim(name), code);
    }

    /** Reads a claimed item's stored bytes; null if it vanished under the claim. */
    byte[] read(String name, long session) {
        String itemPath = queue.layout.item(name);
        CuratorEvent event = Requests.finish(
                queue.context,
                session,
                itemPath,
                cb -> queue.context.client().getData().inBackground(cb).forPath(itemPath));
        Code code = Requests.code(event);
        if (code == Code.OK) {
            return event.getData();
        }
        if (code == Code.NONODE || ResultCodes.isInDoubt(code)) {
            return null;
        }
        throw Requests.failure("reading", itemPath, code);
    }

    /**
     * Deletes the item and our claim in one transaction, guarded by our session marker. Returns false if our
     * session ended first: the claim died with it, and the item may have gone to another consumer.
     */
    boolean remove(String name, long session) {
        String marker = queue.marker.existing(session);
        if (marker == null) {
            return false;
        }
        CuratorFramework client = queue.context.client();
        String itemPath = queue.layout.item(name);
        List<CuratorOp> ops = List.of(
                TransactionOps.check(client, marker),
                TransactionOps.delete(client, itemPath),
                TransactionOps.delete(client, queue.layout.claim(name)));
        CuratorEvent event = Requests.finish(
                queue.context,
                session,
                itemPath,
                cb -> client.transaction().inBackground(cb).forOperations(ops));
        Code code = Requests.code(event);
        int failed = Requests.failedOp(event);
        if (code == Code.OK || (failed > 0 && code == Code.NONODE)) {
            return true; // NoNode past a passing marker check: a replay of our own delete, under our live claim
        }
        if (failed == 0 || ResultCodes.isInDoubt(code)) {
            return false; // the session ended
        }
        throw Requests.failure("removing", itemPath, code);
    }

    /**
     * Deletes our claim so that the item becomes available again; the name comes back into play once the delete
     * is confirmed. A delete that cannot reach the server is sent again after reconnecting, as long as the session
     * (and so the claim) lives. The returned future completes on the first answer.
     */
    CompletableFuture<Void> release(String name, long session) {
        queue.items.names().releasing(name, session, queue.context.sessionId());
        CompletableFuture<Void> firstAnswer = new CompletableFuture<>();
        sendRelease(name, session, firstAnswer);
        return firstAnswer;
    }

    private void sendRelease(String name, long session, CompletableFuture<Void> firstAnswer) {
        String claimPath = queue.layout.claim(name);
        String marker = queue.marker.existing(session);
        if (marker == null) {
            // The claim died with its session. A newer claim on the item may be someone else's: leave it alone.
            queue.items.released(name, session);
            firstAnswer.complete(null);
            return;
        }
        CuratorFramework client = queue.context.client();
        List<CuratorOp> ops = List.of(TransactionOps.check(client, marker), TransactionOps.delete(client, claimPath));
        Requests.call(
                        queue.context,
                        claimPath,
                        cb -> client.transaction().inBackground(cb).forOperations(ops))
                .whenComplete((event, error) -> {
                    Code code = error == null ? Requests.code(event) : null;
                    if (code == Code.OK || code == Code.NONODE) {
                        queue.items.released(name, session); // deleted, already gone, or gone with its session
                    } else if (code != null && ResultCodes.isInDoubt(code) && queue.context.sessionId() == session) {
                        // Sent again from coord's retry thread once connected; sending never blocks.
                        queue.context.whenConnected(() -> sendRelease(name, session, firstAnswer));
                    } else {
                        log.debug(
                                "release of {} left to its session's end: {}", claimPath, error != null ? error : code);
                    }
                    firstAnswer.complete(null);
                });
    }
}
