package io.coord.core.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.core.LeaseState;
import io.coord.testkit.CapturedLog;
import io.coord.testkit.ZooKeeperFixture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** coord's own reactions to a lease's states run where the lease moves: one that fails must not stop the move. */
@Timeout(60)
class LeaseReactionTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void aReactionThatThrowsStillLetsTheLeaseEndAndItsNodeGo() throws Exception {
        String path = ZooKeeperFixture.uniquePath("failing-reaction");
        CuratorFramework client = zk.newClient();
        LeaseEngine engine = new LeaseEngine(client, path, "lock-", LeasePredicate.maxLeases(1), new byte[0]);
        Lease lease = engine.acquireAsync().get(10, TimeUnit.SECONDS);
        engine.onEveryState(lease, state -> {
            throw new IllegalStateException("a bug in a reaction");
        });

        try (CapturedLog log = new CapturedLog()) {
            lease.close();
            assertEquals(LeaseState.RELEASED, lease.ended().get(10, TimeUnit.SECONDS));
            lease.close(); // a second close returns too
            assertEquals(
                    1,
                    log.linesOf(LeaseImpl.class.getName()).stream()
                            .filter(line -> line.contains("a reaction to " + lease + " entering RELEASED failed"))
                            .count());
        }
        await().until(() -> engine.participants().isEmpty());
        Lease next = engine.acquireAsync().get(10, TimeUnit.SECONDS);
        next.close();
        zk.assertNoLeaks(path);
    }
}
