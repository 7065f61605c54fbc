package io.coord.core.internal;

import io.coord.core.CoordinationException;
import io.coord.core.LeasePredicate;
import io.coord.core.LeasePredicate.Decision;
import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;

/**
 * One contender's way through the queue: create its node(s), learn the queue, wait, be granted. {@link #result}
 * completes with the lease, with null when a try-once attempt was refused, or exceptionally; any outcome but a lease
 * withdraws what the attempt created.
 *
 * <p>This class is the phase machine: entering, granting, withdrawing, retrying, and queueing again on a new session.
 * How the queue is learnt is a {@link Waiting}, chosen per generation: the client's view of the path when it has a
 * usable one ({@link ViewWaiting}, no read at all), a read of our own otherwise ({@link SnapshotWaiting}). A view that
 * becomes unusable mid-way hands the attempt over to a read.
 *
 * <p>Each handler decides under {@link #lock} and makes its ZooKeeper calls after releasing it, so that a callback
 * Curator runs on the calling thread never re-enters a half-made decision.
 */
final class Attempt {
    enum Phase {
        ENTERING,
        WAITING,
        /** Granted: the result is set. */
        DONE,
        /** Refused (a one-look attempt), failed or given up by the caller: whatever it created is being deleted. */
        WITHDRAWN,
        /** To enter once the client's handle is connected; nothing of this generation was sent. */
        UNSENT
    }

    /** What to ask for: how many nodes to hold together, what grants them, and whether to look only once. */
    record Request(int nodes, LeasePredicate predicate, boolean tryOnce) {}

    final LeaseEngine engine;
    final ClientContext context;
    final Request request;
    private final PathView view; // null when the client uses no views
    private SharedPath shared; // joined on first use: reads, node watches, sweeps
    private final AtomicBoolean ended = new AtomicBoolean();
    final CompletableFuture<LeaseImpl> result = new CompletableFuture<>();
    private final long startedAt = System.nanoTime();
    private final Observer[] observers; // told of the start, so to be told of the end
    private volatile Observer.AcquireOutcome gaveUp; // why the caller withdrew, if it did
    private final AtomicBoolean reported = new AtomicBoolean();
    // Completes once a withdrawal that followed the result (a caller's give-up) has sent its deletes.
    private final CompletableFuture<Void> withdrawalSent = new CompletableFuture<>();

    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private Phase phase = Phase.ENTERING;
    private int generation;
    private boolean creating; // this generation's create has not answered
    private boolean checking; // waiting for the path's record to be checked: nothing created yet
    // A timed caller's deadline passed before the first decision: the attempt ends at that decision.
    private volatile boolean lastLook;
    private boolean decidedOnce; // the queue has been looked at once: granted, or told to wait
    private LeaseImpl granted; // the grant, which the caller may have given up on before it could be delivered
    final OwnNodes own = new OwnNodes();
    private Waiting waiting;
    private Waiting rechecking; // decides nothing until the record is checked again on the path the queue came from

    Attempt(LeaseEngine engine, ClientContext context, Request request) {
        this.engine = engine;
        this.context = context;
        this.request = request;
        this.view = context.usesViews() ? context.retainView(engine.path()) : null;
        this.observers = Observations.acquisitionStarted(engine);
        result.whenComplete((lease, error) -> {
            if (lease == null) {
                withdraw();
            }
            end();
            reportEnd(lease, error);
        });
    }

    String path() {
        return engine.path();
    }

    void start() {
        PathRecord record = engine.record();
        if (record != null) {
            act(todo -> checking = true); // before it is tracked: a session's end must not make it enter unchecked
        }
        context.track(this);
        if (request.tryOnce() && !context.isConnected()) {
            result.complete(null); // one look cannot be had without a connection; nothing was written
            return;
        }
        CompletableFuture<Boolean> checked = record == null ? null : record.check(request.tryOnce());
        if (checked == null) {
            act(todo -> {
                checking = false;
                if (!isOver()) {
                    enter(todo);
                }
            });
            return;
        }
        whenChecked(checked, Attempt::checked);
    }

    /**
     * Has {@code then} run on this attempt once the record's check answers, unless the attempt ended first. The check
     * may outlast the attempt (a caller that gives up through an outage): what it holds on to until it answers is a
     * reference, cleared when the attempt ends, and not the attempt.
     */
    private void whenChecked(CompletableFuture<Boolean> checked, RecordAnswer then) {
        AtomicReference<Attempt> self = new AtomicReference<>(this);
        result.whenComplete((lease, error) -> self.set(null));
        checked.whenComplete((mayEnter, error) -> {
            Attempt attempt = self.get();
            if (attempt != null) {
                then.answered(attempt, mayEnter, error);
            }
        });
    }

    /** What an attempt does with its record's answer: a method of its own, so that the answer keeps no attempt alive. */
    private interface RecordAnswer {
        void answered(Attempt attempt, Boolean mayEnter, Throwable error);
    }

    /** The path's record answered: enter, refuse a one-look whose check lost its connection, or fail. */
    private void checked(Boolean mayEnter, Throwable error) {
        act(todo -> {
            checking = false;
            if (isOver()) {
                return; // withdrawn while the record was checked: nothing was written
            }
            if (error != null) {
                failOn(error, todo);
            } else if (mayEnter) {
                enter(todo);
            } else {
                finish(null, todo);
            }
        });
    }

    /** Tells the observers how the attempt ended, once. */
    private void reportEnd(LeaseImpl lease, Throwable error) {
        if (reported.compareAndSet(false, true)) {
            Observations.acquisitionEnded(engine, observers, startedAt, lease, error, gaveUp);
        }
    }

    /** Whether the attempt ends at its first decision: a one-look call, or a timed one that is out of time. */
    boolean looksOnce() {
        return request.tryOnce() || lastLook;
    }

    /**
     * The caller's deadline passed before the queue was looked at once (its create, say, had not answered): the
     * attempt then ends at its first decision, as a one-look attempt does, so that a timeout shorter than a round
     * trip gets what a zero timeout gets, the lock if it is free, as Curator's and java.util.concurrent's locks give
     * it. True, too, for an attempt granted whose result is about to be set. False if the attempt has been told to
     * wait already, or is over: then the caller gives up. The look is bounded as a one-look attempt's is: it ends
     * refused once the connection drops.
     */
    boolean lookOnceMore() {
        AtomicBoolean looking = new AtomicBoolean();
        act(todo -> {
            if (phase == Phase.DONE) {
                looking.set(true); // granted, its result about to be set: the caller takes the lease
                return;
            }
            if (decidedOnce || isOver()) {
                return; // it was told to wait, and may have queued again since (a new session): that was its look
            }
            looking.set(true);
            lastLook = true;
            if (!context.isConnected() || phase == Phase.UNSENT) {
                finish(null, todo); // one look cannot be had without a connection
            } else if (!creating && !checking && own.exist()) {
                waiting.evaluate(todo, false); // a view not ready yet: one look now, as a one-look attempt has
            }
        });
        return looking.get();
    }

    /** The caller withdraws, for the reason given; false if the result was set first. */
    boolean giveUp(Observer.AcquireOutcome why) {
        gaveUp = why;
        if (!result.cancel(false)) {
            return false;
        }
        // The withdrawal is a dependent of the result, which a thread completing the result at the same moment may
        // run instead of this one: wait until its deletes are sent, so that the caller's next request lands after.
        // Sending never blocks, and the withdrawal waits for nothing this caller holds.
        withdrawalSent.join();
        return true;
    }

    void fail(RuntimeException error) {
        result.completeExceptionally(error);
    }

    /** The session died: its nodes are gone, or going, and its watches with them. Queue again on the next one. */
    void sessionLost() {
        act(todo -> {
            if (isOver() || checking || (own.exist() && own.session() == context.sessionId())) {
                // Done, entering once the record's check answers, or already queued on the new session (LOST can
                // arrive late).
                return;
            }
            requeue(todo);
        });
    }

    /**
     * A new session began with no loss told of the last (Curator tells of no second loss while it still reports the
     * first): an attempt whose nodes belong to an older session queues again, as {@link #sessionLost} has it do.
     * One whose create is unanswered is left to that answer, which queues again if it made nodes of an ended session
     * (see {@link #created}): queueing it now would cost a create and a delete at every expiry whose LOST came first.
     */
    void sessionReplaced() {
        act(todo -> {
            if (!isOver() && !checking && own.exist() && own.session() != context.sessionId()) {
                requeue(todo);
            }
        });
    }

    private void requeue(List<Runnable> todo) {
        if (waiting != null) {
            waiting.stop();
        }
        if (looksOnce()) {
            finish(null, todo);
        } else {
            enter(todo);
        }
    }

    /**
     * The connection went down. A one-look attempt ends refused, as it would had it started now, instead of waiting
     * for the connection: whatever it created is withdrawn. Others wait on; the connection's return or the session's
     * end decides for them.
     */
    void suspended() {
        if (looksOnce()) {
            act(todo -> {
                if (!isOver()) {
                    finish(null, todo);
                }
            });
        }
    }

    // ---- entering ----

    /**
     * Queues anew: deletes what the last generation made and creates with a fresh id, once the client's handle is
     * connected. Curator would keep a create made while it is not, and send it once it is, even if the caller had given
     * up by then (as a timed call does at its deadline): the node would queue ahead of others' until deleted again.
     * So an attempt waits for the connection to enter with ({@link #connected}), and one that gives up before then has
     * sent nothing.
     */
    void enter(List<Runnable> todo) {
        deleteOurs(todo);
        if (waiting != null) {
            waiting.stop();
        }
        int gen = ++generation;
        if (!context.handleConnected()) {
            waitForConnection(todo);
            return;
        }
        String prefix = own.newGeneration();
        phase = Phase.ENTERING;
        creating = true;
        // The view's watch and read, if it has none yet, go out before the create: the create's reply then finds
        // every earlier node in the view.
        waiting = chooseWaiting(todo);
        todo.add(() -> create(gen, prefix));
        waiting.entering(gen, todo);
    }

    /** Under the lock: enters once connected, or ends now if it cannot wait for the connection. */
    private void waitForConnection(List<Runnable> todo) {
        if (looksOnce()) {
            finish(null, todo); // one look cannot be had without a connection
        } else if (context.isClosed()) {
            failAs(ClientContext.closedError(engine.path()), todo);
        } else {
            own.forget(); // the last generation's nodes are being deleted
            creating = false; // an older generation's create still in flight finds itself stale
            waiting = null; // a stopped strategy's callbacks find themselves replaced
            phase = Phase.UNSENT;
            context.attemptWaitsForConnection();
        }
    }

    /** The client's handle is connected: an attempt that waited for a connection enters now. */
    void connected() {
        act(todo -> {
            if (phase == Phase.UNSENT) {
                enter(todo);
            }
        });
    }

    private Waiting chooseWaiting(List<Runnable> todo) {
        if (view != null && context.usesViews()) {
            ViewWaiting onView = new ViewWaiting(this, view);
            if (view.join(onView, todo)) {
                return onView;
            }
        }
        return new SnapshotWaiting(this, shared(), view);
    }

    /** The view cannot serve this attempt any more: learn the queue from a read instead. */
    void fallBack(Waiting from, List<Runnable> todo) {
        if (waiting != from || isOver()) {
            return;
        }
        from.stop();
        SnapshotWaiting onRead = new SnapshotWaiting(this, shared(), view);
        waiting = onRead;
        if (!creating) {
            onRead.readAuthoritatively(todo); // our nodes exist: a read that misses them means they are gone
        }
    }

    private void create(int gen, String prefix) {
        try {
            NodeCreator.create(
                    context.client(),
                    engine.path(),
                    prefix + engine.prefix(),
                    engine.nodeData(),
                    request.nodes(),
                    engine.record() == null,
                    (rc, made) -> created(gen, prefix, rc, made));
        } catch (Exception e) {
            act(todo -> {
                creating = false; // not sent
                context.deletes().withdrawalDone(OwnNodes.idOf(prefix));
                failWith(e, todo);
            });
        }
    }

    private void created(int gen, String prefix, KeeperException.Code rc, NodeCreator.Created made) {
        act(todo -> {
            if (gen != generation) {
                List<String> stale = made == null ? List.of() : made.names();
                String id = OwnNodes.idOf(prefix);
                // A read-only server's refusal may answer Curator's resend of a create that landed: in doubt too.
                if (made != null || !(ResultCodes.isInDoubt(rc) || rc == KeeperException.Code.NOTREADONLY)) {
                    todo.add(() -> CompletableFuture.allOf(stale.stream()
                                    .map(name -> context.deleteGuaranteed(full(name)))
                                    .toArray(CompletableFuture[]::new))
                            .thenRun(() -> context.deletes().withdrawalDone(id)));
                }
                // else it may have landed unseen: the id stays, and the sweep below deletes what it finds by it.
                // A replayed copy of this create may have landed unseen, even after a sweep at withdrawal. Sweep the
                // old generations' ids only, unless withdrawn: the current one may name a granted lease.
                sweepLater(todo, phase != Phase.WITHDRAWN && phase != Phase.UNSENT, stale);
                return;
            }
            if (rc == KeeperException.Code.NONODE && made == null && engine.record() != null) {
                // The path is gone, and its primitive makes it (with what it records there): create again once it
                // exists, in this generation, rather than retry into the same NONODE.
                todo.add(() -> makePath(gen, prefix));
                return;
            }
            creating = false;
            if (rc == KeeperException.Code.OK && made.names().stream().anyMatch(Attempt::numberedAtCounterEnd)) {
                made.names().forEach(name -> todo.add(() -> context.deleteGuaranteed(full(name))));
                failAs(counterRanOut(engine.path()), todo);
            } else if (rc == KeeperException.Code.OK && madeOnAnEndedSession(made)) {
                // The news that requeues waiters of an ended session passed this attempt by while it had no nodes,
                // and its create answered since with nodes of that session: they die with it. Queue again.
                made.names().forEach(name -> todo.add(() -> context.deleteGuaranteed(full(name))));
                requeue(todo);
            } else if (rc == KeeperException.Code.OK) {
                own.created(made);
                waiting.created(todo);
            } else {
                if (made != null) {
                    made.names().forEach(name -> todo.add(() -> context.deleteGuaranteed(full(name))));
                }
                if (isRetryable(rc)) {
                    retry(gen, todo, this::enter);
                } else if (rc == KeeperException.Code.NOTREADONLY) {
                    // A read-only connection (canBeReadOnly) counts as none: enter again once writes go through. Its
                    // news may come after this answer, which might also refuse Curator's resend of a create that
                    // landed before: the next generation finds such a node as ours.
                    retryWhenWritable(gen, todo);
                } else {
                    failWith(KeeperException.create(rc, engine.path()), todo);
                }
            }
        });
    }

    /** Whether {@code made} belongs to a session other than the client's current one (unknown counts as current). */
    private boolean madeOnAnEndedSession(NodeCreator.Created made) {
        long now = context.sessionId();
        return now != 0 && made.session() != now;
    }

    /** Asks the primitive to make the missing path, then sends this generation's create again. */
    private void makePath(int gen, String prefix) {
        CompletableFuture<Void> made;
        try {
            made = engine.record().makePath();
        } catch (RuntimeException e) {
            made = CompletableFuture.failedFuture(e);
        }
        made.whenComplete((ok, error) -> act(todo -> {
            if (gen != generation || isOver()) {
                context.deletes().withdrawalDone(OwnNodes.idOf(prefix)); // nothing was created
                return; // withdrawn, failed or queued anew meanwhile
            }
            if (error == null) {
                todo.add(() -> create(gen, prefix));
                return;
            }
            creating = false;
            if (ResultCodes.isInDoubt(ResultCodes.unwrap(error))) {
                retry(gen, todo, this::enter); // as a create lost with its connection: a one-look is refused
            } else {
                failOn(error, todo);
            }
        }));
    }

    // ---- deciding ----

    /**
     * What the queue says, however it was learnt, from the path that {@code parentCzxid} made (0: not known). Taken
     * only if the path's record, if it keeps one, was checked on that same path: an operator may delete a semaphore's
     * path while this instance runs, and another client make it again with another limit, which this instance must
     * not then enforce silently beside it.
     */
    void decided(Decision decision, long parentCzxid, boolean woken, List<Runnable> todo) {
        if (!recordChecked(parentCzxid, todo)) {
            return;
        }
        decidedOnce = true;
        if (decision.granted()) {
            grant(todo);
            return;
        }
        if (looksOnce()) {
            finish(null, todo);
            return;
        }
        phase = Phase.WAITING;
        waiting.await(decision, woken, todo);
    }

    /**
     * Whether the path's record, if it keeps one, was checked on the path the queue was learnt from. If not, settles
     * which is stale, and decides again once it is fresh: the record is checked again when the queue's path is newer
     * (its refusal fails the attempt); the queue is learnt again when the record's check is newer, or the queue's
     * path is not known.
     */
    private boolean recordChecked(long parentCzxid, List<Runnable> todo) {
        PathRecord record = engine.record();
        if (record == null) {
            return true;
        }
        long checkedOn = record.checkedOn();
        if (parentCzxid != 0 && parentCzxid == checkedOn) {
            return true;
        }
        if (parentCzxid == 0 || parentCzxid < checkedOn) {
            waiting.refresh(todo);
            return false;
        }
        rechecking = waiting;
        boolean oneLook = looksOnce();
        todo.add(() -> {
            CompletableFuture<Boolean> checked;
            try {
                checked = record.checkAgain(oneLook);
            } catch (RuntimeException e) {
                checked = CompletableFuture.failedFuture(e);
            }
            whenChecked(checked, Attempt::rechecked);
        });
        return false;
    }

    /** The record's check that a decision waited for answered: decide again, refuse a one-look, or fail. */
    private void rechecked(Boolean mayEnter, Throwable error) {
        act(todo -> {
            Waiting from = rechecking;
            rechecking = null;
            if (from == null || !isCurrent(from)) {
                return; // another decision's check took it up, or the attempt moved on
            }
            if (error != null) {
                failOn(error, todo);
            } else if (mayEnter) {
                from.evaluate(todo, false);
            } else {
                finish(null, todo); // a one-look whose check lost its connection
            }
        });
    }

    private void grant(List<Runnable> todo) {
        List<String> paths = own.names().stream().map(this::full).toList();
        LeaseImpl lease = context.leases().register(engine, paths, own.token(), own.session());
        if (lease == null) {
            enter(todo); // the nodes belong to a session that is no longer ours: dead or dying
            return;
        }
        List<String> names = own.take(); // the lease owns them now
        granted = lease;
        waiting.granted(lease, names, todo);
        finish(lease, todo);
    }

    void finish(LeaseImpl lease, List<Runnable> todo) {
        if (lease == null) {
            withdrawing(todo); // its deletes go out before the caller hears, so that its next look cannot meet them
        } else {
            phase = Phase.DONE;
            waiting.stop();
        }
        todo.add(() -> {
            if (lease != null && !result.isDone()) {
                // Before the caller can have the lease, so that the grant is never reported after the hold's end.
                reportEnd(lease, null);
            }
            if (!result.complete(lease) && lease != null) {
                lease.close(); // withdrawn while the grant was being made
            }
        });
    }

    // ---- leaving ----

    /** Deletes whatever this attempt created, if that is not under way yet. Runs once the result is not a lease. */
    private void withdraw() {
        try {
            act(this::withdrawing);
        } finally {
            withdrawalSent.complete(null);
        }
    }

    /**
     * Under the lock: deletes whatever this attempt created, once. A refusal or failure does it before it sets the
     * result, so that the caller's next attempt is sent after these deletes and cannot find its own nodes queued.
     */
    private void withdrawing(List<Runnable> todo) {
        if (phase == Phase.WITHDRAWN) {
            return;
        }
        phase = Phase.WITHDRAWN;
        if (granted != null) {
            // Granted as the caller gave up: released by the caller's thread too, before it hears, so that its next
            // look cannot meet the lease's node (the grant's own thread closes it as well; closing is idempotent).
            todo.add(granted::close);
        }
        generation++; // a create still in flight now finds itself stale and deletes what it made
        if (creating) {
            context.deletes()
                    .withdrawnInFlight(own.currentId()); // until then, this client's next look passes its nodes by
        }
        if (waiting != null) {
            waiting.stop(); // none yet if the attempt ends before it entered
        }
        List<String> deleting = deleteOurs(todo);
        sweepLater(todo, false, deleting);
    }

    /**
     * Deletes stray copies of our creates: Curator sends a create again when its reply is lost, and the first copy
     * then exists without our knowing its name. The view finds them by our ids at no cost; without one, a read does.
     */
    private void sweepLater(List<Runnable> todo, boolean spareCurrent, List<String> deleting) {
        List<String> prefixes = own.prefixes(spareCurrent);
        if (prefixes.isEmpty()) {
            return;
        }
        Optional<List<String>> strays = view == null ? Optional.empty() : view.named(prefixes);
        if (strays.isPresent()) {
            strays.get().stream()
                    .filter(name -> !deleting.contains(name))
                    .forEach(name -> todo.add(() -> context.deleteGuaranteed(full(name))));
        } else if (ended.get()) {
            // A late reply after the attempt left the path's shared state: joined for this sweep alone, and left.
            SharedPath once = context.join(engine.path());
            todo.add(() -> {
                once.sweep(prefixes);
                context.leave(once);
            });
        } else {
            SharedPath sweeper = shared();
            todo.add(() -> sweeper.sweep(prefixes));
        }
    }

    private void end() {
        if (ended.compareAndSet(false, true)) {
            lock.lock();
            try {
                if (waiting != null) {
                    waiting.stop();
                }
            } finally {
                lock.unlock();
            }
            context.untrack(this);
            if (shared != null) {
                context.leave(shared);
            }
            if (view != null) {
                view.release();
            }
        }
    }

    /** Deletes this generation's nodes, which it hands over to nobody; returns their names. */
    List<String> deleteOurs(List<Runnable> todo) {
        List<String> names = own.take();
        for (String name : names) {
            String path = full(name);
            todo.add(() -> context.deleteGuaranteed(path));
        }
        return names;
    }

    // ---- plumbing ----

    /** The per-path state shared with this client's other contenders: joined once, left when the attempt ends. */
    private SharedPath shared() {
        if (shared == null) {
            shared = context.join(engine.path());
        }
        return shared;
    }

    int generation() {
        return generation;
    }

    Phase phase() {
        return phase;
    }

    /** Whether this is still the strategy in charge; callbacks of a replaced one are ignored. */
    boolean isCurrent(Waiting w) {
        return waiting == w && !isOver();
    }

    void retry(int gen, List<Runnable> todo, Consumer<List<Runnable>> step) {
        retry(gen, todo, step, context::whenConnected);
    }

    /** Enters again once a connection takes writes: a read-only server refused the create. */
    private void retryWhenWritable(int gen, List<Runnable> todo) {
        retry(gen, todo, this::enter, task -> context.writable().thenRun(task));
    }

    private void retry(int gen, List<Runnable> todo, Consumer<List<Runnable>> step, Consumer<Runnable> when) {
        if (looksOnce()) {
            finish(null, todo);
            return;
        }
        todo.add(() -> {
            if (context.isClosed()) {
                fail(ClientContext.closedError(engine.path()));
                return;
            }
            when.accept(() -> act(t -> {
                if (gen == generation && !isOver()) {
                    step.accept(t);
                }
            }));
        });
    }

    /** Fails with the primitive's own verdict on its path record (a record of another limit, say) as it is. */
    private void failOn(Throwable recordError, List<Runnable> todo) {
        Throwable cause = ResultCodes.unwrap(recordError);
        if (cause instanceof RuntimeException refused && !context.isClosed()) {
            failAs(refused, todo);
        } else {
            failWith(cause, todo);
        }
    }

    void failWith(Throwable cause, List<Runnable> todo) {
        String what =
                cause instanceof KeeperException ? "ZooKeeper refused a request for " : "the acquisition failed on ";
        failAs(
                context.isClosed()
                        ? ClientContext.closedError(engine.path())
                        : new CoordinationException(what + engine.path() + ": " + cause, cause),
                todo);
    }

    private void failAs(RuntimeException error, List<Runnable> todo) {
        try {
            if (phase != Phase.DONE) {
                withdrawing(todo); // a failure after the grant leaves the lease's nodes alone: its result is set
            }
        } finally {
            todo.add(() -> result.completeExceptionally(error)); // whatever the withdrawal met: the caller hears
        }
    }

    /** Runs {@code step} under the lock, then the ZooKeeper calls it asked for. */
    void act(Consumer<List<Runnable>> step) {
        List<Runnable> todo = new ArrayList<>(2);
        lock.lock();
        try {
            step.accept(todo);
        } catch (RuntimeException e) {
            // A predicate that throws, or a broken invariant: fail loudly rather than leave a node queued for ever.
            try {
                failWith(e, todo);
            } catch (RuntimeException again) {
                e.addSuppressed(again); // the withdrawal failed too; the result is failed all the same
            }
        } finally {
            lock.unlock();
        }
        todo.forEach(Runnable::run);
    }

    /** The result is set, or about to be: nothing more to decide. */
    boolean isOver() {
        return phase == Phase.DONE || phase == Phase.WITHDRAWN;
    }

    String full(String child) {
        return ZKPaths.makePath(engine.path(), child);
    }

    /**
     * Whether ZooKeeper numbered the node at the end of its counter, the count of creates under the parent in 32
     * bits: it numbers every child after the 2,147,483,647th that same number (and creates in flight together at the
     * end past it, into the negative numbers), so such a node cannot be placed in the queue.
     */
    private static boolean numberedAtCounterEnd(String name) {
        long sequence = SequenceNode.parse(name).orElseThrow().sequence();
        return sequence == Integer.MAX_VALUE || sequence < 0;
    }

    private static CoordinationException counterRanOut(String path) {
        return new CoordinationException("the sequence counter of " + path + " has run out: ZooKeeper numbers the"
                + " children of a path with a 32-bit count of the creates under it, which ends at 2147483647, and"
                + " gives every later child that same number, so contenders there can no longer be ordered. Once"
                + " nobody uses " + path + ", delete it and its count starts again from 0 (ZooKeeper deletes an"
                + " empty container path, as a mutex's is, by itself)");
    }

    static boolean isRetryable(KeeperException.Code rc) {
        // A parent container can be reaped between Curator creating it and our create: NONODE is worth a retry too.
        return ResultCodes.isInDoubt(rc) || rc == KeeperException.Code.NONODE;
    }
}
