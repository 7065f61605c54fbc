package io.coord.queue;

import static org.awaitility.Awaitility.await;

import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import org.apache.curator.framework.CuratorFramework;
import org.awaitility.core.ConditionFactory;

/**
 * The queue's leak check. Its three parents stay (they are persistent), so it is their children that must be gone:
 * no item once drained, no claim, and no watch on the server.
 */
final class QueueLeaks {
    private QueueLeaks() {}

    static void assertDrainedAndNoLeaks(ZooKeeperFixture zk, String path) throws Exception {
        CuratorFramework reader = assertNoClaimsOrWatches(zk, path);
        checking("no items left under " + path).until(() -> children(reader, path + "/items") == 0);
    }

    /** For tests that leave items behind on purpose. Returns the client it read with. */
    static CuratorFramework assertNoClaimsOrWatches(ZooKeeperFixture zk, String path) throws Exception {
        // A client of its own, so that the checks never show up in a test's request counts.
        CuratorFramework reader = zk.newClient();
        checking("no claims left under " + path).until(() -> children(reader, path + "/claims") == 0);
        checking("no watches left on the server").until(() -> zk.watchCount() == 0);
        return reader;
    }

    private static ConditionFactory checking(String what) {
        return await(what)
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(20))
                .atMost(Duration.ofSeconds(15));
    }

    private static int children(CuratorFramework reader, String parent) throws Exception {
        return reader.checkExists().forPath(parent) == null
                ? 0
                : reader.getChildren().forPath(parent).size();
    }
}
