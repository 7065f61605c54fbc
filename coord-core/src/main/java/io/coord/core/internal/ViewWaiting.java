package io.coord.core.internal;

import io.coord.core.LeasePredicate.Decision;
import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Decides on the client's view of the path ({@link PathView}): no read, no watch request. The create's reply finds
 * every earlier node in the view; a waiter is woken by the deletion it waits on, which the view hears anyway.
 *
 * <p>It decides only while the view is live on the session that owns our nodes. When the view is not live
 * (reconnecting, re-reading) the attempt waits for the read that makes it live again. When the view turns unusable,
 * or our node is not in it although it should be, the attempt goes on with a read of its own ({@link
 * SnapshotWaiting}).
 */
final class ViewWaiting implements Waiting, PathView.Member, PathView.NodeListener {
    private final Attempt attempt;
    private final PathView view;
    // Guarded by the attempt's lock.
    private final Set<String> listening = new HashSet<>();
    private List<String> ours = List.of(); // our nodes, listened to in case somebody else deletes them
    private boolean seen; // our node was in the view once: missing from it later means it is gone
    private String entering; // the id of our create while it has not answered
    private boolean stopped;

    ViewWaiting(Attempt attempt, PathView view) {
        this.attempt = attempt;
        this.view = view;
    }

    @Override
    public void entering(int generation, List<Runnable> todo) {
        // Nothing but the create: the view holds every node created before it when its reply arrives. Its own create
        // event comes first, though, and must not count against the herd bound as another session's node.
        entering = attempt.own.currentId();
        view.entering(entering);
    }

    @Override
    public void created(List<Runnable> todo) {
        OwnNodes own = attempt.own;
        // Our own nodes leave only with us, unless somebody deletes them: listen for that.
        ours = own.names();
        entering = null; // own() below takes over
        view.hold(ours, this);
        if (!view.own(own.names(), todo)) {
            attempt.fallBack(this, todo); // more contenders than the herd bound: the view is being dropped
            return;
        }
        evaluate(todo, false);
    }

    @Override
    public void evaluate(List<Runnable> todo, boolean woken) {
        if (stopped || attempt.isOver() || !attempt.own.exist()) {
            return;
        }
        OwnNodes own = attempt.own;
        PathView.Verdict verdict =
                view.evaluate(own.last(), own.session(), own.allPrefixes(), own.names(), attempt.request.predicate());
        switch (verdict.kind()) {
            case NOT_READY -> {
                if (attempt.looksOnce()) {
                    attempt.fallBack(this, todo); // one look now, not after a reconnect
                }
            }
            case MISSING -> {
                if (seen) {
                    attempt.enter(todo); // somebody deleted it, and we missed the event: queue again
                } else {
                    attempt.fallBack(this, todo); // never seen: a read tells whether it exists
                }
            }
            case DECIDED -> {
                seen = true;
                for (SequenceNode stray : verdict.strays()) {
                    // A copy of our create that Curator replayed after a lost reply.
                    String path = attempt.full(stray.name());
                    todo.add(() -> attempt.context.deleteGuaranteed(path));
                }
                attempt.decided(verdict.decision(), verdict.parentCzxid(), woken, todo);
            }
        }
    }

    @Override
    public void refresh(List<Runnable> todo) {
        view.refresh(todo); // the read makes the view live again, and the view's members decide anew
    }

    @Override
    public void await(Decision decision, boolean woken, List<Runnable> todo) {
        List<SequenceNode> others = new ArrayList<>(decision.watch().size());
        for (SequenceNode node : decision.watch()) {
            if (!attempt.own.isCurrent(node.name()) && !listening.contains(node.name())) {
                others.add(node);
            }
        }
        if (others.isEmpty()) {
            return;
        }
        if (view.listen(others, this, todo)) {
            others.forEach(node -> listening.add(node.name()));
        } else {
            evaluate(todo, true); // one of them left between the decision and now
        }
    }

    @Override
    public void granted(LeaseImpl lease, List<String> names, List<Runnable> todo) {
        // The lease keeps the view, and hears from it if somebody else deletes its node: then it is LOST. The view
        // holds every node it has not heard deleted, ours among them.
        lease.nodeSeen();
        view.retain();
        PathView.NodeListener holder = node -> lease.deletedElsewhere();
        view.hold(names, holder);
        lease.whenEnded(() -> {
            view.unlisten(names, holder);
            view.release();
        });
    }

    @Override
    public void stop() {
        if (stopped) {
            return;
        }
        stopped = true;
        List<String> names = new ArrayList<>(listening);
        names.addAll(ours);
        view.quit(this, names, this);
        if (entering != null) {
            view.entered(entering);
        }
        listening.clear();
    }

    // ---- from the view, outside every lock ----

    @Override
    public void viewRead() {
        attempt.act(todo -> {
            if (attempt.isCurrent(this)) {
                evaluate(todo, false); // anything may have changed, our own node included
            }
        });
    }

    @Override
    public void viewUnusable(PathView.Unusable why) {
        attempt.act(todo -> attempt.fallBack(this, todo));
    }

    @Override
    public void nodeDeleted(SequenceNode node) {
        attempt.act(todo -> {
            if (!attempt.isCurrent(this)) {
                return;
            }
            if (attempt.own.isCurrent(node.name())) {
                attempt.enter(todo); // somebody deleted our node: queue again
                return;
            }
            listening.remove(node.name());
            if (attempt.phase() == Attempt.Phase.WAITING) {
                evaluate(todo, true);
            }
        });
    }
}
