package io.coord.core.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The session-timeout count: once the connection has taken no writes for the session's timeout, counted from the drop,
 * the quorum may have given the session up, and the session's leases are lost, whatever Curator's listener thread is
 * doing. The count looks at the handle before it ends a lease: news of a drop can come out of turn.
 */
@Timeout(60)
class SessionLeasesTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void aDropWhoseNewsComesWhileTheHandleTakesWritesOnTheSessionEndsInACheckNotALoss() throws Exception {
        String path = ZooKeeperFixture.uniquePath("drop-out-of-turn");
        CuratorFramework client = zk.newClient();
        ClientContext context = ClientContext.of(client);
        Lease lease =
                LateConnectionNewsTest.mutexEngine(client, path).acquireAsync().get(10, TimeUnit.SECONDS);

        // News of a drop that the handle does not bear out: an older handle's, late, on its own event thread.
        context.leases().hear(KeeperState.Disconnected);
        assertEquals(LeaseState.SUSPECT, lease.state());

        // Once the session's timeout has run, the count finds the handle taking writes on the lease's session, and
        // checks the node instead of ending the lease.
        await().atMost(Duration.ofSeconds(20)).until(() -> lease.state() != LeaseState.SUSPECT);
        assertEquals(LeaseState.HELD, lease.state());
        lease.close();
        assertEquals(LeaseState.RELEASED, lease.ended().get(10, TimeUnit.SECONDS));
        client.close();
        zk.assertNoLeaks(path);
    }
}
