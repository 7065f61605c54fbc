package io.coord.semaphore;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.coord.testkit.ZooKeeperFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The recorded maxLeases survives the server reaping idle containers, so a second limit is still refused. */
@Timeout(90)
class LimitRecordReapingTest {
    private static final String CHECK_INTERVAL = "znode.container.checkIntervalMs";

    static {
        // Read once, when this class's server starts: reap idle containers within a fraction of a second.
        System.setProperty(CHECK_INTERVAL, "100");
    }

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @AfterAll
    static void restoreReaping() {
        System.clearProperty(CHECK_INTERVAL);
    }

    @Test
    void aSecondLimitIsRefusedAfterTheServerReapedIdleContainers() throws Exception {
        String path = ZooKeeperFixture.uniquePath("reaped");
        CuratorFramework first = zk.newClient();
        new DistributedSemaphore(first, path, 3).acquire().close();

        // A container that has had a child and has none is reaped on the reaper's next pass: once this one is gone,
        // the reaper has looked at the semaphore's idle path too.
        String canary = path + "-canary";
        first.create().creatingParentsIfNeeded().withMode(CreateMode.CONTAINER).forPath(canary);
        first.create().forPath(canary + "/child");
        first.delete().forPath(canary + "/child");
        await().atMost(Duration.ofSeconds(30)).until(() -> first.checkExists().forPath(canary) == null);

        assertNotNull(first.checkExists().forPath(path), "the record is still there");
        assertEquals("3", new String(first.getData().forPath(path), StandardCharsets.UTF_8));
        DistributedSemaphore other = new DistributedSemaphore(zk.newClient(), path, 1);
        IllegalStateException e = assertThrows(IllegalStateException.class, other::acquire);
        assertEquals(
                "semaphore " + path + " records maxLeases 3, but this instance was built with maxLeases 1",
                e.getMessage());
        zk.assertNoLeaks(path);
    }
}
