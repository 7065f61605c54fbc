package io.coord.election;

import io.coord.core.CoordinationException;
import io.coord.core.Participant;
import io.coord.core.SequenceNode;
import io.coord.core.internal.Arguments;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.Executors;
import io.coord.core.internal.OrderedListeners;
import io.coord.core.internal.PathFollower;
import io.coord.core.internal.ResultCodes;
import io.coord.core.internal.SerialExecutor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows who leads an election without taking part: for a {@link LeaderLatch}, a {@link LeaderSelector}, or
 * Curator's recipes on the same path. The leader is the child with the lowest sequence number, whatever its prefix.
 *
 * <p>It follows the election through the client's view of the path (one persistent watch per client and path, shared
 * with any latch, selector or lock of the client there): a change costs no request, and a change of leader one data
 * read, for its id. Closing the observer releases its use of the view, whose watch is removed once nothing of the
 * client uses the path. Without a view (views turned off with {@code coord.view=off}, a server before 3.6, a path
 * whose nodes the client may not all read, or past the herd bound) it keeps one children watch on the path instead,
 * re-armed on every change, and each change costs one children read. A client that may not list the path's nodes
 * (NOAUTH) logs a warning and reads again after a pause, 1 s doubling up to 30 s.
 *
 * <p>Listeners hear every change of leader it sees, including "nobody leads" as {@code Optional.empty()}; changes
 * quicker than the reads they need are merged, so a leader that came and went between two reads may not be reported
 * (the last one reported is always the current one as last read). A leader whose node is seen gone is never
 * reported again: while the new leader's id is being read, {@link #leader()} is empty. A leader whose node this client
 * may not read is reported with an empty id.
 * While the connection is down the last known leader is kept, and checked again on reconnect.
 */
public final class LeaderObserver implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LeaderObserver.class);

    private enum Phase {
        LATENT,
        STARTED,
        CLOSED
    }

    private final CuratorFramework client;
    private final String path;
    private final ClientContext context;
    private final ChildrenWatches watches;
    private final Runnable onChange = this::readChildren;
    // Not damped by a circuit-breaking listener manager: a new session must be read at once.
    private final ConnectionStateListener connectionListener = new ConnectionStateListener() {
        @Override
        public void stateChanged(CuratorFramework c, ConnectionState state) {
            connectionChanged(c, state);
        }

        @Override
        public boolean doNotProxy() {
            return true;
        }
    };
    private final OrderedListeners<Consumer<Optional<Participant>>> listeners;

    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private Phase phase = Phase.LATENT;
    private String leaderNode; // lowest child in the latest children reply, null for none
    private Participant leader; // leaderNode with its id, once read; null until then
    private String reportedNode; // what listeners last heard, null for nobody
    private PathFollower follower; // while following through the view
    private boolean viewLost; // the view turned unusable: follow with a children watch
    private boolean watching; // following with a children watch
    private int refusedInARow; // children reads in a row that the server refused outright

    /** Checks its arguments and does no I/O. */
    public LeaderObserver(CuratorFramework client, String path) {
        this.client = Arguments.client(client);
        this.path = Arguments.path(path);
        this.listeners = new OrderedListeners<>(path, SerialExecutor.onCallbacks());
        this.context = ClientContext.of(this.client);
        this.watches = ChildrenWatches.of(context);
    }

    /**
     * Starts watching. Once only; the client must have been started.
     *
     * @throws IllegalStateException if started before, or if the client was never started
     * @throws CoordinationException if the client is closed
     */
    public void start() {
        lock.lock();
        try {
            if (phase == Phase.CLOSED) {
                throw TermRequest.startAfterClose(this);
            }
            if (phase != Phase.LATENT) {
                throw new IllegalStateException("already started: " + this + " is " + phase);
            }
            if (client.getState() == CuratorFrameworkState.LATENT) {
                throw new IllegalStateException("the client must be started before observing " + path);
            }
            if (client.getState() == CuratorFrameworkState.STOPPED) {
                throw new CoordinationException("the client is closed: cannot observe " + path);
            }
            phase = Phase.STARTED;
        } finally {
            lock.unlock();
        }
        Optional<PathFollower> view = PathFollower.follow(client, path, new PathFollower.Listener() {
            @Override
            public void changed() {
                followed();
            }

            @Override
            public void unusable() {
                viewLost();
            }
        });
        boolean onView;
        lock.lock();
        try {
            onView = view.isPresent() && !viewLost && phase == Phase.STARTED;
            if (onView) {
                follower = view.get();
            }
        } finally {
            lock.unlock();
        }
        if (onView) {
            followed(); // the view may be live already, read for another user of the path
        } else {
            view.ifPresent(PathFollower::close);
            watchChildren();
        }
    }

    /** The current leader, empty when nobody leads (or before the first read has answered). */
    public Optional<Participant> leader() {
        lock.lock();
        try {
            return Optional.ofNullable(leader);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Tells {@code listener}, on {@code executor}, of every change of leader seen after this call (quick successions
     * merged, see above). A listener that throws is logged and ignored.
     */
    public void addListener(Consumer<Optional<Participant>> listener, Executor executor) {
        listeners.add(listener, executor);
    }

    /**
     * Stops notifying and releases the view, or leaves the children watch, which the server drops once no observer of
     * this client follows the path. That drop removes every children and data watch the client has on the election's
     * path: a watch of your own on that very path, set through the same client, goes with it. Idempotent.
     */
    @Override
    public void close() {
        PathFollower view;
        boolean watched;
        lock.lock();
        try {
            phase = Phase.CLOSED;
            view = follower;
            follower = null;
            watched = watching;
            watching = false;
        } finally {
            lock.unlock();
        }
        if (view != null) {
            view.close();
        }
        if (watched) {
            client.getConnectionStateListenable().removeListener(connectionListener);
            watches.leave(path, onChange);
        }
    }

    @Override
    public String toString() {
        return "LeaderObserver[" + path + "]";
    }

    // ---- through the view ----

    /**
     * The view changed, or was read anew: its head is the leader. Runs on ZooKeeper's event thread, and once on
     * start()'s thread: the head is looked at and taken under one lock, so that a look taken before a change can
     * never be applied after the look that follows it.
     */
    private void followed() {
        Optional<SequenceNode> toRead;
        lock.lock();
        try {
            // Nothing known while the view is not live: the last known leader stays until it is read again.
            Optional<PathFollower.Head> head = follower == null ? Optional.empty() : follower.head();
            if (head.isEmpty()) {
                return;
            }
            toRead = newHead(head.get().first());
        } finally {
            lock.unlock();
        }
        toRead.ifPresent(this::readLeader);
    }

    /** The view cannot serve this path any more: follow it with a children watch. */
    private void viewLost() {
        PathFollower view;
        lock.lock();
        try {
            viewLost = true;
            view = follower;
            follower = null;
        } finally {
            lock.unlock();
        }
        if (view != null) { // otherwise start() has not taken it yet, and falls back itself
            view.close();
            watchChildren();
        }
    }

    // ---- with a children watch ----

    private void watchChildren() {
        lock.lock();
        try {
            if (phase != Phase.STARTED || watching) {
                return;
            }
            // Registered under the lock, so that a close() running now finds them to undo. Neither calls back.
            watching = true;
            client.getConnectionStateListenable().addListener(connectionListener);
            watches.follow(path, onChange);
        } finally {
            lock.unlock();
        }
        readChildren();
    }

    private void readChildren() {
        if (isClosed()) {
            return;
        }
        try {
            client.getChildren()
                    .usingWatcher(watches.watcher())
                    .inBackground(this::childrenRead)
                    .forPath(path);
        } catch (Exception e) {
            log.debug("{} cannot read children; the client is closed", this, e);
        }
    }

    private void childrenRead(CuratorFramework c, CuratorEvent event) {
        KeeperException.Code rc = KeeperException.Code.get(event.getResultCode());
        switch (rc) {
            case OK -> {
                readAnswered();
                childrenChanged(event.getChildren());
            }
            case NONODE -> {
                readAnswered();
                childrenChanged(List.of());
                // getChildren on a missing node leaves no watch. Watch for the path's creation with exists, which
                // does leave one there; it is armed only while the path is missing, so we never hold two.
                watchCreation();
            }
            default -> {
                if (rc == KeeperException.Code.THROTTLEDOP) {
                    // A server's request throttling refused it: nothing else would read again.
                    log.debug("{} read children: {}; reading again shortly", this, rc);
                    context.sendAgainLater(this::readChildren);
                } else if (ResultCodes.isInDoubt(rc)) {
                    log.debug("{} read children: {}; reading again on reconnect", this, rc);
                } else {
                    readRefused(rc);
                }
            }
        }
        if (isClosed()) {
            watches.readAfterLeaving(path); // the read may have re-armed a watch that close() had dropped
        }
    }

    private void readAnswered() {
        lock.lock();
        try {
            refusedInARow = 0;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The server refused to list the path, on a connection that goes on: NOAUTH, when this client may not read it.
     * Nothing else would read again, so it reads again after a pause (1 s, doubling up to 30 s), and sees a change of
     * the path's ACL that way.
     */
    private void readRefused(KeeperException.Code rc) {
        Duration delay;
        lock.lock();
        try {
            if (phase != Phase.STARTED) {
                return;
            }
            delay = TermRequest.retryDelay(++refusedInARow);
        } finally {
            lock.unlock();
        }
        log.warn("{} may not list the election's nodes ({}); it reads them again in {}", this, rc, delay);
        context.track(Executors.after(delay)).thenRun(this::readChildren); // not run once the client closes
    }

    private void watchCreation() {
        if (isClosed()) {
            return;
        }
        watches.awaitCreation(path);
        try {
            client.checkExists()
                    .usingWatcher(watches.watcher())
                    .inBackground(this::existenceChecked)
                    .forPath(path);
        } catch (Exception e) {
            log.debug("{} cannot watch for the path; the client is closed", this, e);
        }
    }

    private void existenceChecked(CuratorFramework c, CuratorEvent event) {
        if (event.getResultCode() == KeeperException.Code.OK.intValue()) {
            // Created between the two reads: the exists watch now sits on a live node, and would stay on the server
            // until the path's data changes, which for an election parent is never. Drop it (every observer of this
            // client that asked learns the same, and reads children next), and trade it for the children watch.
            watches.found(path);
            readChildren();
        } else if (isClosed()) {
            watches.readAfterLeaving(path);
        } else if (event.getResultCode() == KeeperException.Code.THROTTLEDOP.intValue()) {
            // Refused by a busy server, which set no watch: nothing would tell of the path's creation.
            log.debug("{} watch for the path: refused by a busy server; reading again shortly", this);
            context.sendAgainLater(this::readChildren);
        }
    }

    private void childrenChanged(List<String> children) {
        headChanged(children.stream()
                .map(SequenceNode::parse)
                .flatMap(Optional::stream)
                .min(Comparator.naturalOrder()));
    }

    private void headChanged(Optional<SequenceNode> lowest) {
        Optional<SequenceNode> toRead;
        lock.lock();
        try {
            toRead = newHead(lowest);
        } finally {
            lock.unlock();
        }
        toRead.ifPresent(this::readLeader);
    }

    /** Under {@link #lock}: takes {@code lowest} as the leader's node; returns it if its id must be read. */
    private Optional<SequenceNode> newHead(Optional<SequenceNode> lowest) {
        String name = lowest.map(SequenceNode::name).orElse(null);
        if (phase != Phase.STARTED) {
            return Optional.empty();
        }
        if (name == null) {
            // Told even when no leader was known here: a failed read of the last one's id forgets its node, while
            // the listeners may still believe in the leader before it.
            leaderNode = null;
            leader = null;
            report(null);
            return Optional.empty();
        }
        if (name.equals(leaderNode)) {
            return Optional.empty(); // no change, or its id is already being read
        }
        leaderNode = name;
        leader = null; // whoever led before is gone, whether or not we know the new one's id yet
        return lowest;
    }

    private void readLeaderIfHead(SequenceNode node) {
        boolean head;
        lock.lock();
        try {
            head = phase == Phase.STARTED && node.name().equals(leaderNode);
        } finally {
            lock.unlock();
        }
        if (head) {
            readLeader(node);
        }
    }

    private void readLeader(SequenceNode node) {
        try {
            client.getData()
                    .inBackground((c, event) -> leaderRead(node, event))
                    .forPath(ZKPaths.makePath(path, node.name()));
        } catch (Exception e) {
            log.debug("{} cannot read leader {}; the client is closed", this, node.name(), e);
        }
    }

    private void leaderRead(SequenceNode node, CuratorEvent event) {
        KeeperException.Code rc = KeeperException.Code.get(event.getResultCode());
        boolean blindView = false;
        lock.lock();
        try {
            // Only the node the latest children reply named: an older reply's leader may already be gone.
            if (phase != Phase.STARTED || !node.name().equals(leaderNode)) {
                return;
            }
            // ZooKeeper withholds the events of a node the client may not read, its deletion too: a view could keep
            // it as the leader after it is gone. Follow the path with a children watch instead.
            blindView = rc == KeeperException.Code.NOAUTH && follower != null;
            switch (rc) {
                case OK -> {
                    byte[] data = event.getData();
                    String id = data == null ? "" : new String(data, StandardCharsets.UTF_8);
                    leader = new Participant(id, node.name(), node.sequence());
                    report(leader);
                }
                // Deleted since the children read: that read's watch fires, and the next reply names the new leader.
                case NONODE -> {}
                // This client may not read the node: it leads all the same, its id unknown.
                case NOAUTH -> {
                    log.debug("{} may not read the id of leader {}", this, node.name());
                    leader = new Participant("", node.name(), node.sequence());
                    report(leader);
                }
                default -> {
                    if (rc == KeeperException.Code.THROTTLEDOP) {
                        // A server's request throttling refused it: read it again shortly, if still the head then.
                        context.sendAgainLater(() -> readLeaderIfHead(node));
                    } else {
                        // Connection trouble: forget the node, so that the read on reconnect fetches its id again.
                        leaderNode = null;
                    }
                }
            }
        } finally {
            lock.unlock();
        }
        if (blindView) {
            viewLost();
        }
    }

    /** Runs under {@link #lock}: tells listeners when the leader's node differs from the last one they heard. */
    private void report(Participant now) {
        String name = now == null ? null : now.nodeName();
        if (!Objects.equals(name, reportedNode)) {
            reportedNode = name;
            Optional<Participant> value = Optional.ofNullable(now);
            listeners.fire("leader change to " + value, l -> l.accept(value));
        }
    }

    // ---- events ----

    private void connectionChanged(CuratorFramework c, ConnectionState state) {
        // After a new session the watch is gone, and a read that failed while disconnected left none: read again.
        if (state == ConnectionState.CONNECTED || state == ConnectionState.RECONNECTED) {
            readChildren();
        }
    }

    private boolean isClosed() {
        lock.lock();
        try {
            return phase == Phase.CLOSED;
        } finally {
            lock.unlock();
        }
    }
}
