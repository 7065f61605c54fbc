package io.coord.core.internal;

import io.coord.core.CoordinationException;
import io.coord.core.LeaseState;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.CuratorEventType;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.KeeperException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything coord keeps per {@link CuratorFramework}: the one connection-state listener that drives every lease of
 * the client, the contenders still waiting, the per-path shared state, and the thread that completes user-facing
 * futures so that ZooKeeper's event thread never runs user code.
 */
final class ClientContext {
    private static final Logger log = LoggerFactory.getLogger(ClientContext.class);
    private static final ReentrantLock REGISTRY_LOCK = new ReentrantLock();
    // Weak both ways: the client keeps its context alive through the listeners it holds, and nothing else does.
    private static final Map<CuratorFramework, WeakReference<ClientContext>> REGISTRY = new WeakHashMap<>();
    private static final AtomicInteger THREAD_IDS = new AtomicInteger();

    private final CuratorFramework client;
    private final ThreadPoolExecutor callbacks;
    private final Set<LeaseImpl> leases = ConcurrentHashMap.newKeySet();
    private final Set<Attempt> attempts = ConcurrentHashMap.newKeySet();
    private final Map<String, SharedPath> paths = new ConcurrentHashMap<>();

    private final ReentrantLock stateLock = new ReentrantLock();
    // Guarded by stateLock.
    private boolean connected;
    private boolean closed;
    private long connectionEpoch;
    private List<Runnable> onConnected = new ArrayList<>();

    private ClientContext(CuratorFramework client) {
        this.client = client;
        this.connected = client.getZookeeperClient().isConnected();
        this.callbacks = new ThreadPoolExecutor(1, 1, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "coord-callbacks-" + THREAD_IDS.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        callbacks.allowCoreThreadTimeOut(true);
    }

    static ClientContext of(CuratorFramework client) {
        REGISTRY_LOCK.lock();
        try {
            WeakReference<ClientContext> ref = REGISTRY.get(client);
            ClientContext context = ref == null ? null : ref.get();
            if (context == null) {
                context = new ClientContext(client);
                client.getConnectionStateListenable().addListener(context::stateChanged);
                client.getCuratorListenable().addListener(context::curatorEvent);
                REGISTRY.put(client, new WeakReference<>(context));
            }
            return context;
        } finally {
            REGISTRY_LOCK.unlock();
        }
    }

    CuratorFramework client() {
        return client;
    }

    /** Runs user-facing completions and callbacks, never on ZooKeeper's event thread. */
    Executor callbacks() {
        return callbacks;
    }

    SharedPath join(String path) {
        return paths.compute(path, (p, shared) -> {
            SharedPath s = shared == null ? new SharedPath(this, p) : shared;
            s.users++;
            return s;
        });
    }

    void leave(SharedPath shared) {
        paths.computeIfPresent(shared.path(), (p, s) -> --s.users == 0 ? null : s);
    }

    void track(Attempt attempt) {
        attempts.add(attempt);
        boolean isClosed;
        stateLock.lock();
        try {
            isClosed = closed;
        } finally {
            stateLock.unlock();
        }
        if (isClosed) {
            attempt.fail(closedError(attempt.path()));
        }
    }

    void untrack(Attempt attempt) {
        attempts.remove(attempt);
    }

    /**
     * Registers a granted lease, HELD or SUSPECT as the connection stands. Returns null if the znode belongs to a
     * session other than the current one: such a node is dead or dying, and must never be reported as held.
     */
    LeaseImpl newLease(List<String> nodes, long fencingToken, long ownerSession) {
        stateLock.lock();
        try {
            if (closed || ownerSession != sessionId()) {
                return null;
            }
            LeaseImpl lease =
                    new LeaseImpl(this, nodes, fencingToken, connected ? LeaseState.HELD : LeaseState.SUSPECT);
            leases.add(lease);
            return lease;
        } finally {
            stateLock.unlock();
        }
    }

    void forget(LeaseImpl lease) {
        leases.remove(lease);
    }

    /** Runs {@code task} on the callback thread once the client is connected, at once if it is now. */
    void whenConnected(Runnable task) {
        stateLock.lock();
        try {
            if (closed) {
                return;
            }
            if (!connected) {
                onConnected.add(task);
                return;
            }
        } finally {
            stateLock.unlock();
        }
        callbacks.execute(task);
    }

    /** The current ZooKeeper session id, or 0 when there is no handle. */
    long sessionId() {
        try {
            return client.getZookeeperClient().getZooKeeper().getSessionId();
        } catch (Exception e) {
            return 0;
        }
    }

    /** Deletes a lease's znode, retried by Curator across connection loss until it succeeds or the session ends. */
    void deleteGuaranteed(String path) {
        try {
            client.delete()
                    .guaranteed()
                    .inBackground((c, event) -> logFailedDelete(path, event))
                    .forPath(path);
        } catch (Exception e) {
            // The client is closed: its session, and with it the ephemeral znode, is gone or going.
            log.debug("delete of {} left to the session's end", path, e);
        }
    }

    /** Best-effort delete of a znode we no longer want, such as the leftover of a replayed create. */
    void deleteQuietly(String path) {
        try {
            client.delete()
                    .quietly()
                    .inBackground((c, event) -> logFailedDelete(path, event))
                    .forPath(path);
        } catch (Exception e) {
            log.debug("delete of {} left to the session's end", path, e);
        }
    }

    static CoordinationException closedError(String path) {
        return new CoordinationException("the client was closed while waiting for " + path);
    }

    private static void logFailedDelete(String path, CuratorEvent event) {
        int rc = event.getResultCode();
        if (rc != KeeperException.Code.OK.intValue() && rc != KeeperException.Code.NONODE.intValue()) {
            log.debug("delete of {} answered {}", path, KeeperException.Code.get(rc));
        }
    }

    private void stateChanged(CuratorFramework c, ConnectionState state) {
        List<Runnable> ready = List.of();
        List<LeaseImpl> toConfirm = List.of();
        long epoch;
        stateLock.lock();
        try {
            epoch = ++connectionEpoch;
            switch (state) {
                case CONNECTED, RECONNECTED -> {
                    connected = true;
                    ready = onConnected;
                    onConnected = new ArrayList<>();
                    toConfirm = leases.stream()
                            .filter(l -> l.state() == LeaseState.SUSPECT)
                            .toList();
                }
                case SUSPENDED, READ_ONLY -> {
                    connected = false;
                    leases.forEach(l -> l.moveTo(LeaseState.SUSPECT));
                }
                case LOST -> {
                    connected = false;
                    List.copyOf(leases).forEach(this::loseAndDelete);
                }
            }
        } finally {
            stateLock.unlock();
        }
        if (state == ConnectionState.LOST) {
            // Waiters' znodes died with the session: each queues again on the next one.
            List.copyOf(attempts).forEach(Attempt::sessionLost);
        }
        toConfirm.forEach(l -> confirm(l, epoch));
        ready.forEach(callbacks::execute);
    }

    private void loseAndDelete(LeaseImpl lease) {
        if (lease.moveTo(LeaseState.LOST)) {
            // If the expiry was only declared by the client, the old session may linger on the server a little
            // longer; deleting its nodes now lets the next holder in without waiting for that.
            lease.nodes().forEach(this::deleteQuietly);
        }
    }

    /** After a reconnect, a SUSPECT lease is HELD again only if its znode still belongs to this session. */
    private void confirm(LeaseImpl lease, long epoch) {
        try {
            client.checkExists()
                    .inBackground((c, event) -> {
                        stateLock.lock();
                        try {
                            if (epoch != connectionEpoch) {
                                return; // the connection moved on; the next RECONNECTED confirms again
                            }
                            KeeperException.Code rc = KeeperException.Code.get(event.getResultCode());
                            if (rc == KeeperException.Code.OK) {
                                boolean ours = event.getStat() != null
                                        && event.getStat().getEphemeralOwner() == sessionId();
                                lease.moveTo(ours ? LeaseState.HELD : LeaseState.LOST);
                            } else if (rc == KeeperException.Code.NONODE) {
                                lease.moveTo(LeaseState.LOST);
                            }
                        } finally {
                            stateLock.unlock();
                        }
                    })
                    .forPath(lease.path());
        } catch (Exception e) {
            log.debug("could not confirm {}", lease.path(), e);
        }
    }

    private void curatorEvent(CuratorFramework c, CuratorEvent event) {
        if (event.getType() != CuratorEventType.CLOSING) {
            return;
        }
        stateLock.lock();
        try {
            closed = true;
            connected = false;
            onConnected = new ArrayList<>();
            // Closing the client closes its session, which deletes every ephemeral node: no lease survives it.
            List.copyOf(leases).forEach(l -> l.moveTo(LeaseState.LOST));
        } finally {
            stateLock.unlock();
        }
        List.copyOf(attempts).forEach(a -> a.fail(closedError(a.path())));
    }
}
