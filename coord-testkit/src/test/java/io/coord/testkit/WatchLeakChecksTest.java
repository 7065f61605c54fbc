package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.AddWatchMode;
import org.junit.jupiter.api.Test;

/** The leak checks for watches: a test class of its own, since each check that finds a leak waits out its deadline. */
@ZooKeeperTest(sessionTimeoutMillis = 2_000)
class WatchLeakChecksTest {
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
}
