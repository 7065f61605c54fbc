package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.ResultCodes;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Watcher;

/**
 * The one PERSISTENT watch a client keeps on a parent while any of its callers waits there: added by the first to
 * wait, removed once the last stops.
 *
 * <p>At most one request about the watch is in flight at a time. ZooKeeper applies a session's requests in order,
 * but after a lost connection Curator sends each one again on its own: an add sent while a removal is unanswered
 * could land first and then be undone by the removal, leaving waiters with no events while they believe the watch
 * is on. So each answer decides the next step from the state by then: add if a waiter asked for the watch, remove if
 * nobody waits and the server may still hold it. A removal whose answer is in doubt is decided again once
 * connected, since a reconnection puts the client's watches back on the server.
 */
final class ParentWatch {
    private enum Step {
        NONE,
        ADD,
        REMOVE
    }

    private final ClientContext context;
    private final String path;
    private final Watcher watcher;
    private final Runnable added;
    private final Function<Code, CoordinationException> failure;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private int waiters;
    private boolean armed;
    // An add may have landed since the last removal that answered: a removal is owed once nobody waits.
    private boolean maybeOnServer;
    private boolean inFlight;
    // The generation the request in flight was sent in: its answer speaks for that generation alone.
    private long sentAt;
    // Asked for by a waiter and not yet answered.
    private CompletableFuture<Void> arming;
    // Bumped by every removal and every session end, so that an add answered after one does not count as armed.
    private long generation;

    /** {@code added} runs after each add that answered OK, before its waiters hear of it. */
    ParentWatch(
            ClientContext context,
            String path,
            Watcher watcher,
            Runnable added,
            Function<Code, CoordinationException> failure) {
        this.context = context;
        this.path = path;
        this.watcher = watcher;
        this.added = added;
        this.failure = failure;
    }

    /** Counts the caller as waiting; the returned future completes once the watch is on the server. */
    CompletableFuture<Void> join() {
        Locked.run(lock, () -> waiters++);
        return ensureArmed();
    }

    /**
     * The watch on the server, adding it again if a session end took it away. A server that said it is older than 3.6
     * has none to add, and would break the connection at each try.
     */
    CompletableFuture<Void> ensureArmed() {
        if (context.server().saidItIsOlder()) {
            return CompletableFuture.failedFuture(failure.apply(Code.UNIMPLEMENTED));
        }
        CompletableFuture<Void> answer;
        Step step;
        lock.lock();
        try {
            if (armed) {
                return CompletableFuture.completedFuture(null);
            }
            if (arming == null) {
                arming = context.track(new CompletableFuture<>()); // a close fails it, even while the add waits
            }
            answer = arming;
            step = next();
        } finally {
            lock.unlock();
        }
        send(step);
        return answer;
    }

    /** The last waiter to leave removes the watch, so that none is left on the server. */
    void leave() {
        decide(() -> waiters--);
    }

    /**
     * The session ended, or a new one began: the watch died with it. The news can come after an add answered on the
     * new session, so the watch may still be on the server: the last waiter to leave removes it all the same, which
     * costs a request that finds no watch at worst.
     */
    void sessionEnded() {
        Locked.run(lock, () -> {
            armed = false;
            generation++;
        });
    }

    /**
     * The watch was removed, by this client or another user of its connection. An add answered after the removal
     * counts, since its answer comes after the removal's event.
     */
    void removed() {
        Locked.run(lock, () -> armed = false);
    }

    /** The request to send now, if any; under the lock. */
    private Step next() {
        if (inFlight) {
            return Step.NONE; // its answer decides again
        }
        if (arming != null) {
            inFlight = true;
            maybeOnServer = true;
            sentAt = generation;
            return Step.ADD;
        }
        if (waiters == 0 && maybeOnServer && !context.server().persistentWatchesStay()) {
            inFlight = true;
            armed = false;
            sentAt = ++generation;
            return Step.REMOVE;
        }
        return Step.NONE;
    }

    private void reconcile() {
        decide(() -> {});
    }

    /** Makes {@code change} under the lock, then sends what the state calls for. */
    private void decide(Runnable change) {
        send(Locked.get(lock, () -> {
            change.run();
            return next();
        }));
    }

    private void send(Step step) {
        CuratorFramework client = context.client();
        switch (step) {
            case NONE -> {}
            case ADD -> {
                long connection = context.server().newerRequestSent();
                BackgroundRequests.call(
                                context,
                                path,
                                cb -> client.watchers()
                                        .add()
                                        .withMode(AddWatchMode.PERSISTENT)
                                        .inBackground(cb)
                                        .usingWatcher(watcher)
                                        .forPath(path))
                        .whenComplete((event, error) ->
                                addAnswered(connection, error == null ? BackgroundRequests.code(event) : null, error));
            }
            case REMOVE ->
                // Every persistent watch of this client on the path, on the current connection only (see
                // ClientContext#dropWatchesAnswering): removing one watcher only unregisters it in the client.
                context.dropWatchesAnswering(path, Watcher.WatcherType.Persistent)
                        .thenAccept(this::removeAnswered);
        }
    }

    /**
     * {@code code} is null when the request failed without an answer (the client closed). A server before 3.6 may
     * seem to lose the add with the connection: see {@link io.coord.core.internal.ServerSupport#answeredAsOlderServer}.
     */
    private void addAnswered(long connection, Code code, Throwable error) {
        boolean olderServer = code != null && context.server().answeredAsOlderServer(code, connection);
        boolean inDoubt = code != null && !olderServer && ResultCodes.isInDoubt(code);
        CompletableFuture<Void> answered;
        Step step;
        lock.lock();
        try {
            inFlight = false;
            armed = code == Code.OK && sentAt == generation;
            maybeOnServer |= code == Code.OK || inDoubt; // an answer after a session end may come from the next
            answered = arming;
            arming = null;
            step = inDoubt ? Step.NONE : next();
        } finally {
            lock.unlock();
        }
        if (inDoubt) {
            context.whenConnected(this::reconcile); // a removal owed meanwhile waits for the connection
        }
        send(step);
        if (code == Code.OK) {
            added.run();
            answered.complete(null);
        } else {
            answered.completeExceptionally(error != null ? error : failure.apply(code));
        }
    }

    private void removeAnswered(Code code) {
        // In doubt, or refused by a busy server (THROTTLEDOP), which leaves the watch on a connection that goes on.
        boolean inDoubt = code != null && ResultCodes.isPassing(code);
        Step step = Locked.get(lock, () -> {
            inFlight = false;
            if (code == Code.MARSHALLINGERROR) {
                // A server before 3.9 cannot remove it on its own (see ServerSupport#persistentWatchesStay): it stays
                // on, and is still the one waiters need, unless the session ended meanwhile.
                armed = sentAt == generation;
            } else if (!inDoubt) {
                maybeOnServer = false; // removed, or never to be: the client closed, or the server refused
            }
            return inDoubt ? Step.NONE : next();
        });
        if (inDoubt) {
            // The watch may still be on the server, and a reconnection on the same session puts it back anyway.
            context.sendAgain(code, this::reconcile);
        }
        send(step);
    }
}
