package io.coord.election;

import io.coord.core.internal.ClientContext;
import io.coord.core.internal.ResultCodes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;

/**
 * The watches of one client's observers that follow an election without a view: one watcher object for the client,
 * so the server keeps one children watch (and, while a path is missing, one exists watch) per path however many
 * observers follow it. The last observer to leave a path drops its watches on the server, which removing one watcher
 * would not do; while others follow it, leaving drops nothing, since the server's entry is theirs too.
 */
final class ChildrenWatches {
    private final ClientContext context;
    private final Watcher watcher = this::fired;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock: what each follower of a path runs when that path changes.
    private final Map<String, Set<Runnable>> followers = new HashMap<>();
    // Guarded by lock: the followed paths found missing, whose creation an exists watch is set to tell of.
    private final Set<String> awaitingCreation = new HashSet<>();

    private ChildrenWatches(ClientContext context) {
        this.context = context;
    }

    static ChildrenWatches of(ClientContext context) {
        return context.shared(ChildrenWatches.class.getName(), key -> new ChildrenWatches(context));
    }

    /** The watcher to read with: its events go to every follower of the event's path. */
    Watcher watcher() {
        return watcher;
    }

    /** Runs {@code onChange} (on ZooKeeper's event thread: it must not block) whenever {@code path} changes. */
    void follow(String path, Runnable onChange) {
        context.followsWithPlainWatches(path); // before any watch is set: the client takes no view of the path now
        lock.lock();
        try {
            followers.computeIfAbsent(path, p -> new LinkedHashSet<>()).add(onChange);
        } finally {
            lock.unlock();
        }
    }

    /** Stops following; the last follower of a path to leave drops its watches on the server. */
    void leave(String path, Runnable onChange) {
        lock.lock();
        try {
            Set<Runnable> those = followers.get(path);
            if (those != null && those.remove(onChange) && those.isEmpty()) {
                followers.remove(path);
                awaitingCreation.remove(path);
                drop(path);
            }
        } finally {
            lock.unlock();
        }
    }

    /** A read answered after its reader left: if nobody follows the path now, the watch it armed is dropped. */
    void readAfterLeaving(String path) {
        lock.lock();
        try {
            if (!followers.containsKey(path)) {
                drop(path);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Before an exists watch is set to tell of the creation of {@code path}, found missing. */
    void awaitCreation(String path) {
        lock.lock();
        try {
            awaitingCreation.add(path);
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@code path} was found to exist where an exists watch had been set for its creation: that watch, now on a live
     * node whose data never changes, is dropped, unless another follower set one for a creation still awaited.
     */
    void found(String path) {
        lock.lock();
        try {
            awaitingCreation.remove(path);
            drop(path, Watcher.WatcherType.Data, () -> !awaitingCreation.contains(path));
        } finally {
            lock.unlock();
        }
    }

    /**
     * Sent under the lock, so that a follower who comes next reads, and arms its watch, after the drop. The parent of
     * an election carries no other watch of this client of these types: the engine watches children nodes, and a
     * view's watch is persistent.
     */
    private void drop(String path) {
        drop(path, Watcher.WatcherType.Children, () -> !followers.containsKey(path));
        drop(path, Watcher.WatcherType.Data, () -> !followers.containsKey(path));
    }

    /**
     * A drop lost with the connection leaves the watch with the client, which puts it back on the server as it
     * reconnects: sent again once connected, if {@code stillUnwanted} (read under the lock) says so then. One a busy
     * server refused (THROTTLEDOP) left it on the server, on a connection that goes on: sent again after a pause, on
     * the same terms.
     */
    private void drop(String path, Watcher.WatcherType type, BooleanSupplier stillUnwanted) {
        Runnable again = () -> {
            lock.lock();
            try {
                if (stillUnwanted.getAsBoolean()) {
                    drop(path, type, stillUnwanted);
                }
            } finally {
                lock.unlock();
            }
        };
        context.dropWatchesAnswering(path, type).thenAccept(code -> {
            if (ResultCodes.isPassing(code)) {
                context.sendAgain(code, again);
            }
        });
    }

    private void fired(WatchedEvent event) {
        if (event.getType() == Watcher.Event.EventType.None || event.getPath() == null) {
            return; // connection changes reach followers through their connection listeners
        }
        List<Runnable> those;
        lock.lock();
        try {
            if (event.getType() == Watcher.Event.EventType.NodeCreated) {
                awaitingCreation.remove(event.getPath()); // the exists watch has fired, and is gone
            }
            those = new ArrayList<>(followers.getOrDefault(event.getPath(), Set.of()));
        } finally {
            lock.unlock();
        }
        those.forEach(Runnable::run);
    }
}
