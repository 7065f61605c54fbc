package io.coord.rwlock;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.core.DistributedLock;
import io.coord.testkit.EngineMode;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Requests per operation, counted by a Curator tracer on the client that makes them: counts, never timings. */
class ReadWriteRequestCountTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @AfterEach
    void backToViews() {
        zk.mode(EngineMode.VIEW);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void onAPrimedViewAnUncontendedAcquireAndReleaseMakeTwoRequests(boolean write) throws Exception {
        String path = ZooKeeperFixture.uniquePath(write ? "count-view-write" : "count-view-read");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        ZooKeeperFixture.lingerViews(client, Duration.ofMinutes(1));
        client.create().creatingParentsIfNeeded().forPath(path);
        DistributedLock lock = lock(client, path, write);
        lock.acquire(); // counts the path, without a view
        lock.release();
        lock.acquire(); // primes the view: addWatch, and a children read behind it
        lock.release();
        await().until(() -> counter.count(path) >= 7 && counter.count(path, "Delete") == 2);
        counter.reset();

        for (int i = 0; i < 3; i++) {
            DistributedLock perCall = lock(client, path, write); // a new lock per call shares the client's view
            perCall.acquire();
            perCall.release();
        }

        await().until(() -> counter.count(path) >= 6);
        assertEquals(6, counter.count(path), () -> counter.names(path).toString());
        client.close(); // its view would linger for a minute
        zk.assertNoLeaks(path);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void withoutAViewUncontendedAcquireAndReleaseMakeThreeRequests(boolean write) throws Exception {
        zk.mode(EngineMode.WATCH);
        String path = ZooKeeperFixture.uniquePath(write ? "count-write" : "count-read");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        client.create().creatingParentsIfNeeded().forPath(path);
        DistributedLock lock = lock(client, path, write);
        counter.reset();

        lock.acquire();
        lock.release();

        await().until(() -> counter.count(path) >= 3);
        zk.assertNoLeaks(path);
        assertEquals(3, counter.count(path), () -> counter.names(path).toString());
    }

    private static DistributedLock lock(CuratorFramework client, String path, boolean write) {
        ReadWriteMutex rw = new ReadWriteMutex(client, path);
        return write ? rw.writeLock() : rw.readLock();
    }
}
