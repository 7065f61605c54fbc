package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.Comparator;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException.Code;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The deletes of one client's own znodes, sent until answered for good, and which of its nodes are on their way out at
 * its own hand: those this client's contenders leave out of their queues (see {@link #isLeaving}).
 */
final class GuaranteedDeletes {
    private static final Logger log = LoggerFactory.getLogger(GuaranteedDeletes.class);
    // Sequence nodes by their sequence, then any other names by name.
    static final Comparator<String> CREATION_ORDER = Comparator.comparing(
                    (String name) -> SequenceNode.parse(name).orElse(null),
                    Comparator.nullsLast(Comparator.naturalOrder()))
            .thenComparing(Comparator.naturalOrder());

    private final ClientContext context;
    // The ids (_c_<id>-) of creates withdrawn while in flight, until what they made is deleted (see
    // #withdrawnInFlight).
    private final Set<String> withdrawnIds = ConcurrentHashMap.newKeySet();
    // The names of our znodes whose delete is sent and not yet answered for good, by parent (see #isLeaving).
    private final Map<String, Set<String>> deleting = new ConcurrentHashMap<>();
    // Full paths among them of leases that ended without their holder letting go (see deleteLost).
    private final Set<String> lostNodes = ConcurrentHashMap.newKeySet();

    GuaranteedDeletes(ClientContext context) {
        this.context = context;
    }

    /** See {@link ClientContext#deleteGuaranteed}. */
    CompletableFuture<Void> delete(String path) {
        CompletableFuture<Void> answered = new CompletableFuture<>();
        ZKPaths.PathAndNode parentAndName = ZKPaths.getPathAndNode(path);
        deleting.compute(parentAndName.getPath(), (parent, names) -> {
            Set<String> now = names != null ? names : ConcurrentHashMap.newKeySet();
            now.add(parentAndName.getNode());
            return now;
        });
        try {
            context.client()
                    .delete()
                    .guaranteed()
                    .inBackground((c, event) -> {
                        Code rc = Code.get(event.getResultCode());
                        if (rc == Code.NOTREADONLY) {
                            context.writable().thenRun(() -> delete(path));
                        } else if (ResultCodes.isPassing(rc)) {
                            context.sendAgain(rc, () -> delete(path));
                        } else {
                            logFailedDelete(path, event);
                            deleted(parentAndName);
                        }
                        answered.complete(null);
                    })
                    .forPath(path);
        } catch (Exception e) {
            // The client is closed: its session, and with it the ephemeral znode, is gone or going.
            log.debug("delete of {} left to the session's end", path, e);
            deleted(parentAndName);
            answered.complete(null);
        }
        return answered;
    }

    /**
     * Deletes a node of a lease that ended without its holder letting go: lost with its session, or found gone or
     * another session's. Its holder may not know yet, and a write it fences on this node commits while the node lives;
     * so this client's contenders wait for the node to go, as everyone else's do, rather than leave it out of the queue
     * as they do a released one (see {@link #isLeaving}). Only the wait for the delete's answer is longer.
     */
    void deleteLost(String path) {
        lostNodes.add(path);
        delete(path);
    }

    /**
     * Sends every delete of ours not yet answered for good again, at once. Curator sends a request lost with its
     * connection again only after its retry policy's sleep, while what is sent on the new connection goes out at
     * once: a released node would hold up everyone else, and tell them a holder is still there, for that long.
     * A delete answered meanwhile costs one request that finds nothing. Each parent's are sent in creation order, so
     * that of a lease of several the first node, the one its holder fences writes on, is sent first (Curator's own
     * retries of the first sends follow their own order).
     */
    void resendAll() {
        deleting.forEach((parent, names) ->
                names.stream().sorted(CREATION_ORDER).toList().forEach(name -> delete(ZKPaths.makePath(parent, name))));
    }

    /** The delete of a znode of ours was answered for good: gone, or never to be deleted by us. */
    private void deleted(ZKPaths.PathAndNode parentAndName) {
        if (!lostNodes.isEmpty()) {
            lostNodes.remove(ZKPaths.makePath(parentAndName.getPath(), parentAndName.getNode()));
        }
        deleting.computeIfPresent(parentAndName.getPath(), (parent, names) -> {
            names.remove(parentAndName.getNode());
            return names.isEmpty() ? null : names;
        });
    }

    /**
     * An attempt of this client withdrew while its create, named with {@code id}, was in flight. That create lands
     * before any the caller sends next, and what it made is deleted only once its reply comes, after the next one's:
     * until then this client's contenders leave its nodes out of the queue (see {@link #isLeaving}), so that a look
     * sent right after the withdrawal is not refused behind them. Nobody is ever granted on such a node.
     */
    void withdrawnInFlight(String id) {
        withdrawnIds.add(id);
    }

    /**
     * What the create named with {@code id} made is deleted, or it made nothing. One whose reply was lost is never
     * called done: a copy may have landed unseen, so its id stays for the client's life, a few bytes each time.
     */
    void withdrawalDone(String id) {
        withdrawnIds.remove(id);
    }

    /**
     * Whether {@code node}, a child of {@code parent}, is on its way out at this client's own hand: made by a create
     * this client withdrew in flight and not deleted yet, or one whose delete this client has sent and not seen
     * answered. Such a node holds nothing, so this client's contenders leave it out of the queue. A delete normally
     * lands before anything the client sends next, but one lost with the connection is sent again only once the
     * client hears of the new connection ({@link #resendAll}), while a request made meanwhile (by a listener of the
     * application that heard first) goes out at once: without this, a release during a connection blip could refuse
     * the same thread's next look, or hold up its next acquisition, behind its own released node. Others still see the
     * node until it goes, which only makes them wait longer. A node of a lost lease is no such node (see
     * {@link #deleteLost}).
     */
    boolean isLeaving(String parent, SequenceNode node) {
        if (!withdrawnIds.isEmpty()
                && node.protectionId().map(withdrawnIds::contains).orElse(false)) {
            return true;
        }
        Set<String> names = deleting.isEmpty() ? null : deleting.get(parent);
        return names != null
                && names.contains(node.name())
                && (lostNodes.isEmpty() || !lostNodes.contains(ZKPaths.makePath(parent, node.name())));
    }

    /** Whether a node of this client under {@code parent} may be on its way out: only then is a queue searched. */
    boolean anyLeaving(String parent) {
        return !withdrawnIds.isEmpty() || deleting.containsKey(parent);
    }

    private static void logFailedDelete(String path, CuratorEvent event) {
        int rc = event.getResultCode();
        if (rc != Code.OK.intValue() && rc != Code.NONODE.intValue()) {
            log.debug("delete of {} answered {}", path, Code.get(rc));
        }
    }
}
