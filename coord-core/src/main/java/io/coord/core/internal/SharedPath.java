package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.KeeperException;

/**
 * What the contenders of one client on one path share: children reads, and the deletions any of them has seen.
 *
 * <p>Reads are coalesced. A caller always gets a read that was sent after its call, which is what lets a contender
 * send its create and then ask for the children without waiting: ZooKeeper answers one session's requests in order,
 * so the list holds the new node. While one read is in flight, every caller that arrives joins the single next one.
 */
final class SharedPath {
    private static final SequenceNode[] EMPTY = new SequenceNode[0];

    private final ClientContext context;
    private final String path;
    // Node names are unique under a parent (they carry a uuid), so a deletion seen once holds for everyone.
    private final Set<String> knownDeleted = ConcurrentHashMap.newKeySet();
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private boolean inFlight;
    private CompletableFuture<SequenceNode[]> next;
    // Guarded by ClientContext.paths' compute.
    int users;

    SharedPath(ClientContext context, String path) {
        this.context = context;
        this.path = path;
    }

    String path() {
        return path;
    }

    /** The queue's sequence nodes, sorted, from a read sent after this call. Completes on the event thread. */
    CompletableFuture<SequenceNode[]> read() {
        CompletableFuture<SequenceNode[]> mine;
        lock.lock();
        try {
            if (inFlight) {
                if (next == null) {
                    next = new CompletableFuture<>();
                }
                return next;
            }
            inFlight = true;
            mine = new CompletableFuture<>();
        } finally {
            lock.unlock();
        }
        send(mine);
        return mine;
    }

    void noteDeleted(SequenceNode node) {
        if (node.protectionId().isPresent()) {
            knownDeleted.add(node.name());
        }
    }

    boolean isKnownDeleted(SequenceNode node) {
        return !knownDeleted.isEmpty() && knownDeleted.contains(node.name());
    }

    boolean hasKnownDeletions() {
        return !knownDeleted.isEmpty();
    }

    private void send(CompletableFuture<SequenceNode[]> target) {
        try {
            context.client()
                    .getChildren()
                    .inBackground((c, event) -> done(target, event))
                    .forPath(path);
        } catch (Exception e) {
            target.completeExceptionally(e);
            sendNext();
        }
    }

    private void done(CompletableFuture<SequenceNode[]> target, CuratorEvent event) {
        KeeperException.Code rc = KeeperException.Code.get(event.getResultCode());
        // Hand the next read to ZooKeeper before running this one's dependents, so that it is not delayed by them.
        sendNext();
        switch (rc) {
            case OK -> target.complete(sorted(event.getChildren()));
            case NONODE -> target.complete(EMPTY);
            default -> target.completeExceptionally(KeeperException.create(rc, path));
        }
    }

    private void sendNext() {
        CompletableFuture<SequenceNode[]> queued;
        lock.lock();
        try {
            queued = next;
            next = null;
            inFlight = queued != null;
        } finally {
            lock.unlock();
        }
        if (queued != null) {
            send(queued);
        }
    }

    private static SequenceNode[] sorted(List<String> children) {
        SequenceNode[] nodes = children.stream()
                .map(SequenceNode::parse)
                .flatMap(Optional::stream)
                .toArray(SequenceNode[]::new);
        Arrays.sort(nodes);
        return nodes;
    }
}
