package io.coord.testkit;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.data.Stat;

/**
 * What Curator keeps for a client cut off by a {@link ZooKeeperProxy}: requests made meanwhile go out once it is
 * connected again, in the order they were made. A test that gives up a call during a cut reconnects behind them, and
 * counts what reached the servers.
 */
public final class KeptRequests {
    private KeptRequests() {}

    /**
     * Lets {@code client} connect through {@code proxy} again, and returns once a request it makes now, behind
     * everything Curator kept for it, is answered: whatever the client kept has reached the servers by then.
     */
    public static void reconnectBehindThem(CuratorFramework client, ZooKeeperProxy proxy, String path)
            throws Exception {
        CompletableFuture<Void> answered = new CompletableFuture<>();
        client.checkExists().inBackground((c, event) -> answered.complete(null)).forPath(path);
        proxy.refuseConnections(false);
        answered.get(30, TimeUnit.SECONDS);
    }

    /**
     * How many children were ever created under {@code path}: ZooKeeper's cversion counts each create and each
     * delete of a child.
     */
    public static long createsUnder(CuratorFramework client, String path) throws Exception {
        Stat stat = client.checkExists().forPath(path);
        return (stat.getCversion() + stat.getNumChildren()) / 2;
    }
}
