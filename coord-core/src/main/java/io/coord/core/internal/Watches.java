package io.coord.core.internal;

import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.Watcher;

/** Lets go of a contender's watches. */
final class Watches {
    private Watches() {}

    /**
     * Drops our watcher on {@code path}. ZooKeeper answers this with a check only, so the server keeps its side of
     * the watch until the node changes; what matters is that the client lets go of the watcher and its attempt.
     */
    static void unwatch(CuratorFramework client, Watcher watcher, String path) {
        try {
            client.watchers()
                    .remove(watcher)
                    .ofType(Watcher.WatcherType.Data)
                    .quietly()
                    .inBackground()
                    .forPath(path);
        } catch (Exception e) {
            // The watch dies with the connection.
        }
    }
}
