package io.coord.core.internal;

import io.coord.core.CoordinationException;
import io.coord.core.LeasePredicate;
import io.coord.core.LeasePredicate.Decision;
import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher.Event.EventType;
import org.apache.zookeeper.Watcher.Event.KeeperState;

/**
 * One contender's way through the queue: create its node(s), read the queue once, then wait on watches, pruning the
 * snapshot instead of reading the children again. {@link #result} completes with the lease, with null when a
 * try-once attempt was refused, or exceptionally; any outcome but a lease withdraws what the attempt created.
 *
 * <p>Each handler decides under {@link #lock} and makes its ZooKeeper calls after releasing it, so that a callback
 * Curator runs on the calling thread never re-enters a half-made decision.
 */
final class Attempt implements SharedPath.WatchSubscriber {
    private enum Phase {
        ENTERING,
        WAITING,
        /** Granted, refused (a one-look attempt) or failed: the result is set. */
        DONE,
        /** Given up by the caller (timeout, interrupt, cancel): whatever it created is being deleted. */
        WITHDRAWN
    }

    /** Requests of the current generation whose answer has not come back. */
    private enum InFlight {
        CREATE,
        READ
    }

    /** What to ask for: how many nodes to hold together, what grants them, and whether to look only once. */
    record Request(int nodes, LeasePredicate predicate, boolean tryOnce) {}

    private final LeaseEngine engine;
    private final ClientContext context;
    private final SharedPath shared;
    private final Request request;
    private final AtomicBoolean ended = new AtomicBoolean();
    final CompletableFuture<LeaseImpl> result = new CompletableFuture<>();

    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private Phase phase = Phase.ENTERING;
    private int generation;
    private final Set<InFlight> inFlight = EnumSet.noneOf(InFlight.class);
    private final OwnNodes own = new OwnNodes();
    private final QueueSnapshot snapshot;
    private SequenceNode[] earlyRead; // a read that answered before our create did
    // Nodes whose shared watch we wait on. One we no longer need is unsubscribed locally, never removed on the
    // server: ZooKeeper answers the removal of one watcher with a check only, keeping its side of the watch until the
    // node changes, so removing would cost a round trip and gain nothing.
    private final Set<String> watching = new HashSet<>();

    Attempt(LeaseEngine engine, ClientContext context, Request request) {
        this.engine = engine;
        this.context = context;
        this.shared = context.join(engine.path());
        this.snapshot = new QueueSnapshot(shared);
        this.request = request;
        result.whenComplete((lease, error) -> {
            if (lease == null) {
                withdraw();
            }
            end();
        });
    }

    String path() {
        return engine.path();
    }

    void start() {
        context.track(this);
        if (request.tryOnce() && !context.isConnected()) {
            result.complete(null); // one look cannot be had without a connection; nothing was written
            return;
        }
        act(todo -> {
            if (!isOver()) {
                enter(todo);
            }
        });
    }

    void fail(RuntimeException error) {
        result.completeExceptionally(error);
    }

    /** The session died: its nodes are gone, or going, and its watches with them. Queue again on the next one. */
    void sessionLost() {
        act(todo -> {
            if (isOver() || (own.exist() && own.session() == context.sessionId())) {
                return; // done, or already queued on the new session (LOST can arrive late)
            }
            unwatchAll();
            if (request.tryOnce()) {
                finish(null, todo);
            } else {
                enter(todo);
            }
        });
    }

    // ---- entering ----

    private void enter(List<Runnable> todo) {
        deleteOurs(todo);
        int gen = ++generation;
        String prefix = own.newGeneration();
        phase = Phase.ENTERING;
        earlyRead = null;
        snapshot.clear();
        unwatchAll();
        inFlight.add(InFlight.CREATE);
        inFlight.add(InFlight.READ);
        todo.add(() -> create(gen, prefix));
        // Pipelined: the read goes out right behind the create, so entering costs one round trip.
        todo.add(() -> read(gen, false));
    }

    private void create(int gen, String prefix) {
        try {
            NodeCreator.create(
                    context.client(),
                    engine.path(),
                    prefix + engine.prefix(),
                    engine.nodeData(),
                    request.nodes(),
                    (rc, made) -> created(gen, rc, made));
        } catch (Exception e) {
            act(todo -> failWith(e, todo));
        }
    }

    private void created(int gen, KeeperException.Code rc, NodeCreator.Created made) {
        act(todo -> {
            if (gen != generation) {
                if (made != null) {
                    made.names().forEach(name -> todo.add(() -> context.deleteGuaranteed(full(name))));
                }
                // A replayed copy of this create may have landed unseen, even after a sweep at withdrawal. Sweep the
                // old generations' ids only, unless withdrawn: the current one may name a granted lease.
                sweepLater(todo, phase != Phase.WITHDRAWN);
                return;
            }
            inFlight.remove(InFlight.CREATE);
            if (rc == KeeperException.Code.OK) {
                own.created(made);
                if (earlyRead != null) {
                    SequenceNode[] read = earlyRead;
                    earlyRead = null;
                    snapshot(read, false, todo);
                } else if (!inFlight.contains(InFlight.READ)) {
                    requestRead(todo);
                }
            } else {
                if (made != null) {
                    made.names().forEach(name -> todo.add(() -> context.deleteGuaranteed(full(name))));
                }
                if (isRetryable(rc)) {
                    retry(gen, todo, this::enter);
                } else {
                    failWith(KeeperException.create(rc, engine.path()), todo);
                }
            }
        });
    }

    // ---- reading ----

    /** A read sent after our create completed: if our node is missing from it, the node is gone. */
    private void requestRead(List<Runnable> todo) {
        inFlight.add(InFlight.READ);
        int gen = generation;
        todo.add(() -> read(gen, true));
    }

    private void read(int gen, boolean authoritative) {
        shared.read()
                .whenComplete((nodes, error) -> act(todo -> {
                    if (gen != generation || isOver()) {
                        return;
                    }
                    inFlight.remove(InFlight.READ);
                    if (error != null) {
                        readFailed(gen, ResultCodes.unwrap(error), todo);
                    } else if (!own.exist()) {
                        if (inFlight.contains(InFlight.CREATE)) {
                            earlyRead = nodes; // the create's reply is still on its way
                        }
                    } else {
                        snapshot(nodes, authoritative, todo);
                    }
                }));
    }

    private void readFailed(int gen, Throwable error, List<Runnable> todo) {
        if (error instanceof KeeperException ke && isRetryable(ke.code())) {
            if (!inFlight.contains(InFlight.CREATE)) {
                retry(gen, todo, this::readAgain);
            }
        } else {
            failWith(error, todo);
        }
    }

    private void snapshot(SequenceNode[] nodes, boolean authoritative, List<Runnable> todo) {
        int index = Arrays.binarySearch(nodes, own.last());
        if (index < 0) {
            if (authoritative) {
                enter(todo); // our node is gone: its session died or somebody deleted it
            } else {
                requestRead(todo); // the read overtook our create (a retry, or a parent just created)
            }
            return;
        }
        snapshot.take(nodes, index);
        // Copies of our create that Curator replayed after a lost reply sit before us, under our own id.
        for (SequenceNode node : snapshot.before()) {
            if (own.isStray(node)) {
                dropStray(node, todo);
            }
        }
        evaluate(todo);
    }

    // ---- deciding ----

    private void evaluate(List<Runnable> todo) {
        evaluate(todo, false);
    }

    /** @param woken whether a watched predecessor was just deleted */
    private void evaluate(List<Runnable> todo, boolean woken) {
        if (isOver() || !snapshot.isTaken() || inFlight.contains(InFlight.READ)) {
            return;
        }
        List<SequenceNode> queue = snapshot.livePrefix(own.last());
        Decision decision = request.predicate().evaluate(queue, queue.size() - 1);
        if (decision.granted()) {
            grant(todo);
            return;
        }
        if (request.tryOnce()) {
            finish(null, todo);
            return;
        }
        phase = Phase.WAITING;
        if (woken && decision.watch().size() == 1 && queue.size() > 2 && !watching.contains(name(decision))) {
            // The node we watched is gone and more remain before us. In a FIFO hand-off it was the holder and the
            // rest left before it, unseen by us: one read beats finding that out a node at a time on the hand-off's
            // critical path.
            requestRead(todo);
            return;
        }
        for (SequenceNode node : decision.watch()) {
            if (own.isCurrent(node.name())) {
                continue; // our own earlier nodes of a multi-node request leave only with us
            }
            if (watching.add(node.name())) {
                todo.add(() -> watch(node));
            }
        }
    }

    private void dropStray(SequenceNode node, List<Runnable> todo) {
        if (snapshot.prune(node)) {
            String stray = full(node.name());
            todo.add(() -> context.deleteGuaranteed(stray));
        }
    }

    private void grant(List<Runnable> todo) {
        List<String> paths = own.names().stream().map(this::full).toList();
        LeaseImpl lease = context.newLease(paths, own.token(), own.session());
        if (lease == null) {
            enter(todo); // the nodes belong to a session that is no longer ours: dead or dying
            return;
        }
        own.take(); // the lease owns them now
        finish(lease, todo);
    }

    private void finish(LeaseImpl lease, List<Runnable> todo) {
        phase = Phase.DONE;
        unwatchAll();
        todo.add(() -> {
            if (!result.complete(lease) && lease != null) {
                lease.close(); // withdrawn while the grant was being made
            }
        });
    }

    // ---- waiting ----

    /** Waits on the node's one watch in this client, sending it if nobody here waits on the node yet. */
    private void watch(SequenceNode node) {
        shared.watch(node, this);
    }

    /** Stops waiting on every node: frees our place in their watches, at no cost on the server. */
    private void unwatchAll() {
        for (String name : watching) {
            shared.unwatch(name, this);
        }
        watching.clear();
    }

    private void unwatch(String name) {
        if (watching.remove(name)) {
            shared.unwatch(name, this);
        }
    }

    @Override
    public void watchAnswered(SequenceNode node, KeeperException.Code rc) {
        act(todo -> {
            if (isOver() || !watching.contains(node.name())) {
                return; // a watch we no longer need
            }
            int gen = generation;
            switch (rc) {
                case OK -> {} // wait for the watch to fire
                case NONODE -> {
                    unwatch(node.name());
                    snapshot.prune(node);
                    // One gone node is a race with its owner; a second means the snapshot is stale, and one read
                    // is cheaper than walking it a node at a time.
                    if (snapshot.foundStale()) {
                        requestRead(todo);
                    } else {
                        evaluate(todo);
                    }
                }
                default -> {
                    unwatch(node.name());
                    if (isRetryable(rc)) {
                        retry(gen, todo, this::readAgain);
                    } else {
                        failWith(KeeperException.create(rc, full(node.name())), todo);
                    }
                }
            }
        });
    }

    @Override
    public void watchFired(WatchedEvent event) {
        if (event.getType() == EventType.None) {
            // Connection changes reach us through the client's state listener, except the close of a namespace
            // facade, which only its watches see.
            if (event.getState() == KeeperState.Closed && context.isClosed()) {
                fail(ClientContext.closedError(engine.path()));
            }
            return;
        }
        act(todo -> {
            String name = ZKPaths.getNodeFromPath(event.getPath());
            unwatch(name); // the shared watch is spent; a re-watch subscribes anew
            if (event.getType() == EventType.NodeDeleted) {
                SequenceNode.parse(name).ifPresent(snapshot::prune);
            }
            if (phase == Phase.WAITING) {
                evaluate(todo, event.getType() == EventType.NodeDeleted); // re-watches after any other change
            }
        });
    }

    private static String name(Decision decision) {
        return decision.watch().get(0).name();
    }

    /** After a failed read or watch, once connected again: read, unless a read is on its way already. */
    private void readAgain(List<Runnable> todo) {
        if (!inFlight.contains(InFlight.READ)) {
            requestRead(todo);
        }
    }

    // ---- leaving ----

    /** Deletes whatever this attempt created. Runs once the result is anything but a lease. */
    private void withdraw() {
        act(todo -> {
            phase = Phase.WITHDRAWN;
            generation++; // a create still in flight now finds itself stale and deletes what it made
            unwatchAll();
            deleteOurs(todo);
            sweepLater(todo, false);
        });
    }

    private void sweepLater(List<Runnable> todo, boolean spareCurrent) {
        List<String> prefixes = own.prefixes(spareCurrent);
        todo.add(() -> shared.sweep(prefixes));
    }

    private void end() {
        if (ended.compareAndSet(false, true)) {
            lock.lock();
            try {
                snapshot.unpin();
            } finally {
                lock.unlock();
            }
            context.untrack(this);
            context.leave(shared);
        }
    }

    private void deleteOurs(List<Runnable> todo) {
        for (String name : own.take()) {
            String path = full(name);
            todo.add(() -> context.deleteGuaranteed(path));
        }
    }

    // ---- plumbing ----

    private void retry(int gen, List<Runnable> todo, Consumer<List<Runnable>> step) {
        if (request.tryOnce()) {
            finish(null, todo);
            return;
        }
        todo.add(() -> {
            if (context.isClosed()) {
                fail(ClientContext.closedError(engine.path()));
                return;
            }
            context.whenConnected(() -> act(t -> {
                if (gen == generation && !isOver()) {
                    step.accept(t);
                }
            }));
        });
    }

    private void failWith(Throwable cause, List<Runnable> todo) {
        if (phase != Phase.WITHDRAWN) {
            phase = Phase.DONE;
        }
        RuntimeException error = context.isClosed()
                ? ClientContext.closedError(engine.path())
                : new CoordinationException("ZooKeeper refused a request for " + engine.path() + ": " + cause, cause);
        todo.add(() -> result.completeExceptionally(error));
    }

    private void act(Consumer<List<Runnable>> step) {
        List<Runnable> todo = new ArrayList<>(2);
        lock.lock();
        try {
            step.accept(todo);
        } catch (RuntimeException e) {
            // A predicate that throws, or a broken invariant: fail loudly rather than leave a node queued for ever.
            failWith(e, todo);
        } finally {
            lock.unlock();
        }
        todo.forEach(Runnable::run);
    }

    /** The result is set, or about to be: nothing more to decide. */
    private boolean isOver() {
        return phase == Phase.DONE || phase == Phase.WITHDRAWN;
    }

    private String full(String child) {
        return ZKPaths.makePath(engine.path(), child);
    }

    private static boolean isRetryable(KeeperException.Code rc) {
        // A parent container can be reaped between Curator creating it and our create: NONODE is worth a retry too.
        return ResultCodes.isInDoubt(rc) || rc == KeeperException.Code.NONODE;
    }
}
