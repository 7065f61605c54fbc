package io.coord.semaphore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A request for several permits creates their nodes in one ZooKeeper request, which must fit {@code jute.maxbuffer}:
 * a server breaks the connection on a bigger one, and the client would send it again after every reconnect. Long
 * paths make each create big, so that the most that fit are few enough to grant quickly.
 */
@Timeout(90)
class RequestSizeTest {
    private static final Pattern BOUND = Pattern.compile("permits must be at most (\\d+) under ");
    private static final String LONG = "p".repeat(1000);

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void moreTogetherThanOneRequestCarriesIsRefusedBeforeAnythingIsWrittenAndTheMostThatFitsIsGranted()
            throws Exception {
        String path = ZooKeeperFixture.uniquePath("many") + "/" + LONG;
        assertRefusedAboveAndGrantedAtTheBound(zk.newClient(), path, path);
    }

    @Test
    void theConnectStringsChrootCountsInEveryCreate() throws Exception {
        String chroot = ZooKeeperFixture.uniquePath("chroot") + "/" + LONG;
        zk.newClient().create().creatingParentsIfNeeded().forPath(chroot);
        CuratorFramework client = zk.newCustomClient(b -> b.connectString(zk.connectString() + chroot));
        assertRefusedAboveAndGrantedAtTheBound(client, "/many", chroot + "/many");
    }

    private static void assertRefusedAboveAndGrantedAtTheBound(CuratorFramework client, String path, String onServer)
            throws Exception {
        DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 1_000_000);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> semaphore.acquire(1_000_000));
        Matcher bound = BOUND.matcher(e.getMessage());
        assertTrue(bound.lookingAt(), e.getMessage());
        assertTrue(
                e.getMessage()
                        .endsWith(": more would not fit the one ZooKeeper request that creates them (jute.maxbuffer "
                                + 0xfffff + " bytes): 1000000"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> semaphore.acquireAsync(1_000_000));
        assertNull(client.checkExists().forPath(path), "nothing was written");

        int most = Integer.parseInt(bound.group(1));
        assertTrue(most > 500 && most < 1_000, "the path's length counts: " + most);
        try (Lease lease = semaphore.tryAcquire(most, Duration.ofSeconds(30)).orElseThrow()) {
            assertEquals(LeaseState.HELD, lease.state());
        }
        zk.assertNoLeaks(onServer);
    }
}
