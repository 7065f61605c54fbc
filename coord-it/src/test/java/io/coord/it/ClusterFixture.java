package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.FourLetterWordMain;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A 3-node embedded ensemble for fault tests: clients with short sessions that are closed for you, servers that can
 * be killed and restarted one at a time, real server-side session expiry, and leak checks. One per test class, as
 * a JUnit extension: {@code @RegisterExtension static final ClusterFixture cluster = new ClusterFixture();}
 */
final class ClusterFixture implements BeforeAllCallback, AfterEachCallback, AfterAllCallback {
    static final Duration SESSION_TIMEOUT = Duration.ofSeconds(4);
    // A 1 s tick lets the servers grant the 4 s session (the minimum is two ticks) and notice dead peers quickly.
    private static final int TICK_MS = 1_000;
    private static final Duration SERVER_READY = Duration.ofSeconds(30);

    private TestingCluster cluster;
    private List<InstanceSpec> instances;
    private final List<CuratorFramework> clients = new CopyOnWriteArrayList<>();
    private volatile EngineMode mode = EngineMode.VIEW;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        // Read by every client coord meets from now on: idle views drop their watch soon after a test's last use.
        System.setProperty("coord.view.linger", ZooKeeperFixture.VIEW_LINGER.toString());
        List<InstanceSpec> specs = new ArrayList<>();
        for (int id = 1; id <= 3; id++) {
            specs.add(new InstanceSpec(null, -1, -1, -1, true, id, TICK_MS, -1));
        }
        cluster = new TestingCluster(specs);
        cluster.start();
        instances = List.copyOf(specs);
        for (InstanceSpec spec : specs) {
            awaitServing(spec);
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        closeClients();
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
        return cluster.getConnectString();
    }

    List<InstanceSpec> instances() {
        return instances;
    }

    /** The server's client address, host:port. */
    static String address(InstanceSpec spec) {
        return spec.getHostname() + ":" + spec.getPort();
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
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs(2_000)
                .retryPolicy(new RetryNTimes(20, 100))
                .ensembleTracker(false) // it keeps a config watch that would hide leaked ones
                .build();
        mode.apply(client);
        clients.add(client);
        client.start();
        if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
            throw new IllegalStateException("could not connect to " + connectString);
        }
        return client;
    }

    /** Stops one server abruptly; its clients move to the others. */
    void killServer(InstanceSpec spec) throws Exception {
        if (!cluster.killServer(spec)) {
            throw new IllegalStateException("no running server " + address(spec));
        }
    }

    /** Starts a killed server again and waits until it has rejoined the quorum and serves clients. */
    void restartServer(InstanceSpec spec) throws Exception {
        if (!cluster.restartServer(spec)) {
            throw new IllegalStateException("no server " + address(spec));
        }
        awaitServing(spec);
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
        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        long sessionId = zk.getSessionId();
        CountDownLatch connected = new CountDownLatch(1);
        Watcher watcher = e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        };
        // A second handle on the same session takes it over; closing that handle ends the session for good.
        ZooKeeper twin = new ZooKeeper(
                connectString(), (int) SESSION_TIMEOUT.toMillis(), watcher, sessionId, zk.getSessionPasswd());
        try {
            if (!connected.await(15, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not take over session 0x" + Long.toHexString(sessionId));
            }
        } finally {
            twin.close();
        }
        return sessionId;
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
    int watchCount() throws IOException {
        return ZooKeeperFixture.watchCount(connectString());
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

    void closeClients() {
        clients.forEach(CuratorFramework::close);
        clients.clear();
    }

    public void close() throws IOException {
        closeClients();
        cluster.close();
        System.clearProperty("coord.view");
    }

    private void awaitServing(InstanceSpec spec) {
        // "srvr" names the server's mode only once it is part of a quorum that serves requests.
        await("server " + address(spec) + " serving")
                .atMost(SERVER_READY)
                .pollInterval(Duration.ofMillis(100))
                .ignoreExceptions()
                .until(() -> FourLetterWordMain.send4LetterWord(spec.getHostname(), spec.getPort(), "srvr")
                        .contains("Mode: "));
    }
}
