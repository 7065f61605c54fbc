package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.Test;

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
    }

    @Test
    void aLeftWatchFailsTheCheckWithItsPath(ZooKeeperEnsemble zk) throws Exception {
        CuratorFramework client = zk.newClient();
        client.create().creatingParentsIfNeeded().forPath("/watched/node");
        client.checkExists().watched().forPath("/watched/node");
        client.checkExists().watched().forPath("/elsewhere");

        assertEquals(Map.of("/watched/node", 1), zk.watchesUnder("/watched"));
        assertEquals(2, zk.watchCount());
        AssertionError left = assertThrows(AssertionError.class, () -> zk.assertNoWatchesUnder("/watched"));
        assertEquals("watches left under /watched: [/watched/node (1)]", left.getMessage());

        client.close();
        zk.assertNoWatchesUnder("/watched");
        assertEquals(0, zk.watchCount());
    }

    @Test
    void aLeftChildrenWatchFailsTheCheckTooThoughNoFourLetterWordListsIt(ZooKeeperEnsemble zk) throws Exception {
        CuratorFramework client = zk.newClient();
        client.create().creatingParentsIfNeeded().forPath("/parent/child");
        client.create().forPath("/parent/followed");
        client.getChildren().watched().forPath("/parent");
        client.getData().watched().forPath("/parent/child");
        // A persistent watch is a data and a children watch on the server: one session's watch all the same.
        client.watchers().add().withMode(AddWatchMode.PERSISTENT).forPath("/parent/followed");

        assertEquals(Map.of("/parent", 1, "/parent/child", 1, "/parent/followed", 1), zk.watchesUnder("/parent"));
        AssertionError left = assertThrows(AssertionError.class, () -> zk.assertNoWatchesUnder("/parent"));
        assertTrue(left.getMessage().contains("/parent (1)"), left.getMessage());

        client.close();
        zk.assertNoWatchesUnder("/parent");
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
