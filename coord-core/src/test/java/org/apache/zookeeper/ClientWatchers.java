package org.apache.zookeeper;

import java.util.Map;
import java.util.Set;

/**
 * Reads a ZooKeeper handle's own registry of watchers, which it keeps package-private: what a client holds in memory
 * for watches, whatever the server holds.
 */
public final class ClientWatchers {
    private ClientWatchers() {}

    /** Data watchers the handle keeps registered on {@code path} and below. */
    public static int dataWatchers(ZooKeeper zk, String path) {
        Map<String, Set<Watcher>> watches = zk.getWatchManager().getDataWatches();
        synchronized (watches) { // the handle guards this map with its own monitor
            return watches.entrySet().stream()
                    .filter(e -> e.getKey().equals(path) || e.getKey().startsWith(path + "/"))
                    .mapToInt(e -> e.getValue().size())
                    .sum();
        }
    }
}
