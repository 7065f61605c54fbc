package io.coord.core.internal;

import io.coord.core.LeaseState;
import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.EventType;

/**
 * The holder's side of revocation, for one lease that opted in: hears requests written on the lease's first node
 * ({@link Revocations#MARKER}, as Curator writes it) and runs the lease's revocation actions once per request.
 *
 * <p>It hears them through the client's view of the path while the view is usable: the persistent recursive watch
 * delivers the node's data changes too, at no cost. Events missed while disconnected are made up for by reading the
 * node again whenever the view is read again. Without a usable view, or once the view turns unusable, it keeps a data
 * watch on the node instead: ZooKeeper sets a standard watch again on reconnection and fires it if the node changed
 * meanwhile. Either way it also hears the node's deletion by somebody else, a forced revocation, and the lease turns
 * LOST.
 *
 * <p>Each request is a new data version of the node; the version last acted on keeps a request seen twice (an event
 * and a read after reconnecting) from running the actions twice.
 */
final class RevocationWatch implements PathView.Member, PathView.NodeListener {
    private final LeaseImpl lease;
    private final ClientContext context;
    private final String node; // the lease's first node: where requests are written
    private final String name;
    private final OrderedListeners<Runnable> actions;
    private final SerialExecutor serial = SerialExecutor.onCallbacks();
    private final Watcher dataWatcher = this::dataWatchFired;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private boolean started;
    private boolean stopped;
    private PathView view; // while requests come through the view
    private int lastRequest; // the data version of the last request acted on, 0 for none

    RevocationWatch(LeaseImpl lease, ClientContext context) {
        this.lease = lease;
        this.context = context;
        this.node = lease.path();
        this.name = ZKPaths.getNodeFromPath(node);
        this.actions = new OrderedListeners<>(node, serial);
    }

    /** Adds an action; the first one starts listening. One added after a request was heard runs at once. */
    void add(Runnable action, Executor executor) {
        if (leaseEnded()) {
            return; // before its end reached stop(): nothing to listen for, and nothing to send
        }
        boolean start;
        lock.lock();
        try {
            if (stopped) {
                return; // the lease ended: no request can reach it any more
            }
            if (lastRequest > 0) {
                actions.addAndTell(action, executor, "revocation requested", Runnable::run); // asked before it came
            } else {
                actions.add(action, executor);
            }
            start = !started;
            started = true;
        } finally {
            lock.unlock();
        }
        if (start) {
            start();
        }
    }

    private void start() {
        // A request may have come before anyone listened: the first read looks, and sets the data watch if there is
        // no view to hear the next ones.
        switch (joinView()) {
            case JOINED -> read(false);
            case NO_VIEW -> read(true);
            case LEFT_AT_ONCE -> {} // the view turned unusable at once, and viewUnusable read with a watch
        }
        lease.whenEnded(this::stop);
    }

    private enum Joining {
        JOINED,
        NO_VIEW,
        LEFT_AT_ONCE
    }

    private Joining joinView() {
        if (!context.usesViews()) {
            return Joining.NO_VIEW;
        }
        PathView candidate = context.retainView(ZKPaths.getPathAndNode(node).getPath());
        lock.lock();
        try {
            view = candidate; // before joining: the view may turn unusable as soon as we are a member
        } finally {
            lock.unlock();
        }
        candidate.hold(List.of(name), this); // before joining too, so that viewUnusable always finds it to undo
        List<Runnable> todo = new ArrayList<>(2);
        boolean joined = candidate.join(this, todo);
        todo.forEach(Runnable::run);
        lock.lock();
        try {
            if (joined) {
                return view == candidate ? Joining.JOINED : Joining.LEFT_AT_ONCE;
            }
            view = null;
        } finally {
            lock.unlock();
        }
        candidate.unlisten(List.of(name), this);
        candidate.release();
        return Joining.NO_VIEW;
    }

    private void stop() {
        PathView left;
        lock.lock();
        try {
            stopped = true;
            left = view;
            view = null;
        } finally {
            lock.unlock();
        }
        // A data watch, if any, fires once more when the node is deleted, or ends with the session.
        if (left != null) {
            left.quit(this, List.of(name), this);
            left.release();
        }
    }

    private boolean isStopped() {
        lock.lock();
        try {
            if (stopped) {
                return true;
            }
        } finally {
            lock.unlock();
        }
        return leaseEnded();
    }

    /**
     * Whether the lease is released or lost. Its end reaches {@link #stop} later, through the lease's listeners; asked
     * outside the lock, since the lease takes its own.
     */
    private boolean leaseEnded() {
        LeaseState state = lease.state();
        return state == LeaseState.RELEASED || state == LeaseState.LOST;
    }

    /** Reads the node's data, with the data watch if {@code watch}; the answer tells whether a request is there. */
    private void read(boolean watch) {
        try {
            if (watch) {
                context.client()
                        .getData()
                        .usingWatcher(dataWatcher)
                        .inBackground((c, event) -> answered(watch, event))
                        .forPath(node);
            } else {
                context.client()
                        .getData()
                        .inBackground((c, event) -> answered(watch, event))
                        .forPath(node);
            }
        } catch (Exception e) {
            // The client is closed, and the lease with it.
        }
    }

    private void answered(boolean watch, CuratorEvent event) {
        Code rc = Code.get(event.getResultCode());
        switch (rc) {
            case OK -> {
                if (event.getStat() == null || event.getStat().getEphemeralOwner() != lease.session()) {
                    lease.deletedElsewhere(); // and made again by another session, as a reconnect's check would say
                    return;
                }
                lease.nodeSeen();
                if (Revocations.isRequest(event.getData(), event.getStat())) {
                    requested(event.getStat().getVersion());
                }
            }
            case NONODE -> lease.deletedElsewhere();
            // The node exists (the server answers NONODE before it checks the ACL), under an ACL that keeps even its
            // owner from reading it: seen, but no request can be read.
            case NOAUTH -> lease.nodeSeen();
            default -> {
                if (isStopped()) {
                    return;
                }
                if (rc == Code.THROTTLEDOP) {
                    // A server's request throttling refused it: nothing else would read again, and a grant waiting
                    // for its confirmation would wait until the next reconnect, holding up everyone queued behind it.
                    context.sendAgainLater(() -> {
                        if (!isStopped()) {
                            read(watch);
                        }
                    });
                } else if (watch && ResultCodes.isInDoubt(rc)) {
                    // A watch that was not set is set when connected again. The view reads anew by itself, and this
                    // watch reads with it.
                    context.whenConnected(() -> read(true));
                }
            }
        }
    }

    private void requested(int version) {
        if (leaseEnded()) {
            return; // heard after the lease was closed or lost: the hold it asks about is over
        }
        lock.lock();
        try {
            if (stopped || version <= lastRequest) {
                return;
            }
            lastRequest = version;
            actions.fire("revocation requested", Runnable::run);
        } finally {
            lock.unlock();
        }
    }

    private void dataWatchFired(WatchedEvent event) {
        if (event.getType() == EventType.NodeDeleted) {
            lease.deletedElsewhere();
        } else if (event.getType() == EventType.NodeDataChanged && !isStopped()) {
            read(true); // a standard watch fires once: set it again with the read
        }
        // Connection events: the client sets the watch again on reconnecting, and fires it if the node changed.
    }

    // ---- from the view, outside its lock ----

    @Override
    public void nodeDataChanged(SequenceNode changed) {
        if (!isStopped()) {
            read(false);
        }
    }

    @Override
    public void nodeDeleted(SequenceNode deleted) {
        lease.deletedElsewhere();
    }

    @Override
    public void viewRead() {
        if (!isStopped()) {
            read(false); // data changes while the view was not live were not delivered
        }
    }

    @Override
    public void viewUnusable(PathView.Unusable why) {
        PathView left;
        lock.lock();
        try {
            left = view;
            view = null;
            if (stopped || left == null) {
                return;
            }
        } finally {
            lock.unlock();
        }
        left.unlisten(List.of(name), this);
        left.release();
        read(true); // from now on through a data watch
    }
}
