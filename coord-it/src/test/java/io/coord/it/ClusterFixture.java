package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.testkit.EmbeddedServer;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperFixture;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A 3-node coord-testkit {@link ZooKeeperEnsemble} for fault tests, plus what only coord's ITs need: the engine mode
 * of the clients, client-side expiry, and a leak check that names each left node's session and zxid. One per test
 * class, as a JUnit extension: {@code @RegisterExtension static final ClusterFixture cluster = new ClusterFixture();}
 */
final class ClusterFixture implements BeforeAllCallback, AfterEachCallback, AfterAllCallback {
    static final Duration SESSION_TIMEOUT = ZooKeeperEnsemble.DEFAULT_SESSION_TIMEOUT;

    private ZooKeeperEnsemble ensemble;
    private volatile EngineMode mode = EngineMode.VIEW;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        // Read by every client coord meets from now on: idle views drop their watch soon after a test's last use.
        System.setProperty("coord.view.linger", ZooKeeperFixture.VIEW_LINGER.toString());
        ensemble = ZooKeeperEnsemble.start(3);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        closeClients();
        mode(EngineMode.VIEW); // the default again, for the next test of the class that does not choose
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        close();
    }

    /** Makes the clients created from now on, and clients coord meets first, use {@code engine}. */
    void mode(EngineMode engine) {
        mode = engine;
        System.setProperty("coord.view", engine.property());
    }

    String connectString() {
        return ensemble.connectString();
    }

    List<EmbeddedServer> servers() {
        return ensemble.servers();
    }

    /** A started, connected client that is closed by {@link #closeClients()}. */
    CuratorFramework newClient() throws InterruptedException {
        return newClient(connectString());
    }

    /** Like {@link #newClient()}, through another address such as a proxy's. */
    CuratorFramework newClient(String connectString) throws InterruptedException {
        return newClient(connectString, SESSION_TIMEOUT);
    }

    /** Like {@link #newClient(String)}, with a session of {@code sessionTimeout}. */
    CuratorFramework newClient(String connectString, Duration sessionTimeout) throws InterruptedException {
        return newClient(connectString, builder -> builder.sessionTimeoutMs((int) sessionTimeout.toMillis()));
    }

    /** Like {@link #newClient(String)}, with the builder's settings changed by {@code custom}. */
    CuratorFramework newClient(String connectString, Consumer<CuratorFrameworkFactory.Builder> custom)
            throws InterruptedException {
        CuratorFramework client =
                ensemble.unstartedClient(builder -> custom.accept(builder.connectString(connectString)));
        mode.apply(client);
        return ensemble.connect(client);
    }

    /** The current session id of the client's ZooKeeper handle, 0 while it has none. */
    static long sessionId(CuratorFramework client) {
        try {
            return client.getZookeeperClient().getZooKeeper().getSessionId();
        } catch (Exception e) {
            return 0;
        }
    }

    /**
     * Expires the client's session on the servers, as a long partition would: its ephemeral nodes are deleted and
     * the other clients are told so before this client learns of it. Returns the id of the session it ended.
     */
    long expireSession(CuratorFramework client) throws Exception {
        return ensemble.expireSession(client);
    }
    /**
     * Makes the client believe its session expired, as Curator does after a long disconnection: it drops the
     * connection, and the servers expire the old session when its timeout runs out. Not always, though: the hook
     * queues the expiry event before it marks the handle closed, and Curator closes the handle as soon as it sees the
     * event. When Curator gets there first, its close still sends a close request, the servers end the session at
     * once, and Curator, waiting on that close, reports LOST about 100 ms later. Like {@link #expireSession}, the
     * fault can then leave the client a moment behind the servers.
     */
    void expireSessionOnClient(CuratorFramework client) throws Exception {
        client.getZookeeperClient().getZooKeeper().getTestable().injectSessionExpiration();
    }

    /** The watches that the running servers hold, summed. */
    int watchCount() {
        return ensemble.watchCount();
    }

    /** Waits until {@code path} has no children and the servers hold no watches, reading through {@code reader}. */
    void assertNoLeaks(CuratorFramework reader, String path) {
        await("no znodes left under " + path)
                .atMost(Duration.ofSeconds(20))
                .untilAsserted(() -> assertEquals(List.of(), describeChildren(reader, path), "znodes left"));
        await("no watches left on the servers").atMost(Duration.ofSeconds(20)).until(() -> watchCount() == 0);
    }

    /** Each child of {@code path} with its owner session and creation zxid, for failure messages. */
    static List<String> describeChildren(CuratorFramework reader, String path) throws Exception {
        if (reader.checkExists().forPath(path) == null) {
            return List.of();
        }
        List<String> children = new ArrayList<>();
        for (String child : reader.getChildren().forPath(path)) {
            Stat stat = reader.checkExists().forPath(path + "/" + child);
            children.add(
                    stat == null
                            ? child + " (gone)"
                            : child + " (session 0x" + Long.toHexString(stat.getEphemeralOwner()) + ", czxid "
                                    + stat.getCzxid() + ")");
        }
        return children;
    }

    /** Closes every client, then checks with a fresh one that nothing is left under {@code path}. */
    void closeClientsAndAssertNoLeaks(String path) throws InterruptedException {
        closeClients();
        CuratorFramework reader = newClient();
        try {
            assertNoLeaks(reader, path);
        } finally {
            closeClients();
        }
    }

    /** Closes every client, and restarts the servers a test left killed. */
    void closeClients() {
        ensemble.reset();
    }

    public void close() throws IOException {
        ensemble.close();
        System.clearProperty("coord.view");
    }
}
