package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.mutex.ReentrantMutex;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.utils.CloseableUtils;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A holder whose server loses its quorum and goes on read-only. A server before 3.7 lets a session reconnect there
 * (later ones refuse, ZOOKEEPER-3863), and keeps it alive for itself, while the quorum, once back, has expired it: the
 * connection takes no writes, so coord counts the session's timeout from the drop through it, and the lease is lost
 * when the timeout has run, while the client is still connected read-only. Curator counts only a suspended
 * connection, and would report nothing until the quorum is back.
 */
@Timeout(240)
class ReadOnlyGiveUpIT {
    // Long enough that the move to read-only (a few seconds after the quorum is lost) comes well within it.
    private static final int SESSION_MS = 15_000;
    private List<OldServer> servers = List.of();
    private final List<CuratorFramework> clients = new ArrayList<>();

    @BeforeEach
    void startEnsemble() throws Exception {
        servers = OldServer.startReadOnlyEnsemble("old-zookeeper.lib");
    }

    @AfterEach
    void stopEnsemble() throws Exception {
        try {
            clients.forEach(CloseableUtils::closeQuietly);
        } finally {
            OldServer.stopAll(servers);
        }
    }

    @Test
    void aLeaseHeldThroughAReadOnlyConnectionIsLostOnceTheSessionsTimeoutHasRunFromTheDrop() throws Exception {
        CuratorFramework client = readOnlyCapableClient(servers.get(0));
        List<ConnectionState> curatorSaid = new CopyOnWriteArrayList<>();
        client.getConnectionStateListenable().addListener((c, state) -> curatorSaid.add(state));
        // A server may serve read-only before its ensemble forms: the client moves on once a quorum takes writes.
        await("the quorum takes writes")
                .atMost(Duration.ofSeconds(60))
                .until(() -> handleState(client) == ZooKeeper.States.CONNECTED);
        ReentrantMutex mutex = new ReentrantMutex(client, ZooKeeperFixture.uniquePath("read-only-give-up"));
        assertTrue(mutex.acquire(Duration.ofSeconds(30)));
        Lease lease = mutex.lease();
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        assertEquals(SESSION_MS, client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs());
        List<ZooKeeper.States> connectionWhenLost = new CopyOnWriteArrayList<>();
        lease.addStateListener(
                state -> {
                    if (state == LeaseState.LOST) {
                        connectionWhenLost.add(handleState(client));
                    }
                },
                Runnable::run);

        OldServer.stopAll(servers.subList(1, 3));
        await("a read-only connection")
                .atMost(Duration.ofSeconds(SESSION_MS / 1_000))
                .until(() -> handleState(client) == ZooKeeper.States.CONNECTEDREADONLY);
        assertEquals(session, client.getZookeeperClient().getZooKeeper().getSessionId(), "the same session");
        assertNotEquals(LeaseState.LOST, lease.state(), "the test needs the read-only connection within the timeout");

        await("the lease lost").atMost(Duration.ofSeconds(40)).until(() -> lease.state() == LeaseState.LOST);
        assertEquals(List.of(ZooKeeper.States.CONNECTEDREADONLY), connectionWhenLost);
        // coord's own count: Curator counts only while suspended, not read-only, and the client is still on that
        // session.
        assertEquals(session, client.getZookeeperClient().getZooKeeper().getSessionId(), "the session the server kept");
        assertTrue(curatorSaid.contains(ConnectionState.READ_ONLY), curatorSaid.toString());
        assertFalse(curatorSaid.contains(ConnectionState.LOST), curatorSaid.toString());
    }

    private CuratorFramework readOnlyCapableClient(OldServer server) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(server.connectString())
                .sessionTimeoutMs(SESSION_MS)
                .connectionTimeoutMs(2_000)
                .canBeReadOnly(true)
                .retryPolicy(new RetryNTimes(100, 100))
                .ensembleTracker(false)
                .build();
        clients.add(client);
        client.start();
        assertTrue(client.blockUntilConnected(60, TimeUnit.SECONDS), "connected to " + server.connectString());
        return client;
    }

    private static ZooKeeper.States handleState(CuratorFramework client) {
        try {
            return client.getZookeeperClient().getZooKeeper().getState();
        } catch (Exception e) {
            return null;
        }
    }
}
