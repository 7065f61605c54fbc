package io.coord.core.internal;

import io.coord.core.LeasePredicate;
import io.coord.core.LeasePredicate.Decision;
import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.EventType;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client's view of one path's children: a single {@code PERSISTENT_RECURSIVE} watch on the path, primed by one
 * children read and kept current from the NodeCreated and NodeDeleted events that follow. Every attempt, lease and
 * observer of the client on the path shares it, so that entering costs only the create and a hand-off no request at
 * all.
 *
 * <p>What makes deciding on it safe:
 *
 * <ul>
 *   <li>A session's events and async replies come through one queue in the server's order. When a create's async
 *       reply arrives, the event of every change made before it has been applied here. The view is read and changed
 *       only on that queue's thread, and no decision is ever taken on a synchronous reply.
 *   <li>Events during a disconnection are lost. From the moment the connection drops until a read sent on the new
 *       connection has answered, the view is not {@linkplain #isLive live} and nothing is decided on it. The read
 *       replaces the view; events apply idempotently. A read after the view has heard events goes behind a sync: an
 *       event does not move the handle's last seen zxid on, as a reply does, so the server of a new connection may
 *       not have applied what the view already heard, and a read there would take the view back in time (to a leader
 *       whose deletion an observer has already been told of).
 *   <li>Session expiry takes the watch along: on the next session it is added again and the path read again. An add
 *       the old session left unanswered is one Curator sends again on the new handle: the view waits for its answer
 *       rather than forget a watch that may land on the new session and outlive every user.
 *   <li>Deleting the path (a reaped container) clears the view, and sequences start over when it is created again.
 *   <li>The server withholds events about nodes the client may not read. Creates are counted ({@link ViewNodes}), so
 *       a missed one is noticed; the readability of nodes listed by a read is checked before anyone waits on them.
 *       Either finding makes the view unusable on this path.
 *   <li>A server older than 3.6 cannot add the watch: the client then never uses views.
 * </ul>
 *
 * <p>Every event goes to every client with a view of the path: {@link HerdBound} says when a client does without
 * one ({@link Unusable#CROWDED}). So a path that is crowded from the start never sees a burst of views, and a path
 * used once in a while never pays for one.
 *
 * <p>The view lives while something of the client uses the path, and for a linger after the last use
 * ({@link ViewUsers}): then its watch is removed on the server ({@link ClientContext#dropWatches}, type
 * PersistentRecursive). A view that becomes unusable drops its watch at once. Who listens to which node is kept in
 * {@link ViewListeners}.
 *
 * <p>Locks: callers may hold their own lock while calling in, so the view never calls out under its lock, and never
 * calls a member back from a method a member called: whatever follows (requests, notifications) is added to the
 * caller's {@code todo}, to run once every lock is released.
 */
final class PathView {
    private static final Logger log = LoggerFactory.getLogger(PathView.class);
    /** Why a path does not use its view. */
    enum Unusable {
        /** More nodes of other sessions than the herd bound. */
        CROWDED,
        /** Some node's events are withheld from this client (READ ACL). */
        BLIND,
        /** The server cannot add a persistent watch (before 3.6), or refused it. */
        UNSUPPORTED,
        /** The client follows the path with plain watches ({@link ClientContext#followsWithPlainWatches}). */
        PLAIN_WATCHES
    }

    /** Something deciding on the view: told when it was read anew, and when it must not be used any more. */
    interface Member {
        /** The view was replaced by a read: anything may have changed. */
        void viewRead();

        /** The view is unusable from now on: stop deciding on it. */
        void viewUnusable(Unusable why);
    }

    /** Hears of the deletion of a node it waits on or holds, and of changes to its data. */
    interface NodeListener {
        void nodeDeleted(SequenceNode node);

        /** The node's data changed: a revocation request, for a holder that listens for one. */
        default void nodeDataChanged(SequenceNode node) {}
    }

    /** Hears of every change of the view: observers. */
    interface ChangeListener extends Member {
        void viewChanged();
    }

    /**
     * What the view says about a contender's node; {@code parentCzxid} tells which path of this name the decision was
     * taken on (see {@link ViewNodes#parentCzxid}).
     */
    record Verdict(Kind kind, Decision decision, List<SequenceNode> strays, long parentCzxid) {
        enum Kind {
            /** Not live, or not on the node's session: wait for the next read. */
            NOT_READY,
            /** Live, and the node is not in it. */
            MISSING,
            DECIDED
        }

        static final Verdict NOT_READY = new Verdict(Kind.NOT_READY, null, List.of(), 0);
        static final Verdict MISSING = new Verdict(Kind.MISSING, null, List.of(), 0);
    }

    private enum WatchState {
        NONE,
        ADDING,
        SET,
        DROPPING
    }

    private final ClientContext context;
    private final String path;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private final ViewNodes nodes = new ViewNodes();
    private final Set<Member> members = new LinkedHashSet<>();
    private final ViewListeners listeners = new ViewListeners();
    private final HerdBound herd = new HerdBound();
    private final ViewUsers users;
    private boolean retired; // out of the registry: later users get a new view
    private WatchState watch = WatchState.NONE;
    private int generation; // of the watcher object: events for an older one are ignored
    private long readSession; // the session the handle reported when the last read that answered was sent
    private long watchSession;
    private boolean wantWatch; // add the watch once the drop in flight has answered
    private boolean sessionEnded; // until the next session, where the watch is added again anyway
    private boolean live;
    private boolean reading;
    private boolean heard; // live once: every later read goes behind a sync
    private boolean confirming;
    private Unusable unusable;

    PathView(ClientContext context, String path) {
        this.context = context;
        this.path = path;
        this.users = new ViewUsers(this::lingerNanos, this::lingered);
    }

    String path() {
        return path;
    }

    // ---- users and lifetime ----

    /** Under the registry's update: one more user; false if retired (the registry then makes a new view). */
    boolean retain() {
        lock.lock();
        try {
            if (retired) {
                return false;
            }
            users.join();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Like {@link #retain}, only while usable; false if not. */
    boolean retainIfUsable() {
        lock.lock();
        try {
            if (retired || unusable != null) {
                return false;
            }
            users.join();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** One user fewer. The last one starts the linger, after which the watch is dropped. */
    void release() {
        lock.lock();
        try {
            if (users.leave() && !retired) {
                // An unusable view lingers too, without a watch: it remembers for a while not to add one.
                users.startLinger();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * How long the view outlives its last user. A crowded view holds no watch, only its verdict, and keeps that for
     * at least {@link HerdBound#CROWDED_MEMORY}: a burst on a hot path then queues with predecessor watches at once,
     * instead of bringing back the views of those who find it empty (bench scenario 9).
     */
    private long lingerNanos() {
        long linger = context.viewSettings().lingerNanos();
        return unusable == Unusable.CROWDED
                ? Math.max(linger, Deadline.saturatedNanos(HerdBound.CROWDED_MEMORY))
                : linger;
    }

    private void lingered(long due) {
        act(todo -> {
            if (!retired && users.lingerOver(due)) {
                retireOrDrop(todo);
            }
        });
    }

    /** Unused: drop the watch, or leave the registry if there is none. */
    private void retireOrDrop(List<Runnable> todo) {
        switch (watch) {
            case SET -> drop(todo);
            case NONE -> {
                retired = true;
                todo.add(() -> context.retire(this));
            }
            case ADDING, DROPPING -> {} // decided again when it answers
        }
    }

    // ---- members ----

    /**
     * Joins {@code member} to the view, adding the watch and reading the path if it has none. False if the view is
     * unusable here (the member then works without it). The caller retained the view first.
     */
    boolean join(Member member, List<Runnable> todo) {
        lock.lock();
        try {
            // An acquisition joins only once a read has counted the path (its own, without the view, the first
            // time): a client never adds a view to a path already past the herd bound. An observer joins anyway.
            // Nobody joins on a path the client follows with plain watches (see ClientContext).
            if (unusable != null
                    || (!herd.counted() && !(member instanceof ChangeListener))
                    || context.followedWithPlainWatches(path)) {
                return false;
            }
            members.add(member);
            if (member instanceof ChangeListener observer) {
                listeners.observe(observer);
            }
            ensureWatch(todo);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** The client follows the path with plain watches from now on: the view drops its watch, its members go on without. */
    void followedWithPlainWatches() {
        act(todo -> becomeUnusable(Unusable.PLAIN_WATCHES, todo));
    }

    /**
     * A create of this client named with {@code _c_<id>-} is on its way. Its create event comes before its reply, and
     * until the reply ({@link #own}) or {@link #entered}, the herd bound counts its nodes as ours.
     */
    void entering(String id) {
        lock.lock();
        try {
            herd.entering(id);
        } finally {
            lock.unlock();
        }
    }

    /** The create named with {@code id} will not be answered to the view: its creator stopped deciding on it. */
    void entered(String id) {
        lock.lock();
        try {
            herd.entered(id);
        } finally {
            lock.unlock();
        }
    }

    /** The member stops deciding on the view, and stops listening to the nodes it listened to. */
    void quit(Member member, Collection<String> listenedTo, NodeListener listener) {
        lock.lock();
        try {
            members.remove(member);
            if (member instanceof ChangeListener observer) {
                listeners.stopObserving(observer);
            }
            listenedTo.forEach(name -> listeners.unlisten(name, listener));
        } finally {
            lock.unlock();
        }
    }

    /** The lowest node as the live view holds it; empty while the view is not live. */
    Optional<PathFollower.Head> head() {
        lock.lock();
        try {
            return live && unusable == null ? Optional.of(new PathFollower.Head(nodes.first())) : Optional.empty();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Runs {@code predicate} on the queue up to {@code ours}, if the view is live on {@code session}, the session that
     * owns {@code ours}: a view kept on another session says nothing about what was created before it. Stray copies of
     * our creates before ours (named with one of our {@code prefixes}, other than {@code current}) are left out and
     * returned, to be deleted: a copy Curator replayed, or a create of an earlier generation whose reply was lost.
     */
    Verdict evaluate(
            SequenceNode ours,
            long session,
            List<String> prefixes,
            Collection<String> current,
            LeasePredicate predicate) {
        lock.lock();
        try {
            if (!live || unusable != null || watch != WatchState.SET || session != watchSession) {
                return Verdict.NOT_READY;
            }
            int index = nodes.indexOf(ours);
            if (index < 0) {
                return Verdict.MISSING;
            }
            List<SequenceNode> queue = nodes.upTo(index);
            List<SequenceNode> strays = new ArrayList<>(0);
            for (String prefix : prefixes) {
                for (SequenceNode node : nodes.withId(OwnNodes.idOf(prefix))) {
                    if (node.compareTo(ours) < 0 && !current.contains(node.name())) {
                        strays.add(node);
                    }
                }
            }
            if (!strays.isEmpty()
                    || (context.deletes().anyLeaving(path)
                            && queue.stream().anyMatch(node -> context.deletes().isLeaving(path, node)))) {
                List<SequenceNode> kept = new ArrayList<>(queue);
                kept.removeAll(strays);
                kept.removeIf(node -> context.deletes().isLeaving(path, node)); // being deleted by this client
                queue = kept;
            }
            Decision decision = predicate.evaluate(queue, queue.size() - 1);
            return new Verdict(Verdict.Kind.DECIDED, decision, List.copyOf(strays), nodes.parentCzxid());
        } finally {
            lock.unlock();
        }
    }

    /**
     * Reads the path again, deciding nothing until the read answers: a member must know which path of this name the
     * view shows, and the view cannot say (the path was made again since the last read).
     */
    void refresh(List<Runnable> todo) {
        lock.lock();
        try {
            if (live && unusable == null) {
                resync(todo); // else a read on its way, or the view's end, tells the members
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * The names of the nodes named with one of {@code prefixes} ({@code _c_<id>-}); empty if the view is not live:
     * then only a read can find them.
     */
    Optional<List<String>> named(Collection<String> prefixes) {
        lock.lock();
        try {
            if (!live || unusable != null) {
                return Optional.empty();
            }
            List<String> found = new ArrayList<>(0);
            for (String prefix : prefixes) {
                nodes.withId(OwnNodes.idOf(prefix)).forEach(node -> found.add(node.name()));
            }
            return Optional.of(found);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Records {@code names} as this client's, for the herd bound. Returns false if the live view now holds more nodes
     * of other sessions than the bound: the view then turns {@link Unusable#CROWDED}, and its members are told.
     */
    boolean own(Collection<String> names, List<Runnable> todo) {
        lock.lock();
        try {
            herd.own(names, nodes);
            return !live || checkCrowd(todo); // not live: counted again when it is read
        } finally {
            lock.unlock();
        }
    }

    /**
     * Listens for the deletion of each node; false, listening to none, if one of them is not in the view any more.
     * A node whose readability is unknown is checked, in one request for all such nodes.
     */
    boolean listen(Collection<SequenceNode> watched, NodeListener listener, List<Runnable> todo) {
        lock.lock();
        try {
            for (SequenceNode node : watched) {
                if (!nodes.contains(node)) {
                    return false;
                }
            }
            boolean check = false;
            for (SequenceNode node : watched) {
                listeners.listen(node.name(), listener);
                check |= !nodes.isConfirmed(node.name());
            }
            if (check && !confirming && live) {
                confirm(todo);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Listens for the deletion of nodes we hold, whether or not the view is live: a holder's loss is news anyway. */
    void hold(Collection<String> names, NodeListener listener) {
        lock.lock();
        try {
            names.forEach(name -> listeners.listen(name, listener));
        } finally {
            lock.unlock();
        }
    }

    void unlisten(Collection<String> names, NodeListener listener) {
        lock.lock();
        try {
            names.forEach(name -> listeners.unlisten(name, listener));
        } finally {
            lock.unlock();
        }
    }

    /** A read outside the view (predecessor-watch mode) found {@code others} nodes of other sessions. */
    void countedOthers(int others, List<Runnable> todo) {
        lock.lock();
        try {
            switch (herd.countedOthers(others, context.viewSettings().maxOthers(), unusable)) {
                case CROWDED -> becomeUnusable(Unusable.CROWDED, todo);
                case QUIET -> unusable = null;
                case UNCHANGED -> {}
            }
        } finally {
            lock.unlock();
        }
    }

    // ---- the watch ----

    private void ensureWatch(List<Runnable> todo) {
        switch (watch) {
            case NONE -> {
                if (!sessionEnded) {
                    add(todo);
                }
            }
            case DROPPING -> wantWatch = true;
            case ADDING, SET -> {}
        }
    }

    /**
     * Adds the watch with a watcher of its own generation, and reads right behind it (one round trip; a sync before
     * the read adds one on a view that was live before).
     */
    private void add(List<Runnable> todo) {
        if (context.server().hasOlderServer()) {
            becomeUnusable(Unusable.UNSUPPORTED, todo); // the add would break the connection once more
            return;
        }
        int gen = ++generation;
        log.debug("{}: adding the watch", this);
        watch = WatchState.ADDING;
        live = false;
        wantWatch = false;
        Watcher watcher = event -> watched(gen, event);
        todo.add(() -> {
            long sent = context.server().newerRequestSent();
            try {
                context.client()
                        .watchers()
                        .add()
                        .withMode(AddWatchMode.PERSISTENT_RECURSIVE)
                        .inBackground((c, e) -> added(gen, sent, Code.get(e.getResultCode())))
                        .usingWatcher(watcher)
                        .forPath(path);
            } catch (Exception e) {
                added(gen, sent, Code.SYSTEMERROR);
            }
        });
        if (!reading) {
            read(todo);
        }
    }

    private void added(int gen, long sent, Code rc) {
        // The session of the handle that answered: Curator may have sent the add again on a newer one.
        long session = context.sessionId();
        boolean olderServer = context.server().answeredAsOlderServer(rc, sent);
        act(todo -> {
            log.debug("{}: watch of generation {} added: {}", this, gen, rc);
            if (gen != generation || watch != WatchState.ADDING) {
                return; // a newer session's add is on its way
            }
            if (olderServer && rc != Code.OK) { // one that is on the server is dropped as from any unusable view
                watch = WatchState.NONE;
                becomeUnusable(Unusable.UNSUPPORTED, todo);
                if (users.expired()) {
                    retireOrDrop(todo); // it lingered out while adding
                }
                return;
            }
            switch (rc) {
                case OK -> {
                    watch = WatchState.SET;
                    watchSession = session;
                    if (users.expired()) {
                        retireOrDrop(todo); // it lingered out while adding
                    } else if (unusable != null) {
                        drop(todo);
                    } else if (!live && !reading) {
                        read(todo); // the read sent with the add answered before it: not covered by the watch
                    }
                }
                case MARSHALLINGERROR -> {
                    watch = WatchState.NONE;
                    context.server().persistentWatchesRefused();
                    becomeUnusable(Unusable.UNSUPPORTED, todo);
                }
                default -> {
                    watch = WatchState.NONE;
                    if (ResultCodes.isPassing(rc)) {
                        todo.add(() -> context.server()
                                .sendNewerAgain(rc, this::addAgain)); // lost, or a busy server's refusal
                    } else {
                        becomeUnusable(Unusable.UNSUPPORTED, todo);
                    }
                }
            }
        });
    }

    /** After an add the client gave up on: add again if anything still wants the view. */
    private void addAgain() {
        act(todo -> {
            if (watch != WatchState.NONE || retired) {
                return;
            }
            if (unusable == null && users.wanted()) {
                add(todo);
            } else if (users.expired()) {
                retireOrDrop(todo); // its linger ran out while the add was in doubt
            }
        });
    }

    private void drop(List<Runnable> todo) {
        watch = WatchState.DROPPING;
        generation++; // from now on, its events are ignored
        live = false;
        sendDrop(todo);
    }

    private void sendDrop(List<Runnable> todo) {
        todo.add(() -> context.dropWatchesAnswering(path, Watcher.WatcherType.PersistentRecursive)
                .thenAccept(this::dropped));
    }

    private void dropped(Code rc) {
        act(todo -> {
            if (watch != WatchState.DROPPING) {
                return;
            }
            if (ResultCodes.isPassing(rc) && !context.isClosed()) {
                // The client still registers the watch and sets it again on the next connection, with a watcher
                // whose events this view ignores from now on: it stays DROPPING until a removal answers. One a busy
                // server refused (THROTTLEDOP) left the watch on the server too, on a connection that goes on.
                int gen = generation;
                todo.add(() -> context.sendAgain(rc, () -> dropAgain(gen)));
                return;
            }
            watch = WatchState.NONE;
            if (wantWatch && unusable == null && !members.isEmpty()) {
                add(todo);
            } else if (users.expired()) { // a view dropped while lingering keeps what it knows (why it is unusable)
                retired = true;
                todo.add(() -> context.retire(this));
            }
        });
    }

    private void dropAgain(int gen) {
        act(todo -> {
            if (watch == WatchState.DROPPING && generation == gen) {
                sendDrop(todo);
            }
        });
    }

    /** The client's session changed (on Curator's listener thread). */
    void sessionChanged(ClientContext.SessionEvent event) {
        act(todo -> {
            log.debug("{}: {}", this, event);
            switch (event) {
                case SESSION_ENDED, CLOSED -> {
                    live = false;
                    sessionEnded = true;
                }
                case NEW_SESSION -> {
                    live = false;
                    sessionEnded = false;
                    if (retired) {
                        return;
                    }
                    boolean onThisSession = watch != WatchState.NONE && watchSession == context.sessionId();
                    if (watch == WatchState.ADDING || onThisSession) {
                        // An add the ended session never answered is sent again by Curator on the new handle, or
                        // fails: its watch, if it lands, is this session's, and its answer decides as any answer
                        // does. Forgetting it would leave that watch on the server for as long as the client lives.
                        // One that has landed there already only needs a read, and a drop of it sent on this
                        // session is seen through as any drop is (one in doubt is sent again once connected).
                        if (watch == WatchState.SET && !reading) {
                            read(todo);
                        }
                        return;
                    }
                    // The watch died with the old session, and a drop in flight has nothing left to drop. Whatever
                    // the old session still delivers belongs to an older generation. The watch is added again only
                    // for members that decide on it: a view kept for its count alone, or lingering, waits for one
                    // (this is also the client's first connection, which may be heard after a view was made).
                    generation++;
                    watch = WatchState.NONE;
                    if (unusable == null && !members.isEmpty()) {
                        add(todo);
                    } else if (users.expired()) {
                        retired = true;
                        todo.add(() -> context.retire(this));
                    }
                }
                case SUSPENDED, RECONNECTED -> {} // seen in order by the watch itself
            }
        });
    }

    // ---- reading ----

    private void read(List<Runnable> todo) {
        reading = true;
        int gen = generation;
        todo.add(heard ? () -> syncThenRead(gen) : () -> sendRead(gen));
    }

    /**
     * The read goes once the sync has answered OK. A sync that failed counts as a failed read, and is sent again with
     * the read that follows: a read without it is what the sync is there to prevent.
     */
    private void syncThenRead(int gen) {
        try {
            context.client()
                    .sync()
                    .inBackground((c, e) -> {
                        if (e.getResultCode() == Code.OK.intValue()) {
                            sendRead(gen);
                        } else {
                            readAnswered(gen, context.sessionId(), e);
                        }
                    })
                    .forPath(path);
        } catch (Exception e) {
            readAnswered(gen, context.sessionId(), null);
        }
    }

    private void sendRead(int gen) {
        long sentOn = context.sessionId();
        try {
            context.client()
                    .getChildren()
                    .inBackground((c, e) -> readAnswered(gen, sentOn, e))
                    .forPath(path);
        } catch (Exception e) {
            readAnswered(gen, sentOn, null);
        }
    }

    /** {@code sentOn} is the session the handle reported when the read was sent. */
    private void readAnswered(int gen, long sentOn, CuratorEvent event) {
        Code rc = event == null ? Code.SYSTEMERROR : Code.get(event.getResultCode());
        act(todo -> {
            readSession = sentOn;
            log.debug("{}: read of generation {} answered {}", this, gen, rc);
            reading = false;
            // Only a read that the server answered after adding this generation's watch covers what follows it.
            if (gen != generation || watch != WatchState.SET) {
                if (watch == WatchState.SET && !live) {
                    read(todo);
                }
                return;
            }
            switch (rc) {
                case OK -> {
                    Stat stat = event.getStat();
                    if (stat == null) {
                        becomeUnusable(Unusable.UNSUPPORTED, todo); // no count without the parent's Stat
                        return;
                    }
                    nodes.reset(event.getChildren(), stat.getCzxid(), stat.getCversion(), stat.getNumChildren());
                    becomeLive(todo);
                }
                case NONODE -> {
                    nodes.resetMissingParent();
                    becomeLive(todo);
                }
                case NOAUTH -> becomeUnusable(Unusable.BLIND, todo);
                // A read-only server refuses a sync: wait for one that takes writes, rather than ask it again at once.
                case NOTREADONLY -> todo.add(() -> context.writable().thenRun(this::readAgain));
                // A busy server's refusal: asked again after a pause, not at once on the same connection.
                case THROTTLEDOP -> todo.add(() -> context.sendAgainLater(this::readAgain));
                default -> todo.add(() -> context.whenConnected(this::readAgain));
            }
        });
    }

    private void readAgain() {
        act(todo -> {
            if (watch == WatchState.SET && !live && !reading && unusable == null) {
                read(todo);
            }
        });
    }

    private void becomeLive(List<Runnable> todo) {
        heard = true;
        herd.read(nodes);
        missedDeletions(todo);
        live = true;
        if (!checkCrowd(todo)) {
            return;
        }
        confirmListened(todo);
        List<Member> told = List.copyOf(members);
        todo.add(() -> told.forEach(Member::viewRead));
    }

    /**
     * Tells of the nodes held or listened to that a read replacing the view no longer lists that they are gone: they
     * were deleted while no event could say so (the watch off, or the connection down). None was created after a
     * reply this client has had on the session the read was sent on (a holder holds its own, a waiter listens to those
     * before its own), and no server that session reads from can be behind such a reply, so a node missing from the
     * read was deleted. A read sent on another session says nothing of them.
     */
    private void missedDeletions(List<Runnable> todo) {
        if (readSession == 0 || readSession != context.sessionId()) {
            return; // sent for an older session, or resent on a newer one: it cannot speak for this session's nodes
        }
        Set<String> known = new LinkedHashSet<>(context.leases().heldUnder(path));
        known.addAll(listeners.listened());
        List<SequenceNode> gone = known.stream()
                .flatMap(name -> SequenceNode.parse(name).stream())
                .filter(node -> !nodes.contains(node))
                .toList();
        // As for a deletion heard (see #deleted): every hold of this client on them is lost before anyone listening
        // is told, a hold granted without the view included.
        for (SequenceNode node : gone) {
            String deleted = ZKPaths.makePath(path, node.name());
            todo.add(() -> context.leases().nodeDeleted(deleted));
        }
        gone.forEach(node -> listeners.deleted(node, todo));
    }

    /** False, and unusable, if the path holds more nodes of other sessions than the bound. */
    private boolean checkCrowd(List<Runnable> todo) {
        if (unusable != null) {
            return false;
        }
        if (herd.crowded(nodes, context.viewSettings().maxOthers())) {
            becomeUnusable(Unusable.CROWDED, todo);
            return false;
        }
        return true;
    }

    private void becomeUnusable(Unusable why, List<Runnable> todo) {
        if (unusable != null) {
            return;
        }
        log.debug("{}: unusable, {}", this, why);
        unusable = why;
        herd.restartQuietCount();
        live = false;
        List<Member> told = List.copyOf(members);
        members.clear();
        listeners.dropObservers();
        switch (watch) {
            case SET -> drop(todo);
            case ADDING, DROPPING, NONE -> {} // an add that answers now finds the view unusable and drops
        }
        todo.add(() -> told.forEach(m -> m.viewUnusable(why)));
    }

    /**
     * Asks again about the nodes somebody listens to whose readability is unknown: a read that replaced the view made
     * them unknown again, or a check went unanswered. A listener does not ask twice.
     */
    private void confirmListened(List<Runnable> todo) {
        if (confirming || !live || unusable != null) {
            return;
        }
        for (String name : listeners.listened()) {
            if (!nodes.isConfirmed(name)) {
                confirm(todo);
                return;
            }
        }
    }

    /** Checks, in one multi-read, that this client may read every node whose events it has not seen yet. */
    private void confirm(List<Runnable> todo) {
        List<SequenceNode> unknown = nodes.unconfirmed();
        if (unknown.isEmpty()) {
            return;
        }
        confirming = true;
        int gen = generation;
        todo.add(() ->
                ViewConfirmation.send(context, path, unknown, (rc, results) -> confirmed(gen, unknown, rc, results)));
    }

    private void confirmed(int gen, List<SequenceNode> asked, Code rc, List<Code> results) {
        act(todo -> {
            confirming = false;
            if (gen != generation) {
                confirmListened(todo); // the view was read again meanwhile: ask about what it lists now
                return;
            }
            if (results == null) {
                if (context.isClosed()) {
                    return; // the close fails whoever waits
                }
                if (rc == Code.THROTTLEDOP) {
                    // Refused by a busy server, for now: asked again after a pause.
                    todo.add(() -> context.sendAgainLater(() -> act(this::confirmListened)));
                    return;
                }
                if (!ResultCodes.isInDoubt(rc)) {
                    // Not sent at all (the handle refused it): asking again at once could refuse again on this
                    // thread without end, and a waiter must not rely on events the view cannot vouch for.
                    becomeUnusable(Unusable.BLIND, todo);
                    return;
                }
                confirmListened(todo); // lost with the connection: asked again once the view is live
                return;
            }
            for (int i = 0; i < asked.size(); i++) {
                SequenceNode node = asked.get(i);
                switch (results.get(i)) {
                    case OK -> nodes.confirm(node.name());
                    case NONODE -> deleted(node.name(), todo); // gone: its event, if any, came first
                    case NOAUTH -> {
                        becomeUnusable(Unusable.BLIND, todo);
                        return;
                    }
                    default -> {} // asked again when someone next waits on it
                }
            }
            // A read answered since this check was sent may have listed nodes it did not ask about, and a waiter that
            // listened on one meanwhile did not ask, this check being in flight: nobody else would.
            for (String name : listeners.listened()) {
                if (!nodes.isConfirmed(name)
                        && asked.stream().noneMatch(node -> node.name().equals(name))) {
                    confirmListened(todo);
                    return;
                }
            }
        });
    }

    // ---- events ----

    private void watched(int gen, WatchedEvent event) {
        // Asked before the view's lock is taken: the context answers under its own.
        boolean olderHandle = event.getType() == EventType.None
                && (event.getState() == Watcher.Event.KeeperState.Expired
                        || event.getState() == Watcher.Event.KeeperState.Closed)
                && context.endIsOfAnOlderHandle();
        act(todo -> {
            log.trace("{}: event {} of generation {}", this, event, gen);
            if (gen != generation) {
                return; // a watcher of a dropped watch, or of an older session
            }
            EventType type = event.getType();
            if (type == EventType.None) {
                connectionChanged(event.getState(), olderHandle, todo);
            } else if (type == EventType.NodeCreated || type == EventType.NodeDeleted) {
                String changed = event.getPath();
                if (path.equals(changed)) {
                    parentChanged(type, todo);
                } else if (changed != null
                        && path.equals(ZKPaths.getPathAndNode(changed).getPath())) {
                    childChanged(type, ZKPaths.getNodeFromPath(changed), todo);
                }
                // Deeper descendants and the removal of the watch itself tell the queue nothing.
            } else if (type == EventType.NodeDataChanged) {
                // Nothing for the queue either; a holder listening for revocation requests hears it.
                String changed = event.getPath();
                if (changed != null
                        && path.equals(ZKPaths.getPathAndNode(changed).getPath())) {
                    listeners.dataChanged(ZKPaths.getNodeFromPath(changed), todo);
                }
            } else if (type == EventType.PersistentWatchRemoved) {
                watchGone("its watch was removed by another", todo);
            }
        });
    }

    /**
     * The watch is no longer on the server, though the session goes on: removed by another than this view, whose own
     * drop stops hearing its events first (the application on this client, or a view of the same server path under
     * another namespace of this connection), or gone with a handle Curator replaced. No event comes any more, so
     * nothing counts until the watch is added again and read behind; an unwanted view retires instead.
     */
    private void watchGone(String why, List<Runnable> todo) {
        if (watch != WatchState.SET) {
            return;
        }
        log.debug("{}: {}", this, why);
        watch = WatchState.NONE;
        live = false;
        generation++; // nothing more of the removed watcher counts
        if (unusable == null && users.wanted()) {
            add(todo);
        } else if (users.expired()) {
            retireOrDrop(todo);
        }
    }

    private void connectionChanged(Watcher.Event.KeeperState state, boolean olderHandle, List<Runnable> todo) {
        switch (state) {
            case SyncConnected -> {
                // Same session: the client set the watch again before any request of ours. Events of the gap are
                // lost, so nothing counts until a read sent now has answered.
                if (watch == WatchState.SET && !live && !reading && unusable == null) {
                    read(todo);
                }
            }
            case Expired, Closed -> {
                live = false;
                if (olderHandle) {
                    // The watch was on a handle that Curator has replaced, its add answered there after the next
                    // session began (and taken for that session's): the session this view serves goes on.
                    watchGone("its watch went with an older handle", todo);
                    return;
                }
                sessionEnded = true;
                if (watch != WatchState.DROPPING) {
                    watch = WatchState.NONE; // the session's end takes the watch; the next session adds it again
                }
            }
            default -> live = false; // Disconnected, read-only: decide nothing until a fresh read
        }
    }

    private void parentChanged(EventType type, List<Runnable> todo) {
        if (type == EventType.NodeDeleted) {
            // Reaped or deleted: every child went with it, and sequences start over if it comes back.
            for (SequenceNode gone : nodes.parentDeleted()) {
                herd.forget(gone.name());
                listeners.deleted(gone, todo);
            }
            changed(todo);
        } else if (live) {
            if (!nodes.parentCreated()) {
                resync(todo); // created while we thought it existed: we missed its deletion
            } else {
                changed(todo);
            }
        }
    }

    private void childChanged(EventType type, String child, List<Runnable> todo) {
        if (type == EventType.NodeDeleted) {
            deleted(child, todo); // a fact whenever it arrives: the node is gone
            return;
        }
        if (!live) {
            return; // the read on its way covers it
        }
        switch (nodes.created(child)) {
            case ADDED -> {
                // The bound holds between this client's own entries too: a burst of others' nodes on a quiet path
                // drops the view now, not when this client next enters.
                if (checkCrowd(todo)) {
                    changed(todo);
                }
            }
            case KNOWN -> {}
            case MISSED -> becomeUnusable(Unusable.BLIND, todo);
            case UNCOUNTED -> resync(todo);
        }
    }

    private void deleted(String child, List<Runnable> todo) {
        Optional<SequenceNode> gone = nodes.deleted(child);
        herd.forget(child);
        SequenceNode node = gone.orElseGet(() -> SequenceNode.parse(child).orElse(null));
        if (node != null) {
            // A hold of this client on the node is lost before anyone listening is told, so that a waiter granted
            // by the deletion never sits beside a hold that still says HELD (one granted without the view included).
            String deleted = ZKPaths.makePath(path, child);
            todo.add(() -> context.leases().nodeDeleted(deleted));
            listeners.deleted(node, todo);
        }
        if (gone.isPresent()) {
            changed(todo);
        }
    }

    private void changed(List<Runnable> todo) {
        if (live) {
            listeners.changed(todo);
        }
    }

    /** The view lost count: read again, deciding nothing meanwhile. */
    private void resync(List<Runnable> todo) {
        live = false;
        if (!reading) {
            read(todo);
        }
    }

    /** Runs {@code step} under the lock, then what it asked for, once the lock is released. */
    private void act(Consumer<List<Runnable>> step) {
        List<Runnable> todo = new ArrayList<>(2);
        lock.lock();
        try {
            step.accept(todo);
        } finally {
            lock.unlock();
        }
        todo.forEach(Runnable::run);
    }

    @Override
    public String toString() {
        lock.lock();
        try {
            return "PathView[" + path + ", gen " + generation + ", " + watch + (live ? ", live" : "")
                    + (unusable == null ? "" : ", " + unusable) + ", " + users + ", " + nodes + "]";
        } finally {
            lock.unlock();
        }
    }
}
