package io.coord.rwlock;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.core.DistributedLock;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ReadWriteRequestCountTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void uncontendedAcquireAndReleaseMakeThreeRequests(boolean write) throws Exception {
        String path = ZooKeeperFixture.uniquePath(write ? "count-write" : "count-read");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        client.create().creatingParentsIfNeeded().forPath(path);
        ReadWriteMutex rw = new ReadWriteMutex(client, path);
        DistributedLock lock = write ? rw.writeLock() : rw.readLock();
        counter.reset();

        lock.acquire();
        lock.release();

        await().until(() -> counter.count(path) >= 3);
        zk.assertNoLeaks(path);
        assertEquals(3, counter.count(path), () -> counter.names(path).toString());
    }
}
