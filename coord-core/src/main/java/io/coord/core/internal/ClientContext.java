package io.coord.core.internal;

import io.coord.core.CoordinationException;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
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
import java.util.concurrent.atomic.AtomicLong;
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
 * module reaches the client through this registry, namespace facades included. Its leases ({@link SessionLeases}),
 * the deletes of its own nodes ({@link GuaranteedDeletes}) and what its server can do ({@link ServerSupport}) are
 * kept in classes of their own.
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
    static final Duration THROTTLED_PAUSE = Duration.ofMillis(250);
    private static final ReentrantLock REGISTRY_LOCK = new ReentrantLock();
    // Connection -> namespace ("" for none) -> context. Weak both ways: the client keeps its context alive through the
    // listeners it holds, and nothing else does.
    private static final Map<CuratorZookeeperClient, Map<String, WeakReference<ClientContext>>> REGISTRY =
            new WeakHashMap<>();

    private final CuratorFramework client;
    private final Executor internal = Executors.internal();
    private final GuaranteedDeletes deletes = new GuaranteedDeletes(this);
    private final ServerSupport server = new ServerSupport(this);
    private final Set<Attempt> attempts = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closeNoticed = new AtomicBoolean();
    // Guarded by stateLock: what connected() hands out until the next connection.
    private CompletableFuture<Void> nextConnection;
    private final Map<String, SharedPath> paths = new ConcurrentHashMap<>();
    private final Map<String, PathView> views = new ConcurrentHashMap<>();
    private final Set<String> plainWatchPaths = ConcurrentHashMap.newKeySet();
    private volatile ViewSettings viewSettings = ViewSettings.fromSystemProperties();
    // Guarded by stateLock: when the client last connected.
    private long connectedAtNanos;
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
    private final SessionLeases leases;
    // Written under stateLock; closed is also read without it.
    private boolean connected;
    private volatile boolean closed;
    private long connectionEpoch;
    // Connection events as ZooKeeper's event thread delivers them, in order with the answers to requests.
    private final AtomicLong connectionEvents = new AtomicLong();
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
        this.leases = new SessionLeases(this, stateLock);
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
        return viewSettings.enabled() && server.takesViews();
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

    /** What the server can do, as its answers tell. */
    public ServerSupport server() {
        return server;
    }

    /** The connection's epoch if the client is connected now, else {@code none}. */
    long connectionIfUp(long none) {
        stateLock.lock();
        try {
            return connected ? connectionEpoch : none;
        } finally {
            stateLock.unlock();
        }
    }

    /** How long the client has been connected, as its last connection's news tells; for a connected client. */
    Duration connectedFor() {
        stateLock.lock();
        try {
            return Duration.ofNanos(System.nanoTime() - connectedAtNanos);
        } finally {
            stateLock.unlock();
        }
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
            leases.nodeDeleted(event.getPath()); // first: a waiter this deletion grants must find the hold already lost
        }
        SharedPath shared = paths.get(ZKPaths.getPathAndNode(event.getPath()).getPath());
        if (shared != null) {
            shared.watchFired(event); // otherwise nobody waits on that path any more
        }
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
            if (connected) {
                return CompletableFuture.completedFuture(null); // no wait: no hop through the retry thread either
            }
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
    boolean handleConnected() {
        return handleHasConnection() && handleState() == ZooKeeper.States.CONNECTED;
    }

    /** What the handle says of its connection; null with no handle, or while Curator holds a background error. */
    ZooKeeper.States handleState() {
        ZooKeeper handle = handle();
        return handle == null ? null : handle.getState();
    }

    /** The client's handle; null with none, or while Curator holds a background error. */
    ZooKeeper handle() {
        try {
            return client.getZookeeperClient().getZooKeeper();
        } catch (Exception e) {
            return null;
        }
    }

    /** The leases this client holds, and what the connection's news does to them. */
    SessionLeases leases() {
        return leases;
    }

    /** Whether the client was seen closed; read under stateLock for an answer ordered with the news. */
    boolean closeSeen() {
        return closed;
    }

    /**
     * Under stateLock: whether the context counts the client connected to a server that takes writes, as Curator's
     * listener thread last told it (or the handle, when the context was made); false once the client is closed.
     */
    boolean heardConnected() {
        return connected;
    }

    /** How many of the connection's events ZooKeeper's event thread has delivered. */
    long eventNews() {
        return connectionEvents.get();
    }

    /**
     * Under stateLock: the news that moves leases, as counted so far: Curator's listener thread's for a client with no
     * event listeners, else the event thread's.
     */
    long leaseNewsEpoch() {
        return facade ? connectionEpoch : connectionEvents.get();
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

    /**
     * An attempt waits for the handle's connection to enter the queue with: a client with no CuratorListenable to tell
     * of its close has it looked for meanwhile, on the clock, so that the attempt fails if it is closed.
     */
    void attemptWaitsForConnection() {
        stateLock.lock();
        try {
            lookForCloseLater();
        } finally {
            stateLock.unlock();
        }
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
            if (!connected && !(onConnected.isEmpty() && attempts.isEmpty())) {
                lookForCloseLater(); // work still waits: an attempt may wait for the handle's connection
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
        return deletes.delete(path);
    }

    /** This client's deletes of its own znodes, and which of its nodes are on their way out. */
    GuaranteedDeletes deletes() {
        return deletes;
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
                                    server.persistentWatchRemovalRefused(path); // before anyone hears the answer
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

    public static CoordinationException closedError(String path) {
        return new CoordinationException("the client was closed while waiting for " + path);
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
                        // A session never comes back, even if no LOST told of the last one's end.
                        lost = leases.endSessionsOtherThan(session);
                    }
                    // Not state(): a close noticed there would fail attempts under this lock, which grants take
                    // after their own. A client with event listeners confirmed them on its event thread already.
                    toConfirm = facade ? leases.suspects() : List.of();
                }
                case SUSPENDED, READ_ONLY -> {
                    connected = false;
                    if (facade) { // otherwise the event thread told them, and may have seen the next connection since
                        leases.suspectAll();
                    }
                }
                case LOST -> {
                    connected &= lateLoss;
                    lost = leases.sessionLost(sessionId(), tracked, lateLoss);
                }
            }
        } finally {
            stateLock.unlock();
        }
        if (state == ConnectionState.CONNECTED || state == ConnectionState.RECONNECTED) {
            deletes.resendAll(); // before the views read again, so that their reads come after the deletes
        }
        leases.deleteNodes(lost);
        if (event != null) { // late news changes nothing for them: they heard of the session that followed
            sessionListeners.forEach(l -> l.sessionChanged(event));
            views.values().forEach(v -> v.sessionChanged(event));
        }
        if (state == ConnectionState.LOST && !lateLoss) {
            // Waiters' znodes died with the session: each queues again on the next one.
            List.copyOf(attempts).forEach(Attempt::sessionLost);
        } else if (event == SessionEvent.NEW_SESSION || state == ConnectionState.LOST) {
            // A new session whose predecessor's loss nobody told of, as for the leases above, or late news of a loss
            // once the next session is up: a waiter queued on an older session queues again, and only such a one (a
            // waiter that queued again on the new session already may still wait for its create's answer).
            List.copyOf(attempts).forEach(Attempt::sessionReplaced);
        } else if (state == ConnectionState.SUSPENDED || state == ConnectionState.READ_ONLY) {
            List.copyOf(attempts).forEach(Attempt::suspended); // one look cannot wait for the connection
        }
        leases.confirmAll(toConfirm, epoch);
        ready.forEach(internal::execute);
        if (state == ConnectionState.CONNECTED || state == ConnectionState.RECONNECTED) {
            handleConnectedNow();
        }
    }

    /**
     * The handle has a connection: attempts that wait for one to enter the queue with enter now, on coord's retry
     * thread. Told by ZooKeeper's event thread as soon as the handle connects, and again by Curator's listener thread,
     * which a listener of the application may hold up (and which alone tells a client with no CuratorListenable).
     */
    private void handleConnectedNow() {
        if (!attempts.isEmpty()) {
            internal.execute(() -> List.copyOf(attempts).forEach(Attempt::connected));
        }
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

    /** Curator's events, on ZooKeeper's event thread: the connection's own among them, as the handle delivers them. */
    private void curatorEvent(CuratorFramework c, CuratorEvent event) {
        if (event.getType() == CuratorEventType.WATCHED
                && event.getWatchedEvent() != null
                && event.getWatchedEvent().getType() == Watcher.Event.EventType.None
                // Not a change of connection: with SASL it follows SyncConnected, ahead of any answer on that one.
                && event.getWatchedEvent().getState() != Watcher.Event.KeeperState.SaslAuthenticated) {
            connectionEvents.incrementAndGet();
            leases.hear(event.getWatchedEvent().getState());
            if (event.getWatchedEvent().getState() == Watcher.Event.KeeperState.SyncConnected) {
                handleConnectedNow(); // Curator counts the handle connected before it tells its listeners
            }
        }
        if (event.getType() == CuratorEventType.CLOSING) {
            closed();
        }
    }

    /** The client is closed: its session is closed with it, which deletes every ephemeral node. */
    void closed() {
        boolean first;
        stateLock.lock();
        try {
            first = !closed;
            closed = true;
            connected = false;
            onConnected = new ArrayList<>();
            leases.closeAll();
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
