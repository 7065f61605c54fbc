package io.coord.semaphore;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class SemaphoreRequestCountTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void uncontendedAcquireAndCloseMakeThreeRequests() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 3);
        // The first use checks the maxLeases record once per instance; the steady state is what is counted.
        semaphore.acquire().close();
        await().until(() -> client.getChildren().forPath(path).isEmpty());
        counter.reset();

        semaphore.acquire().close();

        await().until(() -> counter.count(path) >= 3);
        zk.assertNoLeaks(path);
        assertEquals(3, counter.count(path), () -> counter.names(path).toString());
    }
}
