package io.coord.queue;

import io.coord.core.internal.ClientContext;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.EventType;

/**
 * What the consumers of one queue path in one client share: the cached names ({@link NameCache}), one children
 * watch for those that block, and one children read at a time.
 *
 * <p>Consumers work down the cached names and read the children again only when the names run out, so draining N
 * items costs O(N) requests. Reads are coalesced: waiters woken by one event share one read, and a consumer that
 * still has names reads nothing. The watch is left only while someone waits; the last waiter to leave removes it.
 */
final class ItemsWatch {
    private final ClientContext context;
    private final Layout layout;
    private final NameCache names = new NameCache();
    private final ChangeSignal signal = new ChangeSignal();
    private final Watcher itemsWatcher = this::itemsChanged;
    private final Watcher claimsWatcher = this::claimChanged;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private int waiters;
    private boolean watchArmed;
    private long watchGeneration;
    private Read inFlight;
    private Read queued;

    /** One children read; {@code answer} is false when the items parent does not exist. */
    private static final class Read {
        final CompletableFuture<Boolean> answer = new CompletableFuture<>();
        boolean watched;
    }

    ItemsWatch(ClientContext context, Layout layout) {
        this.context = context;
        this.layout = layout;
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

    /** The delete of our claim made on {@code session} is confirmed: the name is back in play, local waiters too. */
    void released(String name, long session) {
        if (names.released(name, session)) {
            signal.fire();
        }
    }

    void joinWaiters() {
        lock.lock();
        try {
            waiters++;
        } finally {
            lock.unlock();
        }
    }

    /** The last waiter to leave removes the children watch, so that none is left on the server. */
    void leaveWaiters() {
        boolean remove;
        lock.lock();
        try {
            waiters--;
            remove = waiters == 0 && (watchArmed || (inFlight != null && inFlight.watched));
            if (remove) {
                watchArmed = false;
                watchGeneration++;
            }
        } finally {
            lock.unlock();
        }
        if (remove) {
            removeWatch();
        }
    }

    /** True when a blocked consumer may just wait: nothing is cached, and the watch will report any change. */
    boolean armedAndEmpty() {
        lock.lock();
        try {
            if (!watchArmed) {
                return false;
            }
        } finally {
            lock.unlock();
        }
        // Not atomic with the flag: a read that adds names fires the signal after merging, so a waiter that saw
        // the names missing here is woken anyway.
        return names.isEmpty();
    }

    /**
     * Reads the children into the cache. With {@code joinWatched}, a watched read already in flight will do: a
     * blocked waiter only needs a read whose watch reports what the read missed. Otherwise the answer comes from a
     * read sent after this call.
     */
    CompletableFuture<Boolean> read(boolean joinWatched) {
        Read send = null;
        Read mine;
        lock.lock();
        try {
            if (inFlight == null) {
                inFlight = send = mine = new Read();
                mine.watched = waiters > 0;
            } else if (joinWatched && inFlight.watched) {
                mine = inFlight;
            } else {
                if (queued == null) {
                    queued = new Read();
                }
                mine = queued;
            }
        } finally {
            lock.unlock();
        }
        if (send != null) {
            send(send);
        }
        return mine.answer;
    }

    /** Connected again on the same session: the watch and our claims survived; waiters look again. */
    void reconnected() {
        signal.fire();
    }

    /** The session ended, or a new one began: the watch and every claim made on another session died with it. */
    void sessionEnded(long current) {
        lock.lock();
        try {
            watchArmed = false;
            watchGeneration++;
        } finally {
            lock.unlock();
        }
        names.sessionEnded(current);
        signal.fire();
    }

    private void send(Read read) {
        long generation;
        lock.lock();
        try {
            generation = watchGeneration;
        } finally {
            lock.unlock();
        }
        CuratorFramework client = context.client();
        String items = layout.items();
        Requests.call(context, items, cb -> {
                    if (read.watched) {
                        client.getChildren()
                                .usingWatcher(itemsWatcher)
                                .inBackground(cb)
                                .forPath(items);
                    } else {
                        client.getChildren().inBackground(cb).forPath(items);
                    }
                })
                .whenComplete((event, error) -> answered(read, generation, event, error));
    }

    private void answered(Read read, long generation, CuratorEvent event, Throwable error) {
        Code code = error == null ? Requests.code(event) : null;
        boolean added = code == Code.OK && names.merge(event.getChildren(), context.sessionId());
        Read next;
        lock.lock();
        try {
            if (code == Code.OK) {
                // Replies and watch events arrive on ZooKeeper's event thread in server order, and this watch's
                // events come after this reply: an event seen earlier consumed an older watch. Only a removal sent
                // after this read (a new generation) takes this one away.
                if (read.watched && generation == watchGeneration) {
                    watchArmed = true;
                }
            }
            next = queued;
            queued = null;
            inFlight = next;
            if (next != null) {
                next.watched = waiters > 0;
            }
        } finally {
            lock.unlock();
        }
        if (next != null) {
            send(next);
        }
        if (added) {
            signal.fire();
        }
        if (error != null) {
            read.answer.completeExceptionally(error);
        } else if (code == Code.OK || code == Code.NONODE) {
            read.answer.complete(code == Code.OK);
        } else {
            read.answer.completeExceptionally(Requests.failure("listing", layout.items(), code));
        }
    }

    private void removeWatch() {
        CuratorFramework client = context.client();
        // removeAll: removing one watcher only drops it locally and leaves the server's watch in place.
        Requests.call(
                        context,
                        layout.items(),
                        cb -> client.watchers()
                                .removeAll()
                                .ofType(Watcher.WatcherType.Children)
                                .inBackground(cb)
                                .forPath(layout.items()))
                .whenComplete((event, error) -> {
                    // A waiter that arrived meanwhile may have armed the watch just before this removal: re-check.
                    lock.lock();
                    try {
                        if (waiters > 0) {
                            watchArmed = false;
                        }
                    } finally {
                        lock.unlock();
                    }
                    signal.fire();
                });
    }

    private void itemsChanged(WatchedEvent event) {
        if (event.getType() == EventType.None) {
            // Connection news, which the session listener handles; but a namespace facade's context hears of the
            // client's close only when asked, so ask here, where a blocked waiter's watch is told of it.
            if (context.isClosed()) {
                signal.fire();
            }
            return;
        }
        lock.lock();
        try {
            watchArmed = false;
        } finally {
            lock.unlock();
        }
        signal.fire();
    }

    private void claimChanged(WatchedEvent event) {
        if (event.getType() != EventType.NodeDeleted) {
            return;
        }
        String name = event.getPath().substring(event.getPath().lastIndexOf('/') + 1);
        if (names.unwatchClaim(name, true)) {
            signal.fire();
        }
    }
}
