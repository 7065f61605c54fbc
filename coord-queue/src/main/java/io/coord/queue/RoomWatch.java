package io.coord.queue;

import io.coord.core.internal.ClientContext;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.EventType;

/**
 * Wakes producers that wait for room. It is a persistent watch on the items parent, left only while a producer of
 * this client waits: a one-shot children watch would have to be re-armed with a getChildren, which on a full queue
 * returns every name, on every wake-up. Each event just fires the signal; waiters then share one Stat read.
 */
final class RoomWatch implements Watcher {
    private final ClientContext context;
    private final String items;
    private final ChangeSignal signal = new ChangeSignal();
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private int waiters;
    private boolean armed;
    private CompletableFuture<Void> arming;
    // Bumped by every removal, so that an add answered after it does not count as armed.
    private long generation;

    RoomWatch(ClientContext context, String items) {
        this.context = context;
        this.items = items;
    }

    CompletableFuture<Void> signal() {
        return signal.snapshot();
    }

    /** Counts the caller as waiting; the returned future completes once the watch is on the server. */
    CompletableFuture<Void> join() {
        lock.lock();
        try {
            waiters++;
        } finally {
            lock.unlock();
        }
        return ensureArmed();
    }

    /** The watch on the server, adding it if a reconnection or a removal took it away. */
    CompletableFuture<Void> ensureArmed() {
        CompletableFuture<Void> added;
        long sentAt;
        lock.lock();
        try {
            if (armed) {
                return CompletableFuture.completedFuture(null);
            }
            if (arming != null) {
                return arming;
            }
            arming = added = new CompletableFuture<>();
            sentAt = generation;
        } finally {
            lock.unlock();
        }
        Requests.call(
                        context,
                        items,
                        cb -> context.client()
                                .watchers()
                                .add()
                                .withMode(AddWatchMode.PERSISTENT)
                                .inBackground(cb)
                                .usingWatcher(this)
                                .forPath(items))
                .whenComplete((event, error) -> {
                    boolean ok = error == null && Requests.code(event) == Code.OK;
                    lock.lock();
                    try {
                        arming = null;
                        armed = ok && sentAt == generation;
                    } finally {
                        lock.unlock();
                    }
                    if (ok) {
                        added.complete(null);
                    } else {
                        added.completeExceptionally(
                                error != null ? error : Requests.failure("watching", items, Requests.code(event)));
                    }
                });
        return added;
    }

    /** The last producer to stop waiting removes the watch; removeAll, since removing one watcher is local only. */
    void leave() {
        boolean remove;
        lock.lock();
        try {
            waiters--;
            remove = waiters == 0 && (armed || arming != null);
            if (remove) {
                armed = false;
                generation++;
            }
        } finally {
            lock.unlock();
        }
        if (remove) {
            Requests.call(
                    context,
                    items,
                    cb -> context.client()
                            .watchers()
                            .removeAll()
                            .ofType(WatcherType.Persistent)
                            .inBackground(cb)
                            .forPath(items));
        }
    }

    void connectionChanged(boolean newSession) {
        if (newSession) {
            lock.lock();
            try {
                armed = false; // persistent watches survive a reconnection, but not the end of the session
                generation++;
            } finally {
                lock.unlock();
            }
        }
        signal.fire();
    }

    @Override
    public void process(WatchedEvent event) {
        if (event.getType() == EventType.None || event.getType() == EventType.PersistentWatchRemoved) {
            if (context.isClosed()) {
                signal.fire(); // a namespace facade's close reaches its waiters only this way
            }
            return;
        }
        signal.fire();
    }
}
