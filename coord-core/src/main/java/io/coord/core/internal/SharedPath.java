package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;

/**
 * What the contenders of one client on one path share: children reads, and the deletions any of them has seen.
 *
 * <p>Reads are coalesced. A caller always gets a read that was sent after its call, which is what lets a contender
 * send its create and then ask for the children without waiting: ZooKeeper answers one session's requests in order,
 * so the list holds the new node. While one read is in flight, every caller that arrives joins the single next one.
 *
 * <p>A deletion is remembered only while some contender still reads from a snapshot that could contain the node:
 * each contender pins the lowest sequence of its snapshot, and deletions below every pin are forgotten.
 */
final class SharedPath {
    private static final SequenceNode[] EMPTY = new SequenceNode[0];

    private final ClientContext context;
    private final String path;
    // Sequence -> name of nodes known to be gone. Protected names carry a uuid, so one that matches is that node.
    private final ConcurrentSkipListMap<Long, String> deleted = new ConcurrentSkipListMap<>();
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private boolean inFlight;
    private CompletableFuture<SequenceNode[]> next;
    private final TreeMap<Long, Integer> pins = new TreeMap<>();
    private final Map<CompletableFuture<SequenceNode[]>, Set<String>> sweeps = new HashMap<>();
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
            deleted.put(node.sequence(), node.name());
        }
    }

    boolean isKnownDeleted(SequenceNode node) {
        return node.name().equals(deleted.get(node.sequence()));
    }

    boolean hasKnownDeletions() {
        return !deleted.isEmpty();
    }

    /**
     * Deletes every child whose name starts with one of {@code prefixes} ({@code _c_<uuid>-}), as a read sent after
     * this call lists them. A create whose reply was lost to a dropped connection is sent again by Curator, and the
     * first copy then exists without its owner knowing the name: only a read finds it. Sweeps ride on the shared
     * read, so a burst of withdrawals costs a few reads, not one each. Retried on the next connection on failure.
     */
    void sweep(Collection<String> prefixes) {
        if (prefixes.isEmpty() || context.isClosed()) {
            return; // a closed client's session takes its ephemeral nodes with it
        }
        CompletableFuture<SequenceNode[]> read = read();
        boolean first;
        lock.lock();
        try {
            Set<String> batch = sweeps.get(read);
            first = batch == null;
            if (first) {
                batch = new HashSet<>();
                sweeps.put(read, batch);
            }
            batch.addAll(prefixes);
        } finally {
            lock.unlock();
        }
        if (first) {
            read.whenComplete((nodes, error) -> swept(read, nodes, error));
        }
    }

    private void swept(CompletableFuture<SequenceNode[]> read, SequenceNode[] nodes, Throwable error) {
        Set<String> batch;
        lock.lock();
        try {
            batch = sweeps.remove(read);
        } finally {
            lock.unlock();
        }
        if (error != null) {
            context.whenConnected(() -> sweep(batch));
            return;
        }
        for (SequenceNode node : nodes) {
            node.protectionId()
                    .filter(id -> batch.contains("_c_" + id + "-"))
                    .ifPresent(id -> context.deleteGuaranteed(ZKPaths.makePath(path, node.name())));
        }
    }

    /** A contender now reads from a snapshot whose lowest sequence is {@code low}. */
    void pin(long low) {
        lock.lock();
        try {
            pins.merge(low, 1, Integer::sum);
        } finally {
            lock.unlock();
        }
    }

    /** Undoes one {@link #pin}, and forgets deletions that no remaining snapshot can contain. */
    void unpin(long low) {
        long floor;
        lock.lock();
        try {
            pins.computeIfPresent(low, (k, count) -> count == 1 ? null : count - 1);
            floor = pins.isEmpty() ? Long.MAX_VALUE : pins.firstKey();
        } finally {
            lock.unlock();
        }
        deleted.headMap(floor).clear();
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
