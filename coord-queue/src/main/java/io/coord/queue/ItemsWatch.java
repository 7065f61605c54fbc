package io.coord.queue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.BackgroundRequests;
import io.coord.core.internal.ChangeSignal;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.ResultCodes;
import io.coord.core.internal.SingleFlight;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.EventType;

/**
 * What the consumers and producers of one queue path in one client share to learn of changes: the cached names
 * ({@link NameCache}), one coalesced children read, one watch on the items parent for those that wait, and one
 * watcher for other clients' claims.
 *
 * <p>Consumers work down the cached names and read the children again only when the names run out, so draining N
 * items costs O(N) requests. The watch on the items parent is PERSISTENT, so that nothing needs to be sent to keep
 * it, and it is left only while a consumer or producer of this client waits: the last one to stop waiting removes
 * it ({@link ParentWatch}). Each event bumps a change count and fires the signal; a waiter reads again only when
 * something changed since the last read was sent.
 */
final class ItemsWatch {
    private final ClientContext context;
    private final Layout layout;
    private final NameCache names = new NameCache();
    private final ChangeSignal signal = new ChangeSignal();
    private final AtomicLong changes = new AtomicLong();
    private final SingleFlight<Boolean> reads = new SingleFlight<>(this::sendRead, changes::get);
    private final AtomicLong listedThrough = new AtomicLong(-1);
    private final Watcher itemsWatcher = this::itemsChanged;
    private final Watcher claimsWatcher = this::claimChanged;
    // The watch on the items parent that waiters join, and leave once they stop waiting.
    final ParentWatch watch;
    // The creation zxid of the items parent as the last children read found it, 0 before one found it.
    private final AtomicLong parentMade = new AtomicLong();
    private final Runnable parentMadeAgain;

    /** {@code parentMadeAgain} runs when a read finds the items parent made again since the read before. */
    ItemsWatch(ClientContext context, Layout layout, Runnable parentMadeAgain) {
        this.context = context;
        this.layout = layout;
        this.parentMadeAgain = parentMadeAgain;
        this.watch = new ParentWatch(context, layout.items, itemsWatcher, this::changed, this::watchFailure);
    }

    NameCache names() {
        return names;
    }

    Watcher claimsWatcher() {
        return claimsWatcher;
    }

    CompletableFuture<Void> signal() {
        return signal.snapshot();
    }

    /**
     * Reads the children into the cache; the answer comes from a read sent after this call, and is false when the
     * items parent does not exist.
     */
    CompletableFuture<Boolean> read() {
        return reads.next();
    }

    /** Whether anything changed since the last read that answered was sent: only then is a new read worth it. */
    boolean changedSinceRead() {
        return changes.get() > listedThrough.get();
    }

    /**
     * A read that reflects every change seen so far: none if one that answered already does (a waiter that saw a
     * change before that read answered must not send another), the one in flight if it was sent after the last
     * change, else the next. Waiters woken by one change share one read.
     */
    CompletableFuture<Void> readCurrent() {
        long stamp = changes.get();
        if (listedThrough.get() >= stamp) {
            return CompletableFuture.completedFuture(null);
        }
        return reads.sentSince(stamp).thenAccept(exists -> {});
    }

    /** A name a local consumer took goes back into play, for local waiters too. */
    void putBack(String name) {
        if (names.putBack(name)) {
            signal.fire();
        }
    }

    /**
     * Waits for the watch that {@code arming} puts on the server. A caller that may wait rides out a lost connection
     * (a session's end takes the watch, and an add sent meanwhile runs out of retries): once connected it arms again.
     */
    void awaitArmed(CompletableFuture<Void> arming, Deadline deadline) throws InterruptedException, TimeoutException {
        BackgroundRequests.awaitThroughOutages(context, arming, watch::ensureArmed, deadline, "watch", layout.items);
    }

    /** Our claim made on {@code session} was deleted: the name is back in play, for local waiters too. */
    void released(String name, long session) {
        if (names.released(name, session)) {
            signal.fire();
        }
    }

    /** The queue was found reset by hand: what was known of its items goes, and waiters read again. */
    void reset() {
        names.reset();
        changed();
    }

    /** Connected again on the same session: events sent while disconnected are lost, so waiters read again. */
    void reconnected() {
        changed();
    }

    /** The session ended, or a new one began: the watch and every claim watch died with it. */
    void sessionEnded(long currentSession) {
        watch.sessionEnded();
        names.sessionEnded(currentSession);
        changed();
    }

    private CompletableFuture<Boolean> sendRead() {
        long asOf = changes.get();
        long read = names.readSent();
        CuratorFramework client = context.client();
        return BackgroundRequests.call(
                        context,
                        layout.items,
                        cb -> client.getChildren().inBackground(cb).forPath(layout.items))
                .thenApply(event -> {
                    Code code = BackgroundRequests.code(event);
                    if (code != Code.OK && code != Code.NONODE) {
                        throw BackgroundRequests.failure("listing", layout.items, code);
                    }
                    listedThrough.accumulateAndGet(asOf, Math::max);
                    if (code != Code.OK) {
                        return false;
                    }
                    // Reads answer one at a time, in order (a single flight): each sees the parent of the last.
                    long made = event.getStat().getCzxid();
                    long before = parentMade.getAndSet(made);
                    if (before != 0 && before != made) {
                        names.reset();
                        parentMadeAgain.run();
                    }
                    if (names.merge(event.getChildren(), context.sessionId(), read)) {
                        signal.fire();
                    }
                    return true;
                });
    }

    private void changed() {
        changes.incrementAndGet();
        signal.fire();
    }

    private void itemsChanged(WatchedEvent event) {
        if (event.getType() == EventType.PersistentWatchRemoved) {
            // Our own removal, or another's: the application's, or a queue's of the same server path under another
            // namespace of this connection. Waiters add the watch again, which counts as a change.
            watch.removed();
            signal.fire();
            return;
        }
        if (event.getType() == EventType.None) {
            // Connection news, which the session listener handles; but a client with no CuratorListenable hears of
            // its close only when asked, so ask here, where a waiter's watch is told of it.
            if (context.isClosed()) {
                signal.fire();
            }
            return;
        }
        changed();
    }

    /** Another client's claim on the item is gone: the name is back in play, for local waiters too. */
    void claimGone(String name) {
        if (names.claimDeleted(name)) {
            signal.fire();
        }
    }

    /**
     * A claim's watch fired: the name is back in play, and a consumer that meets a claim on it again watches that one.
     * NodeDeleted is the usual news. A watch put back by a reconnection on the same session tells of a claim deleted
     * and made again meanwhile with NodeDataChanged instead, once, and then is gone: that news counts too.
     */
    private void claimChanged(WatchedEvent event) {
        if (event.getType() != EventType.None && event.getPath() != null) {
            claimGone(event.getPath().substring(event.getPath().lastIndexOf('/') + 1));
        }
    }

    private CoordinationException watchFailure(Code code) {
        // The queue waits on a persistent watch, which a server before 3.6 does not have.
        String needsNewer = "the queue at " + layout.items + " needs ZooKeeper 3.6 or later (persistent watches); ";
        if (code == Code.UNIMPLEMENTED) {
            return new CoordinationException(
                    needsNewer + "the server answered UNIMPLEMENTED", KeeperException.create(code, layout.items));
        }
        if (ResultCodes.isInDoubt(code) && context.server().hasOlderServer()) {
            // Not the loss as its cause: a caller would wait through it as an outage, and send the add again.
            return new CoordinationException(
                    needsNewer + "the server broke the connection under each addWatch, as one before 3.6 does");
        }
        if (code == Code.MARSHALLINGERROR) {
            // A server whose watch manager holds no persistent watches answers an add of one so.
            return new CoordinationException(
                    "the queue at " + layout.items + " needs persistent watches, which this server cannot add (it"
                            + " answered MARSHALLINGERROR): a server whose zookeeper.watchManagerName is"
                            + " WatchManagerOptimized has none",
                    KeeperException.create(code, layout.items));
        }
        return BackgroundRequests.failure("watching", layout.items, code);
    }
}
