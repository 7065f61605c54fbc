package io.coord.semaphore;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.coord.core.Lease;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** An instance that outlives the deletion of its path, the documented way to retire a semaphore or change its limit. */
@InBothEngineModes
@Timeout(90)
class DeletedPathTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void aVerifiedInstanceMakesItsDeletedPathAgainAsAPersistentNodeThatRecordsItsLimit() throws Exception {
        String path = ZooKeeperFixture.uniquePath("remade");
        CuratorFramework admin = zk.newClient();
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 3);
        semaphore.acquire().close(); // the record is checked, and the instance remembers it

        // One plain create, one transaction for several permits, and one look: each finds the path missing.
        deleteWhenIdle(admin, path);
        semaphore.acquire().close();
        assertRecorded(admin, path, "3");

        deleteWhenIdle(admin, path);
        semaphore.acquire(2).close();
        assertRecorded(admin, path, "3");

        deleteWhenIdle(admin, path);
        semaphore.tryAcquire(1, Duration.ZERO).orElseThrow().close();
        assertRecorded(admin, path, "3");

        zk.assertNoLeaks(path);
    }

    @Test
    void aNewcomerWithAnotherLimitIsRefusedOnceAnOldInstanceMadeTheDeletedPathAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("remade-refused");
        CuratorFramework admin = zk.newClient();
        DistributedSemaphore old = new DistributedSemaphore(zk.newClient(), path, 3);
        old.acquire().close();
        deleteWhenIdle(admin, path);

        Lease held = old.acquire();
        DistributedSemaphore newcomer = new DistributedSemaphore(zk.newClient(), path, 1);
        // Bounded: a newcomer that recorded its own limit would wait for the permit held instead.
        IllegalStateException refused =
                assertThrows(IllegalStateException.class, () -> newcomer.tryAcquire(1, Duration.ofSeconds(10)));
        assertEquals(
                "semaphore " + path + " records maxLeases 3, but this instance was built with maxLeases 1",
                refused.getMessage());

        held.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void anInstanceWhosePathAnotherLimitMadeAgainIsRefusedRatherThanEnforcingItsOwnBesideIt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("remade-elsewhere");
        CuratorFramework admin = zk.newClient();
        DistributedSemaphore old = new DistributedSemaphore(zk.newClient(), path, 2);
        DistributedSemaphore oldLooker = new DistributedSemaphore(zk.newClient(), path, 2);
        old.acquire().close(); // checked: the path records 2
        oldLooker.acquire().close();
        deleteWhenIdle(admin, path);

        // Made again by a client of another limit before the old instances find the path missing.
        Lease held = new DistributedSemaphore(zk.newClient(), path, 1).acquire();
        String refusal = "semaphore " + path + " records maxLeases 1, but this instance was built with maxLeases 2";
        // By their own limit the old instances would take a second permit beside the one held, where the path allows
        // one.
        IllegalStateException refused =
                assertThrows(IllegalStateException.class, () -> old.tryAcquire(1, Duration.ofSeconds(10)));
        assertEquals(refusal, refused.getMessage());
        IllegalStateException refusedAtOneLook =
                assertThrows(IllegalStateException.class, () -> oldLooker.tryAcquire(1, Duration.ZERO));
        assertEquals(refusal, refusedAtOneLook.getMessage());
        // The refused attempts' nodes are withdrawn: deleted, though this other client may read before it sees so.
        await().until(() -> admin.getChildren().forPath(path).size() == 1);
        ExecutionException again =
                assertThrows(ExecutionException.class, () -> old.acquireAsync(1).get(10, TimeUnit.SECONDS));
        assertEquals(refusal, again.getCause().getMessage());
        assertRecorded(admin, path, "1");

        held.close();
        deleteWhenIdle(admin, path);
        zk.assertNoLeaks(path);
    }

    @Test
    void aPathMadeWithOtherDataIsRefusedBeforeAnythingIsWrittenAndItsDataIsKept() throws Exception {
        String path = ZooKeeperFixture.uniquePath("foreign-data");
        CuratorFramework admin = zk.newClient();
        byte[] address = "10.0.0.5".getBytes(StandardCharsets.UTF_8); // what Curator's create() stores by default
        admin.create().creatingParentsIfNeeded().forPath(path, address);

        IllegalStateException refused = assertThrows(
                IllegalStateException.class,
                () -> new DistributedSemaphore(zk.newClient(), path, 3).tryAcquire(1, Duration.ofSeconds(10)));
        assertEquals(
                "the data of " + path + " is not a maxLeases record: \"10.0.0.5\". A semaphore records its limit in"
                        + " its path's data, and claims an existing path only if its data is empty (Curator's create()"
                        + " stores the local address unless given data): empty the data, or use another path",
                refused.getMessage());
        assertArrayEquals(address, admin.getData().forPath(path));
        zk.assertNoLeaks(path);
    }

    @Test
    void anEmptyPathWhoseDataVersionWrappedToMinusOneIsRefusedUntilItsLimitIsWrittenByHand() throws Exception {
        String path = ZooKeeperFixture.uniquePath("version-wrapped");
        CuratorFramework admin = zk.newClient();
        admin.create().creatingParentsIfNeeded().forPath(path, new byte[0]);
        zk.setDataVersion(path, -1); // where 2^32 writes of its data leave it
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 3);

        IllegalStateException refused =
                assertThrows(IllegalStateException.class, () -> semaphore.tryAcquire(1, Duration.ofSeconds(10)));
        assertEquals(
                "the data of " + path + " is empty at data version -1, where ZooKeeper cannot tell a claim of it from"
                        + " an overwrite (-1 matches any version): write the limit (3) into " + path + " by hand, or"
                        + " use another path",
                refused.getMessage());
        Stat stat = new Stat();
        assertArrayEquals(new byte[0], admin.getData().storingStatIn(stat).forPath(path), "nothing was written");
        assertEquals(-1, stat.getVersion(), "nothing was written");
        assertEquals(List.of(), admin.getChildren().forPath(path), "no permit's node was left");

        admin.setData().forPath(path, "3".getBytes(StandardCharsets.UTF_8)); // by hand, as the message says
        semaphore.acquire().close();
        deleteWhenIdle(admin, path);
        zk.assertNoLeaks(path);
    }

    private static void deleteWhenIdle(CuratorFramework admin, String path) throws Exception {
        await().until(() -> admin.getChildren().forPath(path).isEmpty());
        admin.delete().forPath(path);
    }

    /** A container's ephemeral owner is a marker of its own; only a PERSISTENT node has none. */
    private static void assertRecorded(CuratorFramework admin, String path, String limit) throws Exception {
        Stat stat = new Stat();
        byte[] data = admin.getData().storingStatIn(stat).forPath(path);
        assertEquals(limit, new String(data, StandardCharsets.UTF_8), "the record");
        assertEquals(0, stat.getEphemeralOwner(), "a PERSISTENT node, not a container the server may reap");
    }
}
