package io.coord.core.internal;

import io.coord.core.LeaseState;
import io.coord.core.SequenceNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leases one client holds, and what the connection's news does to them: SUSPECT on a drop, HELD again once a check
 * on the next connection finds their nodes still the session's, LOST with an ended session, and LOST once the
 * connection has taken no writes for the session's timeout, when the quorum may have given the session up.
 *
 * <p>It shares the context's state lock: a lease is registered, and moved by the connection's news, under it, so that
 * each of those is ordered with that news. Leases picked under it to be lost with their session move to LOST after
 * it, and so does one whose node someone else deleted; the deletes and checks that follow are sent outside it.
 */
final class SessionLeases {
    private static final Logger log = LoggerFactory.getLogger(SessionLeases.class);
    private static final long WRITABLE = -1;

    private final ClientContext context;
    private final ReentrantLock stateLock;
    private final Set<LeaseImpl> leases = ConcurrentHashMap.newKeySet();
    // The same leases by the path of each node they hold: a deletion heard finds its lease without a scan.
    private final Map<String, LeaseImpl> leasesByNode = new ConcurrentHashMap<>();
    // Guarded by stateLock: the count of the connection's events when the handle last lost a connection that takes
    // writes, or WRITABLE while it has one, and when that was. A read-only connection does not stop the count, as it
    // does not keep the session. Whether news of a connection came since, which the handle, down again, could not
    // confirm.
    private long writesLostAt = WRITABLE;
    private long writesLostNanos;
    private boolean writesMayHaveReturned;
    // Written under stateLock, read without it: how many of those events the leases have heard.
    private volatile long newsHeard;

    SessionLeases(ClientContext context, ReentrantLock stateLock) {
        this.context = context;
        this.stateLock = stateLock;
    }

    /**
     * The node at {@code path} was deleted, as a waiter of this client heard. If a lease of this client holds it,
     * somebody else deleted it (a release ends its lease first), and the waiter may be granted now: the lease is
     * LOST, whether or not it was granted on a view that would have told it.
     */
    void nodeDeleted(String path) {
        LeaseImpl lease = leasesByNode.get(path);
        if (lease != null) {
            lease.deletedElsewhere();
        }
    }

    /** Whether a lease of this client holds {@code node} under {@code parent}. */
    boolean holds(String parent, SequenceNode node) {
        return leasesByNode.containsKey(ZKPaths.makePath(parent, node.name()));
    }

    /** The names of the nodes under {@code parent} that leases of this client hold. */
    List<String> heldUnder(String parent) {
        return leasesByNode.keySet().stream()
                .filter(node -> ZKPaths.getPathAndNode(node).getPath().equals(parent))
                .map(ZKPaths::getNodeFromPath)
                .toList();
    }

    /**
     * Registers a granted lease, HELD or SUSPECT as the connection stands. Returns null if the znodes belong to a
     * session other than the current one: such nodes are dead or dying, and must never be reported as held.
     *
     * <p>The handle is asked too: Curator tells of a reconnection on a thread of its own, while ZooKeeper's event
     * thread goes on answering on the new connection, so a grant can be decided before the context hears of it. Such
     * a lease is held; SUSPECT would end a selector's term before it began. Asked under the lock, after any news of a
     * drop that came before: such news would have found the handle disconnected already.
     */
    LeaseImpl register(LeaseEngine engine, List<String> nodes, long fencingToken, long ownerSession) {
        // Read before the session is checked, so that a handle made since is found by the check. Curator counts a new
        // handle a moment before it puts it in place, so a grant in that moment records the new handle's index: its
        // lease then learns of the session's end from the news alone, as every lease did before the index was kept.
        long handle = context.handleIndex();
        stateLock.lock();
        try {
            if (context.closeSeen() || ownerSession != context.sessionId()) {
                return null;
            }
            // Our news of a connection is stale once the handle lost it: the event thread tells leases of that first.
            boolean held = context.handleConnected()
                    || (context.heardConnected()
                            && context.handleHasConnection()
                            && context.handleState() != ZooKeeper.States.CONNECTEDREADONLY);
            LeaseState state = held ? LeaseState.HELD : LeaseState.SUSPECT;
            LeaseImpl lease = new LeaseImpl(context, engine, nodes, fencingToken, ownerSession, handle, state);
            leases.add(lease);
            if (writesLostAt != WRITABLE) { // granted before a drop, registered after it: counted from the drop
                giveUpLater(writesLostAt, ownerSession);
            }
            nodes.forEach(node -> leasesByNode.put(node, lease));
            return lease;
        } finally {
            stateLock.unlock();
        }
    }

    void forget(LeaseImpl lease) {
        leases.remove(lease);
        lease.nodes().forEach(node -> leasesByNode.remove(node, lease));
    }

    /**
     * Under stateLock: the client connected on session {@code now}, a new one. A session never comes back: a lease of
     * an older one is lost, even if no LOST told of it (Curator tells of no second loss while it still reports the
     * first). Returns those that moved, whose nodes the caller deletes outside the lock.
     */
    List<LeaseImpl> endSessionsOtherThan(long now) {
        return lostWithSession(leases.stream().filter(l -> l.session() != now).toList());
    }

    /**
     * Under stateLock: Curator lost the session {@code tracked}, and the handle is on {@code current} now. LOST can
     * arrive after the next session is up: leases granted on that one are not lost. The handle may also still report
     * the ended session: the one tracked is lost all the same, unless this is late news, and that session goes on.
     */
    List<LeaseImpl> sessionLost(long current, long tracked, boolean lateLoss) {
        return lostWithSession(leases.stream()
                .filter(l -> l.session() != current || (l.session() == tracked && !lateLoss))
                .toList());
    }

    /** Under stateLock: the SUSPECT leases, for a check on the next connection. */
    List<LeaseImpl> suspects() {
        return leases.stream().filter(l -> l.current() == LeaseState.SUSPECT).toList();
    }

    /** Under stateLock: the connection dropped, or takes no writes. */
    void suspectAll() {
        leases.forEach(l -> l.moveTo(LeaseState.SUSPECT));
    }

    /** Under stateLock: the client closed, and its session with it. */
    void closeAll() {
        List.copyOf(leases).forEach(LeaseImpl::lostWithSession);
    }

    /**
     * Deletes what is left of leases lost without their holders letting go, outside the lock. If the expiry was only
     * declared by the client, the old session may linger on the server for a whole session timeout; deleting its
     * nodes, retried until the next connection carries it, lets the next holder in at once. What is left of a lease
     * found gone would hold its place (a semaphore's other permits) for as long as the session lives.
     */
    void deleteNodes(List<LeaseImpl> lost) {
        lost.forEach(l -> l.nodes().forEach(context.deletes()::deleteLost));
    }

    /** Moves each lease to LOST with its session; returns those that moved (not one a close released meanwhile). */
    private static List<LeaseImpl> lostWithSession(List<LeaseImpl> leases) {
        List<LeaseImpl> moved = new ArrayList<>(leases.size());
        for (LeaseImpl lease : leases) {
            if (lease.lostWithSession()) {
                moved.add(lease);
            }
        }
        return moved;
    }

    /**
     * After a reconnect, a SUSPECT lease is HELD again only if its znode still belongs to this session. The server the
     * client reconnected to may lag behind the leader, and still list a znode deleted meanwhile (a forced revocation):
     * one sync first, and the reads once it is answered, makes them as fresh as the leader. A sync refused on a live
     * connection asks again.
     */
    void confirmAll(List<LeaseImpl> leases, long epoch) {
        if (leases.isEmpty()) {
            return;
        }
        try {
            context.client()
                    .sync()
                    .inBackground((c, event) -> {
                        KeeperException.Code rc = KeeperException.Code.get(event.getResultCode());
                        if (rc == KeeperException.Code.OK) {
                            leases.forEach(lease -> confirm(lease, epoch));
                        } else if (rc != KeeperException.Code.CONNECTIONLOSS
                                && rc != KeeperException.Code.SESSIONEXPIRED) {
                            leases.forEach(lease -> confirmed(lease, epoch, NodeCheck.ASK_AGAIN));
                        } // else the next connection's news checks them again
                    })
                    .forPath(leases.get(0).path());
        } catch (Exception e) {
            log.debug("could not sync before confirming {}", leases.get(0).path(), e);
        }
    }

    /** What a check of one of a lease's nodes found. In order: the verdict on the lease is its worst node's. */
    private enum NodeCheck {
        OURS,
        ASK_AGAIN,
        GONE
    }

    /** Checks every node of the lease: one of a semaphore's permits may be gone while the first is still ours. */
    private void confirm(LeaseImpl lease, long epoch) {
        List<String> nodes = lease.nodes();
        AtomicInteger left = new AtomicInteger(nodes.size());
        AtomicReference<NodeCheck> worst = new AtomicReference<>(NodeCheck.OURS);
        for (String node : nodes) {
            try {
                context.client()
                        .checkExists()
                        .inBackground((c, event) -> {
                            NodeCheck found = check(lease, event);
                            worst.accumulateAndGet(found, (a, b) -> a.compareTo(b) >= 0 ? a : b);
                            if (left.decrementAndGet() == 0) {
                                confirmed(lease, epoch, worst.get());
                            }
                        })
                        .forPath(node);
            } catch (Exception e) {
                log.debug("could not confirm {}", node, e);
                return;
            }
        }
    }

    private NodeCheck check(LeaseImpl lease, CuratorEvent event) {
        KeeperException.Code rc = KeeperException.Code.get(event.getResultCode());
        if (rc == KeeperException.Code.OK) {
            if (event.getStat() == null || event.getStat().getEphemeralOwner() != lease.session()) {
                return NodeCheck.GONE;
            }
            // The node outlives its session for a while: ours only if the handle still is on that session. A handle
            // that cannot say (Curator handed its background error to this call instead) is asked again.
            long current = context.sessionId();
            return current == lease.session() ? NodeCheck.OURS : current == 0 ? NodeCheck.ASK_AGAIN : NodeCheck.GONE;
        }
        return rc == KeeperException.Code.NONODE ? NodeCheck.GONE : NodeCheck.ASK_AGAIN;
    }

    private void confirmed(LeaseImpl lease, long epoch, NodeCheck verdict) {
        boolean lost = false;
        boolean current;
        stateLock.lock();
        try {
            // The connection moved on if the news did, or is read-only now: the next connection confirms again. The
            // event thread delivers an answer before the news of the drop that follows it.
            current = epoch == context.leaseNewsEpoch() && (verdict != NodeCheck.OURS || context.handleConnected());
            if (current) {
                switch (verdict) {
                    case OURS -> lease.moveTo(LeaseState.HELD);
                    case GONE -> lost = lease.moveTo(LeaseState.LOST);
                    case ASK_AGAIN -> {}
                }
            }
        } finally {
            stateLock.unlock();
        }
        if (verdict == NodeCheck.OURS) {
            lease.nodeSeen(); // after the move, and outside the lock: what waits for it runs here, and reads the state
        }
        if (lost) {
            // What is left of it would hold its place (a semaphore's other permits) for as long as the session lives.
            lease.nodes().forEach(context.deletes()::deleteLost);
        } else if (current && verdict == NodeCheck.ASK_AGAIN) {
            // Once connected; a refusal while connected (a busy server's THROTTLEDOP, say) after a pause, not at once.
            Runnable again = () -> confirmAll(List.of(lease), epoch);
            if (context.isConnected()) {
                context.sendAgainLater(again);
            } else {
                context.whenConnected(again);
            }
        }
    }

    /**
     * The connection's news as ZooKeeper's event thread delivers it, which moves the leases: SUSPECT on a drop (and on a
     * read-only connection, which takes no writes), HELD again once a check on the next connection finds their nodes
     * still this session's, LOST with an ended session. Curator's listener thread brings the same news later, and
     * can lag a whole outage behind (an application's listener that blocks holds it up): a holder must not lead on,
     * or a selector's task run on, for want of it, nor wait for it to lead again. That thread moves leases only for a
     * client with no event listeners; the rest (waiters, views, the session tracked) still waits for it.
     */
    void hear(Watcher.Event.KeeperState state) {
        long news = context.eventNews();
        // Curator puts a new handle in place before its watchers hear the news that made it: on an expiry, and on a
        // change of the connection string, which tells of no expiry at all. An older handle's session is over. A
        // handle's news can also come late, behind the next handle's own, each on its own event thread: what the
        // current handle says of itself decides, not the news alone.
        long index = context.handleIndex();
        Handle now = Handle.read(context);
        List<LeaseImpl> ended = new ArrayList<>();
        List<LeaseImpl> toConfirm = List.of();
        stateLock.lock();
        try {
            leases.stream().filter(l -> l.handle() < index).forEach(ended::add);
            switch (state) {
                case Disconnected, ConnectedReadOnly -> {
                    leases.forEach(l -> l.moveTo(LeaseState.SUSPECT));
                    // The count starts again if the session may have been renewed since the last drop.
                    if (writesLostAt == WRITABLE || writesMayHaveReturned) {
                        countFrom(news);
                    }
                }
                case SyncConnected -> {
                    // A handle down again by now has its drop's news on the way, which counts from then on; news of an
                    // older handle, out of turn, leaves the count to go on.
                    if (now.writable()) {
                        writesLostAt = WRITABLE;
                        writesMayHaveReturned = false;
                    } else {
                        writesMayHaveReturned = writesLostAt != WRITABLE;
                    }
                    // A session never comes back: a lease of another one than the handle connected on is over. With
                    // the handle's session unknown, the check of each node tells (see check).
                    if (now.known() && now.session() != 0) {
                        leases.stream()
                                .filter(l -> l.session() != now.session())
                                .forEach(ended::add);
                    }
                    toConfirm = leases.stream()
                            .filter(l ->
                                    l.current() == LeaseState.SUSPECT && (!now.known() || l.session() == now.session()))
                            .toList();
                }
                // Every lease but one of the next session, if that one is up already (this news may come late).
                case Expired -> {
                    if (now.known()) {
                        leases.stream()
                                .filter(l -> now.session() == 0 || l.session() != now.session())
                                .forEach(ended::add);
                    }
                }
                default -> {}
            }
            newsHeard++;
        } finally {
            stateLock.unlock();
        }
        List<LeaseImpl> lost = lostWithSession(ended.stream().distinct().toList());
        deleteNodes(lost);
        confirmAll(toConfirm, news);
    }

    /**
     * What the client's current handle says of itself. Read outside stateLock: reading it can make Curator replace it
     * (a changed connection string), which waits for the old handle's threads. Not known while Curator holds a
     * background error, which the read takes.
     */
    private record Handle(boolean known, long session, boolean writable) {
        static Handle read(ClientContext context) {
            // Curator hands out one background error per read: the next read, if there is no other, has the handle.
            ZooKeeper handle = context.handle();
            if (handle == null) {
                handle = context.handle();
            }
            return handle == null
                    ? new Handle(false, 0, false)
                    : new Handle(true, handle.getSessionId(), handle.getState() == ZooKeeper.States.CONNECTED);
        }
    }

    /** Under stateLock: the connection stopped taking writes at the news numbered {@code drop}; counted from now. */
    private void countFrom(long drop) {
        writesLostAt = drop;
        writesLostNanos = System.nanoTime();
        writesMayHaveReturned = false;
        leases.stream().map(LeaseImpl::session).distinct().forEach(s -> giveUpLater(drop, s));
    }

    /**
     * Under stateLock, when the connection stops taking writes: once that has lasted the session's negotiated timeout
     * from the drop, the quorum may have given the session up, and its leases are lost. A read-only server keeps no
     * session for the quorum. Curator's own check of a drop (it injects the session's expiry) runs on its listener
     * thread, waits with it, and stops counting on a read-only connection.
     */
    private void giveUpLater(long drop, long onSession) {
        long timeoutMillis = context.client().getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
        if (timeoutMillis > 0) {
            Duration left = Duration.ofMillis(timeoutMillis).minusNanos(System.nanoTime() - writesLostNanos);
            Executors.later(() -> givenUp(drop, onSession), left.isNegative() ? Duration.ZERO : left);
        }
    }

    /**
     * Ends the leases of {@code onSession} if the connection has taken no writes since the drop. If the handle takes
     * writes on that session, its news is on its way (a slow callback holds its event thread up), or came out of turn
     * behind an older handle's drop: the count stops, and the leases that drop made SUSPECT are checked. The handle is
     * read again while the leases hear news meanwhile: a drop heard then, which found the count running and left it,
     * starts it again from now if a read before it found the handle taking writes on that session.
     */
    private void givenUp(long drop, long onSession) {
        boolean seenBack = false;
        List<LeaseImpl> lost = List.of();
        List<LeaseImpl> toConfirm = List.of();
        long news;
        while (true) {
            long heard = newsHeard;
            Handle now = Handle.read(context);
            boolean back = now.writable() && now.session() == onSession;
            seenBack |= back;
            stateLock.lock();
            try {
                if (context.closeSeen() || writesLostAt != drop) {
                    return;
                }
                if (newsHeard != heard) {
                    continue;
                }
                news = context.eventNews();
                if (back) {
                    writesLostAt = WRITABLE;
                    writesMayHaveReturned = false;
                    toConfirm = leases.stream()
                            .filter(l -> l.current() == LeaseState.SUSPECT && l.session() == onSession)
                            .toList();
                } else if (seenBack) {
                    countFrom(news);
                } else {
                    lost = lostWithSession(leases.stream()
                            .filter(l -> l.session() == onSession)
                            .toList());
                }
                break;
            } finally {
                stateLock.unlock();
            }
        }
        if (!lost.isEmpty()) {
            log.info(
                    "the connection took no writes for the session's timeout: {} of session 0x{} lost",
                    lost,
                    Long.toHexString(onSession));
        }
        deleteNodes(lost);
        confirmAll(toConfirm, news);
    }
}
