package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.Test;

/** The leak checks for znodes, and the paths every check refuses. {@link WatchLeakChecksTest} covers watches. */
@ZooKeeperTest(sessionTimeoutMillis = 2_000)
class LeakChecksTest {
    @Test
    void aLeftNodeFailsTheCheckWithItsOwnerAndAClosedClientLeavesNone(ZooKeeperEnsemble zk) throws Exception {
        CuratorFramework client = zk.newClient();
        client.create().creatingParentsIfNeeded().forPath("/app/kept");
        client.create().withMode(CreateMode.EPHEMERAL).forPath("/app/mine");
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();

        AssertionError left = assertThrows(AssertionError.class, () -> zk.assertNoZnodesUnder("/app"));
        assertTrue(left.getMessage().startsWith("znodes left under /app: "), left.getMessage());
        assertTrue(left.getMessage().contains("kept (persistent)"), left.getMessage());
        assertTrue(
                left.getMessage().contains("mine (ephemeral of session 0x" + Long.toHexString(session) + ")"),
                left.getMessage());

        client.delete().forPath("/app/kept");
        client.close();
        zk.assertNoZnodesUnder("/app");
        zk.assertNoZnodesUnder("/never-created");
        zk.newClient().delete().forPath("/app"); // for the root's check
    }

    @Test
    void theRootsCheckPassesOnAnEnsembleLeftCleanThoughTheServersKeepTheirOwnNode(ZooKeeperEnsemble zk)
            throws Exception {
        CuratorFramework client = zk.newClient();
        client.create().forPath("/top");
        client.delete().forPath("/top");
        zk.assertNoZnodesUnder("/"); // the servers' own /zookeeper is not the test's
        zk.assertNoLeaksUnder("/");
    }

    @Test
    void aPathThatIsNoZooKeeperPathIsRefusedRatherThanFoundClean(ZooKeeperEnsemble zk) {
        // "/a/" and "a" match no watched path: a check that took them would pass whatever is left.
        for (String path : new String[] {"/a/", "a", ""}) {
            assertThrows(IllegalArgumentException.class, () -> zk.assertNoWatchesUnder(path), path);
            assertThrows(IllegalArgumentException.class, () -> zk.assertNoZnodesUnder(path), path);
            assertThrows(IllegalArgumentException.class, () -> zk.watchesUnder(path), path);
        }
    }
}
