package io.coord.core.internal;

import io.coord.core.CoordinationException;
import io.coord.core.LeaseState;
import io.coord.core.SequenceNode;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.apache.curator.CuratorZookeeperClient;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.CuratorEventType;
import org.apache.curator.framework.imps.CuratorFrameworkBase;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything coord keeps per {@link CuratorFramework}: the one connection-state listener that drives every lease of
 * the client, the session it is on, the contenders and requests still waiting, and the per-path shared state. Every
 * module reaches the client through this registry, namespace facades included.
 *
 * <p>A context belongs to a client's connection and namespace, not to one {@code CuratorFramework} object: every
 * facade of one namespace shares it. Curator makes a new facade object for a namespace left unused for five
 * minutes, and two contexts would keep two views of a path on one connection, which share the server's one watch:
 * the first to drop it would take the other's. Two namespaces can still name one server path ({@code /app/locks/a}
 * at the root, {@code /locks/a} under {@code app}): there, a view or a queue whose watch the other's drop takes
 * hears of it ({@code PersistentWatchRemoved}) and adds its watch again.
 */
public final class ClientContext {
    private static final Duration REFUSED_REMOVAL_PAUSE = Duration.ofMillis(100);
    private static final Logger log = LoggerFactory.getLogger(ClientContext.class);
    private static final Duration THROTTLED_PAUSE = Duration.ofMillis(250);
    // Connections that broke under a request of ZooKeeper 3.6, before the server carried out one: an older server.
    private static final int LOSSES_OF_AN_OLDER_SERVER = 3;
    // What newerRequestSent gives while the client is not connected; never a connection epoch.
    private static final long NO_CONNECTION = -1;
    // Answers that only a server that knows a 3.6 request gives: it carried it out, or turned it down on its merits.
    private static final Set<KeeperException.Code> SERVERS_OWN_ANSWERS = Set.of(
            KeeperException.Code.OK,
            KeeperException.Code.THROTTLEDOP,
            KeeperException.Code.MARSHALLINGERROR,
            KeeperException.Code.NOAUTH,
            KeeperException.Code.NONODE,
            KeeperException.Code.BADARGUMENTS);
    // Sequence nodes by their sequence, then any other names by name.
    static final Comparator<String> CREATION_ORDER = Comparator.comparing(
                    (String name) -> SequenceNode.parse(name).orElse(null),
                    Comparator.nullsLast(Comparator.naturalOrder()))
            .thenComparing(Comparator.naturalOrder());
    private static final ReentrantLock REGISTRY_LOCK = new ReentrantLock();
    // Connection -> namespace ("" for none) -> context. Weak both ways: the client keeps its context alive through the
    // listeners it holds, and nothing else does.
    private static final Map<CuratorZookeeperClient, Map<String, WeakReference<ClientContext>>> REGISTRY =
            new WeakHashMap<>();

    private final CuratorFramework client;
    private final Executor internal = Executors.internal();
    private final Set<LeaseImpl> leases = ConcurrentHashMap.newKeySet();
    // The same leases by the path of each node they hold: a deletion heard finds its lease without a scan.
    private final Map<String, LeaseImpl> leasesByNode = new ConcurrentHashMap<>();
    private final Set<Attempt> attempts = ConcurrentHashMap.newKeySet();
    // The ids (_c_<id>-) of creates withdrawn while in flight, until what they made is deleted (see
    // #withdrawnInFlight).
    private final Set<String> withdrawnIds = ConcurrentHashMap.newKeySet();
    // The names of our znodes whose delete is sent and not yet answered for good, by parent (see #isLeaving).
    private final Map<String, Set<String>> deleting = new ConcurrentHashMap<>();
    // Full paths among them of leases that ended without their holder letting go (see deleteLost).
    private final Set<String> lostNodes = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closeNoticed = new AtomicBoolean();
    // Guarded by stateLock: what connected() hands out until the next connection.
    private CompletableFuture<Void> nextConnection;
    private final Map<String, SharedPath> paths = new ConcurrentHashMap<>();
    private final Map<String, PathView> views = new ConcurrentHashMap<>();
    private final Set<String> plainWatchPaths = ConcurrentHashMap.newKeySet();
    private volatile ViewSettings viewSettings = ViewSettings.fromSystemProperties();
    // Written under stateLock (see answeredAsOlderServer): what the server's answers to 3.6 requests tell of it.
    private volatile boolean olderServer; // it answered one UNIMPLEMENTED, or broke the connection under each
    private volatile boolean olderServerGuessed; // olderServer from connections lost, not from an answer
    private volatile boolean newerServer; // it carried one out
    // Guarded by stateLock: the connections that broke under a 3.6 request, and the last one counted.
    private int newerRequestLosses;
    private long newerRequestLostOn = NO_CONNECTION;
    // Guarded by stateLock: when the client last connected.
    private long connectedAtNanos;
    private volatile boolean persistentWatchesStay; // it cannot remove a persistent watch on its own (3.6 to 3.8)
    private volatile boolean persistentWatchesRefused; // its watch manager cannot hold persistent watches at all
    // One watcher object for every node watch of this client. The handle keeps one registration per watcher and
    // path, so waiters that come and go on one node never pile up registrations, even across SharedPath lifetimes.
    private final Watcher nodeWatcher = this::nodeWatchFired;
    private final Set<CompletableFuture<?>> requests = ConcurrentHashMap.newKeySet();
    private final CopyOnWriteArrayList<SessionListener> sessionListeners = new CopyOnWriteArrayList<>();
    private final Map<String, Object> moduleState = new ConcurrentHashMap<>();

    private static final long CLOSE_LOOK_MILLIS = 250;
    // How long a write refused by a read-only server waits before it looks for a connection that takes writes: at
    // first, and at most (doubling in between while the handle stays read-only).
    private static final Duration READ_ONLY_PAUSE = Duration.ofMillis(250);
    private static final Duration LONGEST_READ_ONLY_PAUSE = Duration.ofMillis(4_000);

    private final ReentrantLock stateLock = new ReentrantLock();
    // Written under stateLock; closed is also read without it.
    private boolean connected;
    private volatile boolean closed;
    private long connectionEpoch;
    // Connection events as ZooKeeper's event thread delivers them, in order with the answers to requests.
    private final AtomicLong connectionEvents = new AtomicLong();
    // Guarded by stateLock: the count of those events when the handle last lost a connection that takes writes, or
    // WRITABLE while it has one, and when that was. A read-only connection does not stop the count, as it does not
    // keep the session. Whether news of a connection came since, which the handle, down again, could not confirm.
    private long writesLostAt = WRITABLE;
    private long writesLostNanos;
    private boolean writesMayHaveReturned;
    // Written under stateLock, read without it: how many of those events the leases have heard.
    private volatile long newsHeard;
    private static final long WRITABLE = -1;
    private List<Runnable> onConnected = new ArrayList<>();
    // The session the client was last connected on, 0 if none yet or if it ended: a reconnection on the same one
    // keeps watches and ephemeral nodes, any other is a new session.
    private long session;
    // A client with no CuratorListenable hears of its close only through watches and requests: while it has work
    // waiting for a connection, and so neither, the clock looks instead. Its leases follow Curator's listener thread,
    // having no news from the event thread. Guarded by stateLock.
    private boolean facade;
    private boolean lookingForClose;

    /** What a connection change means for the state a module keeps about the server. */
    public enum SessionEvent {
        /** The connection is down; the session, its watches and its ephemeral nodes may still live. */
        SUSPENDED,
        /** Connected again on the same session: watches and ephemeral nodes survived. */
        RECONNECTED,
        /** The session ended, or the client declared it lost: its watches and ephemeral nodes are gone or going. */
        SESSION_ENDED,
        /** Connected on a session other than the last one: nothing of the old session's survives. */
        NEW_SESSION,
        /** The client was closed. */
        CLOSED
    }

    /** Hears every {@link SessionEvent} in order, on Curator's listener thread; must not block. */
    @FunctionalInterface
    public interface SessionListener {
        void sessionChanged(SessionEvent event);
    }

    private ClientContext(CuratorFramework client) {
        this.client = client;
    }

    /**
     * The context of {@code client}'s connection and namespace, made and registered on first use: a namespace facade
     * gets its own, shared by every facade object of that namespace.
     *
     * <p>The context sends its requests through the root client itself, or a facade of the root for another
     * namespace: never through the object it was asked for, which may be a facade that removes its watches when its
     * user is done with them ({@code newWatcherRemoveCuratorFramework()}), or one with no means to hear the client's
     * close. It listens to the root.
     */
    public static ClientContext of(CuratorFramework client) {
        String namespace = Objects.requireNonNullElse(client.getNamespace(), "");
        CuratorFramework root = client instanceof CuratorFrameworkBase base ? base.client() : client;
        REGISTRY_LOCK.lock();
        try {
            Map<String, WeakReference<ClientContext>> byNamespace =
                    REGISTRY.computeIfAbsent(client.getZookeeperClient(), k -> new HashMap<>());
            WeakReference<ClientContext> ref = byNamespace.get(namespace);
            ClientContext context = ref == null ? null : ref.get();
            if (context == null) {
                boolean rootNamespace = namespace.equals(Objects.requireNonNullElse(root.getNamespace(), ""));
                context = new ClientContext(
                        rootNamespace ? root : root.usingNamespace(namespace.isEmpty() ? null : namespace));
                context.listen(root);
                byNamespace.put(namespace, new WeakReference<>(context));
            }
            return context;
        } finally {
            REGISTRY_LOCK.unlock();
        }
    }

    private void listen(CuratorFramework root) {
        root.getConnectionStateListenable().addListener(new ConnectionStateListener() {
            @Override
            public void stateChanged(CuratorFramework client, ConnectionState state) {
                ClientContext.this.stateChanged(client, state);
            }

            /**
             * Every change, even behind a circuit-breaking listener manager: one that damps a flapping connection
             * would hold back the loss of a session, and with it the end of its holds and the requeue of its waiters.
             */
            @Override
            public boolean doNotProxy() {
                return true;
            }
        });
        try {
            root.getCuratorListenable().addListener(this::curatorEvent);
        } catch (UnsupportedOperationException e) {
            // A client of another make that has no CuratorListenable. Its close is seen instead by the watches and
            // requests of waiters, by leases the next time their state is read, and by the clock while work waits
            // for a connection (see whenConnected).
            stateLock.lock();
            try {
                facade = true;
            } finally {
                stateLock.unlock();
            }
        }
        // Read after registering: a CONNECTED delivered in between is then seen one way or the other.
        stateLock.lock();
        try {
            if (handleConnected()) {
                connected = true;
                // The session we start on, so that the first RECONNECTED on it is not taken for a new one.
                session = session == 0 ? sessionId() : session;
            }
        } finally {
            stateLock.unlock();
        }
    }

    public CuratorFramework client() {
        return client;
    }

    /** Runs user-facing completions and callbacks, never on ZooKeeper's event thread. */
    public Executor callbacks() {
        return Executors.USER;
    }

    SharedPath join(String path) {
        return paths.compute(path, (p, shared) -> {
            SharedPath s = shared == null ? new SharedPath(this, p) : shared;
            s.users++;
            return s;
        });
    }

    /** How this client uses views; from the system properties unless {@link #configureViews} changed it. */
    public ViewSettings viewSettings() {
        return viewSettings;
    }

    /**
     * Changes how this client uses views from now on: with {@code enabled} false, paths queue with predecessor
     * watches only. Acquisitions already under way keep the engine they started with.
     */
    public void configureViews(ViewSettings settings) {
        viewSettings = Objects.requireNonNull(settings, "settings");
    }

    /** Whether new acquisitions may use a view: enabled, and the server can add persistent watches. */
    public boolean usesViews() {
        return viewSettings.enabled() && !olderServer && !persistentWatchesStay && !persistentWatchesRefused;
    }

    /**
     * The server could not add a persistent watch, though it knows the request: ZooKeeper's optional watch manager
     * {@code WatchManagerOptimized} ({@code zookeeper.watchManagerName}) holds none, and the server answers such an
     * add MARSHALLINGERROR. From now on this client uses no view, rather than try one, and fail, per path.
     */
    void persistentWatchesRefused() {
        if (!persistentWatchesRefused) {
            persistentWatchesRefused = true;
            log.info("ZooKeeper could not add a persistent watch (MARSHALLINGERROR: a server whose watch manager holds"
                    + " none, such as WatchManagerOptimized): coord uses predecessor watches on this client");
        }
    }

    /**
     * Marks {@code path} as followed with plain watches (an observer without a view), before any is set: from then on
     * this client takes no view of it, and a view it has there drops its watch, its members going on without it. A
     * server before 3.9 keeps one watch per connection and path (ZOOKEEPER-4466), so a view's persistent watch and
     * plain watches there would end each other; and whether a plain watch is still on the server once its last
     * follower left depends on reads the client cannot see through. A client that takes no views marks nothing.
     */
    public void followsWithPlainWatches(String path) {
        if (viewSettings.enabled()) {
            plainWatchPaths.add(path);
        }
        PathView view = views.get(path);
        if (view != null) {
            view.followedWithPlainWatches();
        }
    }

    /** Whether {@link #followsWithPlainWatches} was said of {@code path}. */
    boolean followedWithPlainWatches(String path) {
        return plainWatchPaths.contains(path);
    }

    /** Whether the server refused to remove a persistent watch on its own (3.6 to 3.8): set ones stay. */
    public boolean persistentWatchesStay() {
        return persistentWatchesStay;
    }

    /** Whether the server is taken for one before 3.6 (see {@link #answeredAsOlderServer}). */
    public boolean hasOlderServer() {
        return olderServer;
    }

    /** Whether the server said it is older than 3.6 (it answered UNIMPLEMENTED), rather than only seemed so. */
    public boolean saidItIsOlder() {
        return olderServer && !olderServerGuessed;
    }

    /**
     * The connection a request of ZooKeeper 3.6 (addWatch, a read-only multi) sent now goes out on, for {@link
     * #answeredAsOlderServer}; none while the client is not connected, nor once the server is known to be newer, when
     * nothing counts losses any more (every queue read and view add asks: no lock then).
     */
    public long newerRequestSent() {
        if (newerServer) {
            return NO_CONNECTION;
        }
        stateLock.lock();
        try {
            return connected ? connectionEpoch : NO_CONNECTION;
        } finally {
            stateLock.unlock();
        }
    }

    /**
     * What the answer {@code rc} to a request of ZooKeeper 3.6 sent on connection {@code sent} ({@link
     * #newerRequestSent}) tells of the server: true if it is taken for one before 3.6. From then on this client uses
     * no view, and reads nodes one by one where it would read them in one multi.
     *
     * <p>Such a server answers the request UNIMPLEMENTED at once, ahead of the client's requests still in its pipeline,
     * and drops the connection. Behind a write, the client takes that answer out of turn for a broken connection, and
     * the request comes back lost. So until the server has carried out one, the third connection that was up when
     * such a request went out and broke under it marks an older server too. A later answer from the server itself
     * takes that guess back.
     */
    public boolean answeredAsOlderServer(KeeperException.Code rc, long sent) {
        if (newerServer && rc != KeeperException.Code.UNIMPLEMENTED) {
            return olderServer; // known, and no guess left to take back: nothing to count, nor to lock for
        }
        boolean older;
        boolean wasOlder;
        boolean guessTakenBack = false;
        stateLock.lock();
        try {
            wasOlder = olderServer;
            if (rc == KeeperException.Code.UNIMPLEMENTED) {
                olderServerGuessed = false;
                olderServer = true;
            } else if (rc == KeeperException.Code.CONNECTIONLOSS) {
                if (!olderServer && !newerServer && brokeUnderNewerRequest(sent)) {
                    olderServerGuessed = true;
                    olderServer = true;
                }
            } else if (rc != null && SERVERS_OWN_ANSWERS.contains(rc)) {
                newerServer = true;
                guessTakenBack = olderServerGuessed;
                olderServer &= !olderServerGuessed;
                olderServerGuessed = false;
            } // else no news of the server: of the session, or from the client itself
            older = olderServer;
        } finally {
            stateLock.unlock();
        }
        if (older && !wasOlder) {
            log.info("ZooKeeper answered a 3.6 request UNIMPLEMENTED, or broke the connection under each (a server"
                    + " before 3.6): coord uses predecessor watches and reads nodes one by one on this client");
        } else if (guessTakenBack) {
            log.info("ZooKeeper carried out a 3.6 request after all: coord uses views again on this client");
        }
        return older;
    }

    /** Under stateLock: counts connection {@code sent} as broken under a 3.6 request, once; true once enough did. */
    private boolean brokeUnderNewerRequest(long sent) {
        if (sent == NO_CONNECTION || sent <= newerRequestLostOn) {
            return false; // sent while not connected, or on a connection counted already
        }
        newerRequestLostOn = sent;
        return ++newerRequestLosses >= LOSSES_OF_AN_OLDER_SERVER;
    }

    /**
     * Sends again, as {@link #sendAgain} does, a request of ZooKeeper 3.6 that failed with {@code rc}, a passing
     * failure; but until the server has carried out one, a lost one goes only once a connection has been up for a
     * pause. Sent as a connection comes up, it would follow the writes Curator and coord send again then, and a server
     * before 3.6 would answer it ahead of them and break the connection again, each time (see {@link
     * #answeredAsOlderServer}). The first pause lets news of the drop come: a loss is told before it.
     */
    public void sendNewerAgain(KeeperException.Code rc, Runnable send) {
        if (newerServer || rc != KeeperException.Code.CONNECTIONLOSS) {
            sendAgain(rc, send);
        } else {
            throttledPause().thenRun(() -> sendOnSettledConnection(send));
        }
    }

    private void sendOnSettledConnection(Runnable send) {
        whenConnected(() -> {
            Duration up;
            stateLock.lock();
            try {
                up = Duration.ofNanos(System.nanoTime() - connectedAtNanos);
            } finally {
                stateLock.unlock();
            }
            if (up.compareTo(THROTTLED_PAUSE) >= 0) {
                send.run();
            } else {
                track(Executors.after(THROTTLED_PAUSE.minus(up))).thenRun(() -> sendOnSettledConnection(send));
            }
        });
    }

    /** The view of {@code path}, retained once: the caller releases it when done. */
    PathView retainView(String path) {
        return views.compute(path, (p, view) -> view != null && view.retain() ? view : fresh(p));
    }

    /**
     * The view of {@code path}, retained once, if the client has one that can be used; else null. Makes no view: for a
     * client that takes no new ones.
     */
    PathView retainExistingView(String path) {
        PathView[] found = new PathView[1];
        views.computeIfPresent(path, (p, view) -> {
            if (view.retainIfUsable()) {
                found[0] = view;
            }
            return view;
        });
        return found[0];
    }

    private PathView fresh(String path) {
        PathView view = new PathView(this, path);
        view.retain();
        return view;
    }

    /** The view went unused past its linger, without a watch: later users get a new one. */
    void retire(PathView view) {
        views.remove(view.path(), view);
    }

    Watcher nodeWatcher() {
        return nodeWatcher;
    }

    private void nodeWatchFired(WatchedEvent event) {
        if (event.getType() == Watcher.Event.EventType.None || event.getPath() == null) {
            // Connection news reaches every waiter through the state listener, except the close of a client with no
            // CuratorListenable, which only watches see. Curator hands it to this watcher once per watched node, so
            // it is acted on here, once, and not passed on: a connection blip under thousands of waiters would
            // otherwise cost the event thread one call per waiter for each watched node.
            if (event.getState() == Watcher.Event.KeeperState.Closed) {
                isClosed(); // a closed client fails every attempt and loses every lease
            }
            return;
        }
        if (event.getType() == Watcher.Event.EventType.NodeDeleted) {
            nodeDeleted(event.getPath()); // first: a waiter this deletion grants must find the hold already lost
        }
        SharedPath shared = paths.get(ZKPaths.getPathAndNode(event.getPath()).getPath());
        if (shared != null) {
            shared.watchFired(event); // otherwise nobody waits on that path any more
        }
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

    void leave(SharedPath shared) {
        paths.computeIfPresent(shared.path(), (p, s) -> --s.users == 0 ? null : s);
    }

    /**
     * The one object kept under {@code key} for this client, made by {@code factory} on first use and kept as long as
     * the context. A module prefixes its keys with its package, so that one key always holds one type. The factory
     * runs inside the registry's update: it must do no I/O and must not call this method.
     */
    @SuppressWarnings("unchecked") // one key, one owning module, one type: see above
    public <T> T shared(String key, Function<String, ? extends T> factory) {
        return (T) moduleState.computeIfAbsent(key, factory);
    }

    void track(Attempt attempt) {
        attempts.add(attempt);
        if (isClosed()) {
            attempt.fail(closedError(attempt.path()));
        }
    }

    void untrack(Attempt attempt) {
        attempts.remove(attempt);
    }

    public void addSessionListener(SessionListener listener) {
        sessionListeners.add(listener);
    }

    /**
     * Runs {@code send} after a short pause, unless the client closes first: for a request that a server's request
     * throttling refused (THROTTLEDOP), which nothing else would send again.
     */
    public void sendAgainLater(Runnable send) {
        throttledPause().thenRun(send);
    }

    /**
     * Runs {@code send} when a request answered {@code rc}, a {@link ResultCodes#isPassing passing} failure, is worth
     * sending again: after a pause if a busy server refused it, else once connected.
     */
    public void sendAgain(KeeperException.Code rc, Runnable send) {
        if (rc == KeeperException.Code.THROTTLEDOP) {
            sendAgainLater(send);
        } else {
            whenConnected(send);
        }
    }

    /** The pause before a request a busy server refused is sent again; it fails if the client closes first. */
    public CompletableFuture<Void> throttledPause() {
        return track(Executors.after(THROTTLED_PAUSE));
    }

    /** Registers a pending answer, so that closing the client fails it rather than leaving its caller waiting. */
    public <T> CompletableFuture<T> track(CompletableFuture<T> answer) {
        requests.add(answer);
        answer.whenComplete((value, error) -> requests.remove(answer));
        if (isClosed()) {
            answer.completeExceptionally(closedError("the request"));
        }
        return answer;
    }

    /**
     * Completes once the client is connected, at once if it is now; fails if the client is closed first. Every
     * caller of one outage shares one future, so that timed waits that give up leave nothing behind them.
     */
    public CompletableFuture<Void> connected() {
        CompletableFuture<Void> ready;
        boolean fresh;
        stateLock.lock();
        try {
            ready = nextConnection;
            fresh = ready == null || ready.isDone();
            if (fresh) {
                ready = new CompletableFuture<>();
                nextConnection = ready;
            }
        } finally {
            stateLock.unlock();
        }
        if (fresh) {
            CompletableFuture<Void> made = track(ready);
            whenConnected(() -> made.complete(null));
        }
        return ready;
    }

    /**
     * Waits for the connection until the deadline; false if it passed first.
     *
     * @throws CoordinationException if the client is closed
     */
    public boolean awaitConnected(Deadline deadline) throws InterruptedException {
        if (isConnected()) {
            return true;
        }
        try {
            deadline.await(connected());
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            throw closedError("the connection");
        }
    }

    /**
     * Whether the client's {@code ConnectionStateErrorPolicy} lets a hold survive SUSPENDED: Curator's
     * {@code SessionConnectionStateErrorPolicy} ends holds only when the session is lost.
     */
    public boolean holdsThroughSuspension() {
        return !client.getConnectionStateErrorPolicy().isErrorState(ConnectionState.SUSPENDED);
    }

    /**
     * True once the client is closed; also notices the close of a client with no CuratorListenable to tell it. What a
     * close sets off (failing attempts, telling listeners) then runs on another thread: the caller may hold a lock of
     * its own (an attempt's, a view's) that those take.
     */
    public boolean isClosed() {
        if (closed) {
            return true;
        }
        if (client.getState() != CuratorFrameworkState.STOPPED) {
            return false; // the common case, on every Lease.state(): two volatile reads, no lock
        }
        if (closeNoticed.compareAndSet(false, true)) {
            Executors.USER.execute(this::closed); // idempotent, should the client's own news come first
        }
        return true;
    }

    /**
     * Counts the connection news heard so far. A request answered in the epoch it was sent in was sent once: Curator
     * sends one again only once the drop that lost it has been delivered, and ZooKeeper's event thread delivers that
     * drop ahead of any answer to the second send. Curator's listener thread, which the rest of the context hears
     * from, can lag a whole reconnection behind (an application's listener that blocks holds it up): its news only
     * adds to the count, for a client that has no event listeners to tell it first.
     */
    public long connectionEpoch() {
        stateLock.lock();
        try {
            return connectionEvents.get() + connectionEpoch;
        } finally {
            stateLock.unlock();
        }
    }

    /**
     * Whether the client is connected now. The handle is asked too: a context made before its client connected hears
     * of the connection a moment after the client reports it, and a look taken at once must not be refused for that.
     * A read-only connection does not count, here or in the context's own state: it takes no writes.
     */
    public boolean isConnected() {
        stateLock.lock();
        try {
            if (closed) {
                return false;
            }
            if (connected) {
                return true;
            }
        } finally {
            stateLock.unlock();
        }
        return handleConnected();
    }

    /**
     * Which of the client's handles is current: Curator makes a new one, on a new session, after an expiry. Read
     * without side effects, unlike the handle itself, and kept current on ZooKeeper's event thread, so it moves on
     * even while Curator's listener thread, which brings this context its news, is held up.
     */
    long handleIndex() {
        return client.getZookeeperClient().getInstanceIndex();
    }

    /**
     * Curator's own flag, kept on ZooKeeper's event thread: false from the moment the connection drops, true on a
     * read-only connection too.
     */
    boolean handleHasConnection() {
        return client.getZookeeperClient().isConnected();
    }

    /** Whether the client's handle has a connection that takes writes. */
    private boolean handleConnected() {
        return handleHasConnection() && handleState() == ZooKeeper.States.CONNECTED;
    }

    /** What the handle says of its connection; null with no handle, or while Curator holds a background error. */
    private ZooKeeper.States handleState() {
        ZooKeeper handle = handle();
        return handle == null ? null : handle.getState();
    }

    /** The client's handle; null with none, or while Curator holds a background error. */
    private ZooKeeper handle() {
        try {
            return client.getZookeeperClient().getZooKeeper();
        } catch (Exception e) {
            return null;
        }
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
    LeaseImpl newLease(LeaseEngine engine, List<String> nodes, long fencingToken, long ownerSession) {
        // Read before the session is checked, so that a handle made since is found by the check. Curator counts a new
        // handle a moment before it puts it in place, so a grant in that moment records the new handle's index: its
        // lease then learns of the session's end from the news alone, as every lease did before the index was kept.
        long handle = handleIndex();
        stateLock.lock();
        try {
            if (closed || ownerSession != sessionId()) {
                return null;
            }
            // Our news of a connection is stale once the handle lost it: the event thread tells leases of that first.
            boolean held = handleConnected()
                    || (connected && handleHasConnection() && handleState() != ZooKeeper.States.CONNECTEDREADONLY);
            LeaseState state = held ? LeaseState.HELD : LeaseState.SUSPECT;
            LeaseImpl lease = new LeaseImpl(this, engine, nodes, fencingToken, ownerSession, handle, state);
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
     * Completes once a connection takes writes again, after a request was refused NOTREADONLY; fails if the client is
     * closed first. A read-only connection counts as none, but its news may come after that answer, or be held up
     * behind a listener of the application: so it waits a moment first, and longer each time while the handle itself
     * says it is read-only, rather than send the write to the same server again and again.
     */
    public CompletableFuture<Void> writable() {
        return writable(READ_ONLY_PAUSE);
    }

    private CompletableFuture<Void> writable(Duration pause) {
        return track(Executors.after(pause))
                .thenCompose(ignored -> handleState() == ZooKeeper.States.CONNECTEDREADONLY
                        ? writable(pause.compareTo(LONGEST_READ_ONLY_PAUSE) >= 0 ? pause : pause.multipliedBy(2))
                        : connected());
    }

    /** Runs {@code task} on coord's retry thread once the client is connected, at once if it is now. */
    public void whenConnected(Runnable task) {
        stateLock.lock();
        try {
            if (closed) {
                return;
            }
            if (!connected) {
                onConnected.add(task);
                lookForCloseLater();
                return;
            }
        } finally {
            stateLock.unlock();
        }
        internal.execute(task);
    }

    /** Under stateLock: on a facade with work waiting for a connection, looks for the client's close in a while. */
    private void lookForCloseLater() {
        if (facade && !lookingForClose) {
            lookingForClose = true;
            Executors.TIMER.schedule(this::lookForClose, CLOSE_LOOK_MILLIS, TimeUnit.MILLISECONDS);
        }
    }

    private void lookForClose() {
        if (isClosed()) {
            return; // closed() failed what waited
        }
        stateLock.lock();
        try {
            lookingForClose = false;
            if (!connected && !onConnected.isEmpty()) {
                lookForCloseLater();
            }
        } finally {
            stateLock.unlock();
        }
    }

    /** The current ZooKeeper session id, or 0 when there is no handle. */
    public long sessionId() {
        ZooKeeper handle = handle();
        return handle == null ? 0 : handle.getSessionId();
    }

    /**
     * Whether the end of a session that a handle's event thread tells of now is an older handle's: the client's current
     * handle is alive, on a session this context has heard connect. Curator replaces a handle, and connects the next,
     * without waiting for the old one's event thread, which a watcher may hold up, to deliver its close.
     */
    public boolean endIsOfAnOlderHandle() {
        ZooKeeper handle = handle();
        if (handle == null || !handle.getState().isAlive()) {
            return false;
        }
        long current = handle.getSessionId();
        stateLock.lock();
        try {
            return current != 0 && session == current;
        } finally {
            stateLock.unlock();
        }
    }

    /**
     * Deletes a znode of ours until it is gone or the client closes. Curator retries it across connection loss; once
     * its retries run out it sends it once more, on a later session too, but drops it if a read-only server refuses
     * that (canBeReadOnly), and a lock node left so would hold up every waiter. So coord sends it again itself after an
     * answer in doubt, once connected, after a refusal of a read-only server, once a connection takes writes, and after
     * a busy server's refusal (THROTTLEDOP, which Curator does not retry), after a pause. Every
     * name coord deletes is its own, so a delete that comes late touches nobody else's node. The future completes when
     * the first answer comes, whatever it says, and at once if the client is closed.
     */
    public CompletableFuture<Void> deleteGuaranteed(String path) {
        CompletableFuture<Void> answered = new CompletableFuture<>();
        ZKPaths.PathAndNode parentAndName = ZKPaths.getPathAndNode(path);
        deleting.compute(parentAndName.getPath(), (parent, names) -> {
            Set<String> now = names != null ? names : ConcurrentHashMap.newKeySet();
            now.add(parentAndName.getNode());
            return now;
        });
        try {
            client.delete()
                    .guaranteed()
                    .inBackground((c, event) -> {
                        KeeperException.Code rc = KeeperException.Code.get(event.getResultCode());
                        if (rc == KeeperException.Code.NOTREADONLY) {
                            writable().thenRun(() -> deleteGuaranteed(path));
                        } else if (ResultCodes.isPassing(rc)) {
                            sendAgain(rc, () -> deleteGuaranteed(path));
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
        deleteGuaranteed(path);
    }

    /**
     * Sends every delete of ours not yet answered for good again, at once. Curator sends a request lost with its
     * connection again only after its retry policy's sleep, while what is sent on the new connection goes out at
     * once: a released node would hold up everyone else, and tell them a holder is still there, for that long.
     * A delete answered meanwhile costs one request that finds nothing. Each parent's are sent in creation order, so
     * that of a lease of several the first node, the one its holder fences writes on, is sent first (Curator's own
     * retries of the first sends follow their own order).
     */
    private void resendDeletes() {
        deleting.forEach((parent, names) -> names.stream()
                .sorted(CREATION_ORDER)
                .toList()
                .forEach(name -> deleteGuaranteed(ZKPaths.makePath(parent, name))));
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
     * client hears of the new connection ({@link #resendDeletes}), while a request made meanwhile (by a listener of
     * the application that heard first) goes out at once: without this, a release during a connection blip could
     * refuse the same thread's next look, or hold up its next acquisition, behind its own released node. Others still
     * see the node until it goes, which only makes them wait longer. A node of a lost lease is no such node (see
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

    /**
     * Removes every watch of {@code type} this client keeps on {@code path}, on the server too, and completes when
     * the server has answered (or at once if the client is closed). This is coord's one way to drop a watch on a
     * node that lives on: removing a single watcher only unregisters it in the client, and the server keeps its
     * entry until the node changes. A watch on a node that is about to be deleted (a predecessor) is not removed
     * at all: it fires once more and costs no request. Quiet when no such watch is left; if the request cannot be
     * sent, the watch ends with the session or fires once more, and its event finds nobody waiting.
     */
    public CompletableFuture<Void> dropWatches(String path, Watcher.WatcherType type) {
        return dropWatchesAnswering(path, type).thenApply(rc -> null);
    }

    /**
     * Like {@link #dropWatches}, completing with the server's answer: OK (NOWATCHER too), an in-doubt code if the
     * connection went first, or SYSTEMERROR if the client is closed. A removal the handle refuses to send while the
     * client is open (Curator hands a background error it queued to the next caller) answers CONNECTIONLOSS a moment
     * later: the watch is still there, and the caller sends the removal again once connected, as after a lost
     * connection.
     *
     * <p>Sent on the current ZooKeeper handle, without Curator's retries: a retry can reach the server after a later
     * add of the same watch (each retry waits its own backoff), or on a new session's handle, and remove that watch
     * without anybody knowing. A caller that must see its removal through sends it again, on one connection.
     */
    public CompletableFuture<KeeperException.Code> dropWatchesAnswering(String path, Watcher.WatcherType type) {
        CompletableFuture<KeeperException.Code> done = new CompletableFuture<>();
        boolean persistent = type == Watcher.WatcherType.Persistent || type == Watcher.WatcherType.PersistentRecursive;
        try {
            client.getZookeeperClient()
                    .getZooKeeper()
                    .removeAllWatches(
                            ZKPaths.fixForNamespace(client.getNamespace(), path),
                            type,
                            false,
                            (rc, p, ctx) -> {
                                KeeperException.Code code = KeeperException.Code.get(rc);
                                if (persistent && code == KeeperException.Code.MARSHALLINGERROR) {
                                    markPersistentWatchesStay(path); // before anyone hears the answer
                                }
                                done.complete(code == KeeperException.Code.NOWATCHER ? KeeperException.Code.OK : code);
                            },
                            null);
        } catch (Exception e) {
            if (isClosed()) {
                log.debug("removal of the watches on {} not sent: the client is closed", path, e);
                done.complete(KeeperException.Code.SYSTEMERROR);
            } else {
                // Answered a while later, so that a handle that refuses again and again is not asked without end.
                log.debug("removal of the watches on {} not sent", path, e);
                Executors.later(() -> done.complete(KeeperException.Code.CONNECTIONLOSS), REFUSED_REMOVAL_PAUSE);
            }
        }
        return done;
    }

    /**
     * The server could not read a removal of persistent watches: a server of 3.6 to 3.8 adds them but removes watches
     * only by the types it knew before (Data, Children, Any), and Any would take the watches of everyone else on this
     * connection and path too. So the watch stays until the session ends, and from now on this client takes no view,
     * so that no more stay behind.
     */
    private void markPersistentWatchesStay(String path) {
        if (!persistentWatchesStay) {
            persistentWatchesStay = true;
            log.info(
                    "ZooKeeper could not remove the persistent watch on {} (a server before 3.9): coord uses"
                            + " predecessor watches on this client from now on, and the persistent watches it has"
                            + " set stay until the session ends",
                    path);
        }
    }

    public static CoordinationException closedError(String path) {
        return new CoordinationException("the client was closed while waiting for " + path);
    }

    private static void logFailedDelete(String path, CuratorEvent event) {
        int rc = event.getResultCode();
        if (rc != KeeperException.Code.OK.intValue() && rc != KeeperException.Code.NONODE.intValue()) {
            log.debug("delete of {} answered {}", path, KeeperException.Code.get(rc));
        }
    }

    /** Curator's news of the connection, on its listener thread (and from a test playing news that comes late). */
    void stateChanged(CuratorFramework c, ConnectionState state) {
        List<Runnable> ready = List.of();
        List<LeaseImpl> toConfirm = List.of();
        List<LeaseImpl> lost = List.of();
        long epoch;
        SessionEvent event;
        boolean lateLoss;
        stateLock.lock();
        try {
            epoch = ++connectionEpoch;
            long tracked = session; // the session we were on, which a LOST ends
            // A session's loss follows the drop of its connection. One heard while connected, on the session the handle
            // reports, is late news of an older session: Curator can tell of the next session's connection first.
            lateLoss = state == ConnectionState.LOST && connected && tracked != 0 && tracked == sessionId();
            event = lateLoss ? null : sessionEvent(state);
            switch (state) {
                case CONNECTED, RECONNECTED -> {
                    connected = true;
                    connectedAtNanos = System.nanoTime();
                    ready = onConnected;
                    onConnected = new ArrayList<>();
                    if (event == SessionEvent.NEW_SESSION && session != 0) {
                        // A session never comes back: a lease of an older one is lost, even if no LOST told of it
                        // (Curator tells of no second loss while it still reports the first).
                        long now = session;
                        lost = lostWithSession(
                                leases.stream().filter(l -> l.session() != now).toList());
                    }
                    // Not state(): a close noticed there would fail attempts under this lock, which grants take
                    // after their own. A client with event listeners confirmed them on its event thread already.
                    toConfirm = facade
                            ? leases.stream()
                                    .filter(l -> l.current() == LeaseState.SUSPECT)
                                    .toList()
                            : List.of();
                }
                case SUSPENDED, READ_ONLY -> {
                    connected = false;
                    if (facade) { // otherwise the event thread told them, and may have seen the next connection since
                        leases.forEach(l -> l.moveTo(LeaseState.SUSPECT));
                    }
                }
                case LOST -> {
                    // LOST can arrive after the next session is up: leases granted on that one are not lost. The
                    // handle may also still report the ended session: the one we tracked is lost all the same,
                    // unless this is late news, and the session we track goes on.
                    long current = sessionId();
                    connected &= lateLoss;
                    lost = lostWithSession(leases.stream()
                            .filter(l -> l.session() != current || (l.session() == tracked && !lateLoss))
                            .toList());
                }
            }
        } finally {
            stateLock.unlock();
        }
        if (state == ConnectionState.CONNECTED || state == ConnectionState.RECONNECTED) {
            resendDeletes(); // before the views read again, so that their reads come after the deletes
        }
        // If the expiry was only declared by the client, the old session may linger on the server for a whole session
        // timeout. Deleting its nodes, retried until the next connection carries it, lets the next holder in at once.
        lost.forEach(l -> l.nodes().forEach(this::deleteLost));
        if (event != null) { // late news changes nothing for them: they heard of the session that followed
            sessionListeners.forEach(l -> l.sessionChanged(event));
            views.values().forEach(v -> v.sessionChanged(event));
        }
        if (state == ConnectionState.LOST && !lateLoss) {
            // Waiters' znodes died with the session: each queues again on the next one.
            List.copyOf(attempts).forEach(Attempt::sessionLost);
        } else if (event == SessionEvent.NEW_SESSION || state == ConnectionState.LOST) {
            // A new session whose predecessor's loss nobody told of, as for leases above, or late news of a loss once
            // the next session is up: a waiter queued on an older session queues again, and only such a one (a
            // waiter that queued again on the new session already may still wait for its create's answer).
            List.copyOf(attempts).forEach(Attempt::sessionReplaced);
        } else if (state == ConnectionState.SUSPENDED || state == ConnectionState.READ_ONLY) {
            List.copyOf(attempts).forEach(Attempt::suspended); // one look cannot wait for the connection
        }
        confirmAll(toConfirm, epoch);
        ready.forEach(internal::execute);
    }

    /** Under stateLock: what {@code state} means for the session, tracking the session we are on. */
    private SessionEvent sessionEvent(ConnectionState state) {
        switch (state) {
            case CONNECTED, RECONNECTED -> {
                long now = sessionId();
                boolean same = session != 0 && now == session;
                session = now;
                return same ? SessionEvent.RECONNECTED : SessionEvent.NEW_SESSION;
            }
            case LOST -> {
                // The next connection is a new session, even if the handle reports the old id until it is replaced.
                session = 0;
                return SessionEvent.SESSION_ENDED;
            }
            default -> {
                return SessionEvent.SUSPENDED;
            }
        }
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
    private void confirmAll(List<LeaseImpl> leases, long epoch) {
        if (leases.isEmpty()) {
            return;
        }
        try {
            client.sync()
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
                client.checkExists()
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
            long current = sessionId();
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
            current = epoch == (facade ? connectionEpoch : connectionEvents.get())
                    && (verdict != NodeCheck.OURS || handleConnected());
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
            lease.nodes().forEach(this::deleteLost);
        } else if (current && verdict == NodeCheck.ASK_AGAIN) {
            // Once connected; a refusal while connected (a busy server's THROTTLEDOP, say) after a pause, not at once.
            Runnable again = () -> confirmAll(List.of(lease), epoch);
            if (isConnected()) {
                sendAgainLater(again);
            } else {
                whenConnected(again);
            }
        }
    }

    /** Curator's events, on ZooKeeper's event thread: the connection's own among them, as the handle delivers them. */
    private void curatorEvent(CuratorFramework c, CuratorEvent event) {
        if (event.getType() == CuratorEventType.WATCHED
                && event.getWatchedEvent() != null
                && event.getWatchedEvent().getType() == Watcher.Event.EventType.None
                // Not a change of connection: with SASL it follows SyncConnected, ahead of any answer on that one.
                && event.getWatchedEvent().getState() != Watcher.Event.KeeperState.SaslAuthenticated) {
            connectionEvents.incrementAndGet();
            leasesHear(event.getWatchedEvent().getState());
        }
        if (event.getType() == CuratorEventType.CLOSING) {
            closed();
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
    private void leasesHear(Watcher.Event.KeeperState state) {
        long news = connectionEvents.get();
        // Curator puts a new handle in place before its watchers hear the news that made it: on an expiry, and on a
        // change of the connection string, which tells of no expiry at all. An older handle's session is over. A
        // handle's news can also come late, behind the next handle's own, each on its own event thread: what the
        // current handle says of itself decides, not the news alone.
        long index = handleIndex();
        Handle now = Handle.read(this);
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
        lost.forEach(l -> l.nodes().forEach(this::deleteLost));
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
        long timeoutMillis = client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
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
            Handle now = Handle.read(this);
            boolean back = now.writable() && now.session() == onSession;
            seenBack |= back;
            stateLock.lock();
            try {
                if (closed || writesLostAt != drop) {
                    return;
                }
                if (newsHeard != heard) {
                    continue;
                }
                news = connectionEvents.get();
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
        lost.forEach(l -> l.nodes().forEach(this::deleteLost));
        confirmAll(toConfirm, news);
    }

    /** The client is closed: its session is closed with it, which deletes every ephemeral node. */
    void closed() {
        List<LeaseImpl> lost;
        boolean first;
        stateLock.lock();
        try {
            first = !closed;
            closed = true;
            connected = false;
            onConnected = new ArrayList<>();
            lost = List.copyOf(leases);
            lost.forEach(LeaseImpl::lostWithSession);
        } finally {
            stateLock.unlock();
        }
        List.copyOf(attempts).forEach(a -> a.fail(closedError(a.path())));
        List.copyOf(requests).forEach(r -> r.completeExceptionally(closedError("the request")));
        if (first) {
            sessionListeners.forEach(l -> l.sessionChanged(SessionEvent.CLOSED));
            views.values().forEach(v -> v.sessionChanged(SessionEvent.CLOSED));
        }
    }
}
