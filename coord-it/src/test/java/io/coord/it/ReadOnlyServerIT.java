package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.mutex.ReentrantMutex;
import io.coord.testkit.EmbeddedServer;
import io.coord.testkit.ZooKeeperEnsemble;
import java.time.Duration;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A client that may connect read-only ({@code canBeReadOnly}) to a server cut off from its quorum: such a server
 * answers reads and refuses every write, so coord counts the connection as no connection. A one-look acquisition is
 * refused as when disconnected, with nothing sent, and works again once the quorum is back.
 */
@Timeout(120)
class ReadOnlyServerIT {
    private static final String READ_ONLY_MODE = "readonlymode.enabled";
    private static ZooKeeperEnsemble ensemble;

    @BeforeAll
    static void startEnsemble() throws Exception {
        System.setProperty(READ_ONLY_MODE, "true"); // read by a server each time it loses its quorum
        ensemble = ZooKeeperEnsemble.start(3);
    }

    @AfterAll
    static void stopEnsemble() throws Exception {
        try {
            ensemble.close();
        } finally {
            System.clearProperty(READ_ONLY_MODE);
        }
    }

    @Test
    void aOneLookAcquisitionOnAReadOnlyConnectionIsRefusedAsWhenDisconnected() throws Exception {
        String path = "/read-only/mutex";
        EmbeddedServer last = ensemble.servers().get(0);
        CuratorFramework client =
                ensemble.newClient(b -> b.connectString(last.address()).canBeReadOnly(true));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        assertTrue(mutex.acquire(Duration.ZERO)); // the parents are made while the quorum stands
        mutex.release();

        List<EmbeddedServer> others = ensemble.servers().subList(1, 3);
        others.forEach(EmbeddedServer::kill);
        await().atMost(Duration.ofSeconds(60)).until(() -> handleState(client) == ZooKeeper.States.CONNECTEDREADONLY);

        assertFalse(mutex.acquire(Duration.ZERO), "a read-only server takes no create");

        others.forEach(EmbeddedServer::restart);
        await().atMost(Duration.ofSeconds(60)).until(() -> handleState(client) == ZooKeeper.States.CONNECTED);
        await().atMost(Duration.ofSeconds(30)).pollInSameThread().until(() -> mutex.acquire(Duration.ZERO));
        mutex.release();
        await().until(() -> client.getChildren().forPath(path).isEmpty());
    }

    private static ZooKeeper.States handleState(CuratorFramework client) throws Exception {
        return client.getZookeeperClient().getZooKeeper().getState();
    }
}
