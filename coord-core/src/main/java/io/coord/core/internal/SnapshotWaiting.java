package io.coord.core.internal;

import io.coord.core.LeasePredicate.Decision;
import io.coord.core.SequenceNode;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher.Event.EventType;

/**
 * The predecessor-watch engine: read the queue once, right behind the create, then wait on watches of the nodes the
 * predicate names, pruning the snapshot as they are deleted instead of reading again (see {@link QueueSnapshot}).
 * Used when the client has no usable view of the path.
 */
final class SnapshotWaiting implements Waiting, SharedPath.WatchSubscriber {
    private final Attempt attempt;
    private final SharedPath shared;
    private final PathView view; // told what reads find, so that a crowded view can come back; may be null
    private final QueueSnapshot snapshot;
    // Guarded by the attempt's lock.
    private boolean reading; // a read of this generation has not answered
    private SharedPath.Listing earlyRead; // a read that answered before our create did
    private int lastQueueSize;
    private long parentCzxid; // which path of this name the snapshot was read from
    private boolean ownNodeRead; // the snapshot's last read showed our node, and nothing was pruned since
    private boolean stopped;
    // Nodes whose shared watch we wait on. One we no longer need is unsubscribed locally, never removed on the
    // server: ZooKeeper answers the removal of one watcher with a check only, keeping its side of the watch until the
    // node changes, so removing would cost a round trip and gain nothing.
    private final Set<String> watching = new HashSet<>();

    SnapshotWaiting(Attempt attempt, SharedPath shared, PathView view) {
        this.attempt = attempt;
        this.shared = shared;
        this.view = view;
        this.snapshot = new QueueSnapshot(shared);
    }

    @Override
    public void entering(int generation, List<Runnable> todo) {
        // Pipelined: the read goes out right behind the create, so entering costs one round trip.
        reading = true;
        todo.add(() -> read(false));
    }

    @Override
    public void created(List<Runnable> todo) {
        if (earlyRead != null) {
            SharedPath.Listing read = earlyRead;
            earlyRead = null;
            snapshot(read, false, todo);
        } else if (!reading) {
            requestRead(todo);
        }
    }

    /** A read sent now, after our create answered: if our node is missing from it, the node is gone. */
    void readAuthoritatively(List<Runnable> todo) {
        if (!reading) {
            requestRead(todo);
        }
    }

    private void requestRead(List<Runnable> todo) {
        reading = true;
        todo.add(() -> read(true));
    }

    private void read(boolean authoritative) {
        shared.read()
                .whenComplete((listing, error) -> attempt.act(todo -> {
                    if (!attempt.isCurrent(this)) {
                        return;
                    }
                    reading = false;
                    if (error != null) {
                        readFailed(ResultCodes.unwrap(error), todo);
                    } else if (!attempt.own.exist()) {
                        earlyRead = listing; // the create's reply is still on its way
                    } else {
                        snapshot(listing, authoritative, todo);
                    }
                }));
    }

    private void readFailed(Throwable error, List<Runnable> todo) {
        if (error instanceof KeeperException ke && Attempt.isRetryable(ke.code())) {
            if (attempt.own.exist()) {
                attempt.retry(attempt.generation(), todo, this::readAuthoritatively);
            }
            // else the create's answer asks for a read, or retries the whole entry
        } else {
            attempt.failWith(error, todo);
        }
    }

    private void snapshot(SharedPath.Listing listing, boolean authoritative, List<Runnable> todo) {
        SequenceNode[] nodes = listing.nodes();
        OwnNodes own = attempt.own;
        int index = Arrays.binarySearch(nodes, own.last());
        if (index < 0) {
            if (authoritative) {
                attempt.enter(todo); // our node is gone: its session died or somebody deleted it
            } else {
                requestRead(todo); // the read overtook our create (a retry, or a parent just created)
            }
            return;
        }
        if (view != null) {
            view.countedOthers(nodes.length - own.names().size(), todo);
        }
        snapshot.take(nodes, index);
        ownNodeRead = true;
        parentCzxid = listing.parentCzxid();
        // Copies of our create that Curator replayed after a lost reply sit before us, under our own id.
        for (SequenceNode node : snapshot.before()) {
            if (own.isStray(node) && snapshot.prune(node)) {
                String stray = attempt.full(node.name());
                todo.add(() -> attempt.context.deleteGuaranteed(stray));
            } else if (attempt.context.deletes().isLeaving(attempt.path(), node)) {
                snapshot.prune(node); // released, or withdrawn in flight, by this client, which deletes it
            }
        }
        evaluate(todo, false);
    }

    @Override
    public void evaluate(List<Runnable> todo, boolean woken) {
        if (attempt.isOver() || stopped || !snapshot.isTaken() || reading) {
            return;
        }
        List<SequenceNode> queue = snapshot.livePrefix(attempt.own.last());
        lastQueueSize = queue.size();
        attempt.decided(attempt.request.predicate().evaluate(queue, queue.size() - 1), parentCzxid, woken, todo);
    }

    @Override
    public void refresh(List<Runnable> todo) {
        readAuthoritatively(todo);
    }

    @Override
    public void await(Decision decision, boolean woken, List<Runnable> todo) {
        if (woken
                && decision.watch().size() == 1
                && lastQueueSize > 2
                && !watching.contains(decision.watch().get(0).name())) {
            // The node we watched is gone and more remain before us. In a FIFO hand-off it was the holder and the
            // rest left before it, unseen by us: one read beats finding that out a node at a time on the hand-off's
            // critical path.
            requestRead(todo);
            return;
        }
        for (SequenceNode node : decision.watch()) {
            if (attempt.own.isCurrent(node.name())) {
                continue; // our own earlier nodes of a multi-node request leave only with us
            }
            if (watching.add(node.name())) {
                // Waits on the node's one watch in this client, sending it if nobody here waits on the node yet.
                todo.add(() -> shared.watch(node, this));
            }
        }
    }

    @Override
    public void granted(LeaseImpl lease, List<String> names, List<Runnable> todo) {
        // The lease learns of its fate from the session alone. Granted on a queue pruned since it was read, it cannot
        // tell whether somebody deleted our node meanwhile.
        if (ownNodeRead) {
            lease.nodeSeen();
        }
    }

    @Override
    public void stop() {
        stopped = true;
        unwatchAll();
        snapshot.unpin();
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
        attempt.act(todo -> {
            if (!attempt.isCurrent(this) || !watching.contains(node.name())) {
                return; // a watch we no longer need
            }
            switch (rc) {
                case OK -> {} // wait for the watch to fire
                case NONODE -> {
                    unwatch(node.name());
                    snapshot.prune(node);
                    ownNodeRead = false;
                    // One gone node is a race with its owner; a second means the snapshot is stale, and one read
                    // is cheaper than walking it a node at a time.
                    if (snapshot.foundStale()) {
                        requestRead(todo);
                    } else {
                        evaluate(todo, false);
                    }
                }
                default -> {
                    unwatch(node.name());
                    if (Attempt.isRetryable(rc)) {
                        attempt.retry(attempt.generation(), todo, this::readAuthoritatively);
                    } else {
                        attempt.failWith(KeeperException.create(rc, attempt.full(node.name())), todo);
                    }
                }
            }
        });
    }

    @Override
    public void watchFired(WatchedEvent event) {
        attempt.act(todo -> {
            if (!attempt.isCurrent(this)) {
                return;
            }
            String name = ZKPaths.getNodeFromPath(event.getPath());
            unwatch(name); // the shared watch is spent; a re-watch subscribes anew
            if (event.getType() == EventType.NodeDeleted) {
                SequenceNode.parse(name).ifPresent(snapshot::prune);
                ownNodeRead = false;
            }
            if (attempt.phase() == Attempt.Phase.WAITING) {
                evaluate(todo, event.getType() == EventType.NodeDeleted); // re-watches after any other change
            }
        });
    }
}
