package io.coord.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperTest;
import org.junit.jupiter.api.Test;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

/** Spring Integration's own lock-based leader election, on coord's locks. */
@ZooKeeperTest
class SpringIntegrationLeaderTest {
    @Test
    void lockRegistryLeaderInitiatorElectsOneLeaderOnCoordLocks(ZooKeeperEnsemble zk) throws Exception {
        LockRegistryLeaderInitiator first =
                new LockRegistryLeaderInitiator(new CoordLockRegistry(zk.newClient(), "/si-locks"));
        LockRegistryLeaderInitiator second =
                new LockRegistryLeaderInitiator(new CoordLockRegistry(zk.newClient(), "/si-locks"));
        try {
            first.start();
            await().until(() -> first.getContext().isLeader());
            second.start();
            assertThat(second.getContext().isLeader()).isFalse();

            first.stop();
            await().until(() -> second.getContext().isLeader());
        } finally {
            first.stop();
            second.stop();
        }
    }
}
