package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the contenders of one client on one path share: children reads, and the deletions any of them has seen.
 *
 * <p>Reads are coalesced. A caller always gets a read that was sent after its call, which is what lets a contender
 * send its create and then ask for the children without waiting: ZooKeeper answers one session's requests in order,
 * so the list holds the new node. While one read is in flight, every caller that arrives joins the single next one.
 *
 * <p>A deletion is remembered only while some contender still reads from a snapshot that could contain the node:
 * each contender pins the lowest sequence of its snapshot, and deletions below every pin are forgotten.
 *
 * <p>Watches on the queue's nodes are shared too: one registered watcher per node, however many contenders of this
 * client wait on it. A contender that stops waiting only unsubscribes, which frees everything it held here and costs
 * nothing on the server; the server's one-shot watch fires once more at most, into no subscriber.
 */
final class SharedPath {
    private static final Logger log = LoggerFactory.getLogger(SharedPath.class);
    private static final long SWEEP_RETRY_MILLIS = 1_000;

    private static final Listing MISSING = new Listing(new SequenceNode[0], 0);

    private final ClientContext context;
    private final String path;
    // Sequence -> name of nodes known to be gone. Protected names carry a uuid, so one that matches is that node.
    private final ConcurrentSkipListMap<Long, String> deleted = new ConcurrentSkipListMap<>(SequenceOrder.COUNTED);
    private final ReentrantLock lock = new ReentrantLock();
    private final SingleFlight<Listing> reads = new SingleFlight<>(this::send);
    // Guarded by lock.
    private final TreeMap<Long, Integer> pins = new TreeMap<>(SequenceOrder.COUNTED);
    private final Map<CompletableFuture<Listing>, Set<String>> sweeps = new HashMap<>();
    // Guarded by lock. Node name -> the contenders waiting on its one watch.
    private final Map<String, NodeWatch> watches = new HashMap<>();
    // Guarded by ClientContext.paths' compute.
    int users;

    /** Hears about one watched node. Called outside every lock of this class. */
    interface WatchSubscriber {
        /** The watch request answered: OK means the watch is set, NONODE that the node is already gone. */
        void watchAnswered(SequenceNode node, KeeperException.Code rc);

        /** The node changed. */
        void watchFired(WatchedEvent event);
    }

    /** One node's watch: who waits on it, and whether the server has confirmed it. */
    private static final class NodeWatch {
        final SequenceNode node;
        final long session;
        final Set<WatchSubscriber> subscribers = new LinkedHashSet<>();
        boolean set;

        NodeWatch(SequenceNode node, long session) {
            this.node = node;
            this.session = session;
        }
    }

    SharedPath(ClientContext context, String path) {
        this.context = context;
        this.path = path;
    }

    String path() {
        return path;
    }

    /**
     * What a read lists: the queue's sequence nodes, sorted, and the zxid that created the path ({@code czxid}), which
     * tells this path from one of the same name made again after a deletion; 0 when the path is missing.
     */
    record Listing(SequenceNode[] nodes, long parentCzxid) {}

    /** The queue, from a read sent after this call. Completes on the event thread. */
    CompletableFuture<Listing> read() {
        return reads.next();
    }

    void noteDeleted(SequenceNode node) {
        if (node.protectionId().isPresent()) {
            deleted.put(node.sequence(), node.name());
        }
    }

    /** The deletions noted so far of nodes with sequences from {@code from} up to, not including, {@code to}. */
    Map<Long, String> knownDeletions(long from, long to) {
        return deleted.subMap(from, true, to, false);
    }

    /**
     * Deletes every child whose name starts with one of {@code prefixes} ({@code _c_<uuid>-}), as a read sent after
     * this call lists them. A create whose reply was lost to a dropped connection is sent again by Curator, and the
     * first copy then exists without its owner knowing the name: only a read finds it. Sweeps ride on the shared
     * read, so a burst of withdrawals costs a few reads, not one each. A read lost with the connection is sent again
     * once connected, one refused for now a while later, and one refused for good (no permission) not at all.
     */
    void sweep(Collection<String> prefixes) {
        if (prefixes.isEmpty() || context.isClosed()) {
            return; // a closed client's session takes its ephemeral nodes with it
        }
        CompletableFuture<Listing> read = read();
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
            read.whenComplete((listing, error) -> swept(read, listing, error));
        }
    }

    private void swept(CompletableFuture<Listing> read, Listing listing, Throwable error) {
        Set<String> batch;
        lock.lock();
        try {
            batch = sweeps.remove(read);
        } finally {
            lock.unlock();
        }
        if (error != null) {
            Throwable cause = ResultCodes.unwrap(error);
            if (ResultCodes.isInDoubt(error)) {
                context.whenConnected(() -> sweep(batch));
            } else if (context.isClosed()
                    || (cause instanceof KeeperException ke && ke.code() == KeeperException.Code.NOAUTH)) {
                // Asking again would only be refused again. What a sweep would find is ephemeral: it ends with the
                // session at the latest (and a client that may not list the path was refused its create as well).
                log.debug("strays of {} under {} left to the session's end: {}", batch, path, cause.toString());
            } else {
                // Refused for now (a server that throttles, say): a stray at the head of the queue would hold up
                // everyone behind it, so ask again in a while, not at once.
                log.warn("sweeping {} for strays failed, trying again in {} ms: {}", path, SWEEP_RETRY_MILLIS, cause);
                Executors.TIMER.schedule(() -> sweep(batch), SWEEP_RETRY_MILLIS, TimeUnit.MILLISECONDS);
            }
            return;
        }
        for (SequenceNode node : listing.nodes()) {
            node.protectionId()
                    .filter(id -> batch.contains(OwnNodes.prefixOf(id)))
                    .ifPresent(id -> context.deleteGuaranteed(ZKPaths.makePath(path, node.name())));
        }
    }

    /**
     * Subscribes to the deletion of {@code node}. The first subscriber of this client sends the watch (getData, not
     * exists: exists on a missing node leaves a watch behind); later ones join it, and hear at once if it is set.
     */
    void watch(SequenceNode node, WatchSubscriber subscriber) {
        NodeWatch joined;
        boolean send;
        long session = context.sessionId();
        lock.lock();
        try {
            NodeWatch existing = watches.get(node.name());
            // An entry of an older session has no watch on the server any more: send a new one. Its subscribers
            // move over, so that none is dropped unheard if the session id read wrong (0 when it cannot be read).
            send = existing == null || existing.session != session;
            joined = send ? new NodeWatch(node, session) : existing;
            if (send) {
                if (existing != null) {
                    joined.subscribers.addAll(existing.subscribers);
                }
                watches.put(node.name(), joined);
            }
            joined.subscribers.add(subscriber);
        } finally {
            lock.unlock();
        }
        if (send) {
            sendWatch(joined);
        } else if (joined.set) {
            subscriber.watchAnswered(node, KeeperException.Code.OK);
        }
    }

    /** The subscriber no longer waits on {@code name}; the last one to leave drops the entry. */
    void unwatch(String name, WatchSubscriber subscriber) {
        lock.lock();
        try {
            NodeWatch w = watches.get(name);
            if (w != null && w.subscribers.remove(subscriber) && w.subscribers.isEmpty()) {
                watches.remove(name);
            }
        } finally {
            lock.unlock();
        }
    }

    private void sendWatch(NodeWatch w) {
        try {
            context.client()
                    .getData()
                    .usingWatcher(context.nodeWatcher())
                    .inBackground((c, event) -> watchAnswered(w, KeeperException.Code.get(event.getResultCode())))
                    .forPath(ZKPaths.makePath(path, w.node.name()));
        } catch (Exception e) {
            watchAnswered(w, KeeperException.Code.SYSTEMERROR);
        }
    }

    private void watchAnswered(NodeWatch w, KeeperException.Code rc) {
        List<WatchSubscriber> told;
        lock.lock();
        try {
            if (rc == KeeperException.Code.OK) {
                w.set = true;
            } else {
                watches.remove(w.node.name(), w); // no watch was left: the next subscriber asks again
            }
            told = List.copyOf(w.subscribers);
        } finally {
            lock.unlock();
        }
        told.forEach(s -> s.watchAnswered(w.node, rc));
    }

    /** A watch of one of this path's nodes fired (connection news stays with the client's context). */
    void watchFired(WatchedEvent event) {
        List<WatchSubscriber> told;
        lock.lock();
        try {
            NodeWatch w =
                    watches.remove(ZKPaths.getNodeFromPath(event.getPath())); // one-shot: a re-watch subscribes anew
            told = w == null ? List.of() : List.copyOf(w.subscribers);
        } finally {
            lock.unlock();
        }
        told.forEach(s -> s.watchFired(event));
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
        Long floor;
        lock.lock();
        try {
            pins.computeIfPresent(low, (k, count) -> count == 1 ? null : count - 1);
            floor = pins.isEmpty() ? null : pins.firstKey();
        } finally {
            lock.unlock();
        }
        (floor == null ? deleted : deleted.headMap(floor)).clear();
    }

    private CompletableFuture<Listing> send() {
        CompletableFuture<Listing> answer = new CompletableFuture<>();
        try {
            context.client()
                    .getChildren()
                    .inBackground((c, event) -> {
                        KeeperException.Code rc = KeeperException.Code.get(event.getResultCode());
                        switch (rc) {
                            case OK -> answered(answer, event);
                            case NONODE -> answer.complete(MISSING);
                            default -> answer.completeExceptionally(KeeperException.create(rc, path));
                        }
                    })
                    .forPath(path);
        } catch (Exception e) {
            answer.completeExceptionally(e);
        }
        return answer;
    }

    private void answered(CompletableFuture<Listing> answer, CuratorEvent event) {
        Stat stat = event.getStat();
        if (stat == null) {
            // Curator's background reads always carry it: without it, no read could ever tell which path it listed.
            answer.completeExceptionally(new IllegalStateException("a read of " + path + " answered without its Stat"));
        } else {
            answer.complete(new Listing(sorted(event.getChildren()), stat.getCzxid()));
        }
    }

    private static SequenceNode[] sorted(List<String> children) {
        // A plain loop: with hundreds of contenders this runs for each of them on every read.
        SequenceNode[] nodes = new SequenceNode[children.size()];
        int count = 0;
        for (String child : children) {
            Optional<SequenceNode> node = SequenceNode.parse(child);
            if (node.isPresent()) {
                nodes[count++] = node.get();
            }
        }
        SequenceNode[] parsed = count == nodes.length ? nodes : Arrays.copyOf(nodes, count);
        Arrays.sort(parsed);
        return parsed;
    }
}
