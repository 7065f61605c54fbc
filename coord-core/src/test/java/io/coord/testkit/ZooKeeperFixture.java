package io.coord.testkit;

import io.coord.core.internal.ClientContext;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.test.TestingCluster;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.FourLetterWordMain;
import org.apache.zookeeper.data.StatPersisted;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.params.Parameter;

/**
 * coord's own tests' embedded ZooKeeper: a one-server {@link ZooKeeperEnsemble} from coord-testkit, plus what only
 * coord's tests need (the engine mode of the clients, a request counter, view linger). One per test class, as a JUnit
 * extension: the server starts before the class's first test, each test's clients are closed after it, and the
 * server stops after the last.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final ZooKeeperFixture zk = new ZooKeeperFixture();
 * }</pre>
 */
public final class ZooKeeperFixture
        implements BeforeAllCallback, BeforeEachCallback, AfterEachCallback, AfterAllCallback {
    public static final Duration SESSION_TIMEOUT = ZooKeeperEnsemble.DEFAULT_SESSION_TIMEOUT;
    /**
     * A session that outlives a server restart on a loaded machine: a client of one server waits 1 to 2 s between
     * tries to reconnect, and Curator declares a session lost once it has been disconnected for its whole length.
     */
    public static final Duration OUTAGE_PROOF_SESSION = Duration.ofSeconds(15);
    // mntr's zk_watch_count is data plus child watches; wchs would count data watches only.
    private static final Pattern WATCH_COUNT = Pattern.compile("zk_watch_count\\s+(\\d+)");
    private static final AtomicInteger PATHS = new AtomicInteger();

    /** How long a test client's unused view keeps its watch: short, so that leak checks need not wait long. */
    public static final Duration VIEW_LINGER = Duration.ofMillis(200);

    private ZooKeeperEnsemble ensemble;
    private volatile EngineMode mode = EngineMode.VIEW;
    private static final String WATCH_MANAGER = "zookeeper.watchManagerName";
    private String watchManager;
    private String managerBefore;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        // Read by every client coord meets from now on, namespace facades included.
        System.setProperty("coord.view.linger", VIEW_LINGER.toString());
        if (watchManager != null) {
            // Read whenever the server makes a data tree, which it may do again after it started: kept until afterAll.
            managerBefore = System.getProperty(WATCH_MANAGER);
            System.setProperty(WATCH_MANAGER, watchManager);
        }
        ensemble = ZooKeeperEnsemble.start(1);
    }

    /**
     * Starts the server with ZooKeeper's optional watch manager {@code WatchManagerOptimized}, which holds no
     * persistent watches and answers their add MARSHALLINGERROR. The system property that names it
     * ({@code zookeeper.watchManagerName}) is set from before the class's first test until after its last.
     */
    public ZooKeeperFixture withoutPersistentWatches() {
        watchManager = "org.apache.zookeeper.server.watch.WatchManagerOptimized";
        return this;
    }

    private static void restoreProperty(String key, String value) {
        if (value == null) {
            System.clearProperty(key);
        } else {
            System.setProperty(key, value);
        }
    }

    /**
     * A test class that runs {@link InBothEngineModes} (or one of them) gets its clients in the mode of the run: its
     * {@code @Parameter EngineMode} field, its own or a superclass's, injected by then, says which.
     */
    @Override
    public void beforeEach(ExtensionContext context) throws IllegalAccessException {
        Object test = context.getRequiredTestInstance();
        for (Class<?> type = test.getClass(); type != Object.class; type = type.getSuperclass()) {
            for (Field field : type.getDeclaredFields()) {
                if (field.getType() == EngineMode.class && field.isAnnotationPresent(Parameter.class)) {
                    field.setAccessible(true);
                    mode((EngineMode) field.get(test));
                }
            }
        }
    }

    /** Makes the clients this fixture creates from now on, and clients coord meets first, use {@code engine}. */
    public void mode(EngineMode engine) {
        mode = engine;
        System.setProperty("coord.view", engine.property());
    }

    public EngineMode mode() {
        return mode;
    }

    /**
     * Makes the views of {@code client} keep their watch for {@code linger} after their last use, from their next
     * release on: long, so that a count is never disturbed by a view dropped between two calls of a test.
     */
    public static void lingerViews(CuratorFramework client, Duration linger) {
        ClientContext context = ClientContext.of(client);
        context.configureViews(context.viewSettings().withLinger(linger));
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        closeClients();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        try {
            close();
        } finally {
            if (watchManager != null) {
                restoreProperty(WATCH_MANAGER, managerBefore);
            }
        }
    }

    /** The ensemble underneath, for the faults and checks this fixture does not wrap. */
    public ZooKeeperEnsemble ensemble() {
        return ensemble;
    }

    public String connectString() {
        return ensemble.connectString();
    }

    /** A fresh path per call, so tests in one class never share znodes. */
    public static String uniquePath(String name) {
        return "/test/" + name + "-" + PATHS.incrementAndGet();
    }

    /** A started, connected client that is closed after the test. */
    public CuratorFramework newClient() throws InterruptedException {
        return newClient(null);
    }

    /**
     * Like {@link #newClient()}, its requests counted by {@code counter} if there is one. A counted client's session
     * is {@link #OUTAGE_PROOF_SESSION} long: a stall of a loaded machine past a short session's read timeout would
     * drop the connection, and the reconnection's retries and reads would be counted too.
     */
    public CuratorFramework newClient(RequestCounter counter) throws InterruptedException {
        CuratorFramework client = counter == null ? unstartedClient() : unstartedClient(ZooKeeperFixture::outageProof);
        if (counter != null) {
            client.getZookeeperClient().setTracerDriver(counter);
        }
        return ensemble.connect(client);
    }

    public CuratorFramework unstartedClient() {
        return unstartedClient(builder -> {});
    }

    /** An unstarted client with this fixture's settings, changed by {@code custom}; closed after the test. */
    public CuratorFramework unstartedClient(Consumer<CuratorFrameworkFactory.Builder> custom) {
        CuratorFramework client = ensemble.unstartedClient(custom);
        mode.apply(client);
        return client;
    }

    /** A started, connected client with this fixture's settings, changed by {@code custom}. */
    public CuratorFramework newCustomClient(Consumer<CuratorFrameworkFactory.Builder> custom)
            throws InterruptedException {
        return ensemble.connect(unstartedClient(custom));
    }

    /**
     * A started, connected client whose session outlives a server restart ({@link #OUTAGE_PROOF_SESSION}): for tests
     * that need the same session after {@link #stopServer()} and {@link #restartServer()}.
     */
    public CuratorFramework newOutageProofClient() throws InterruptedException {
        return newCustomClient(ZooKeeperFixture::outageProof);
    }

    /** Sets the builder's session to {@link #OUTAGE_PROOF_SESSION}. */
    public static void outageProof(CuratorFrameworkFactory.Builder builder) {
        builder.sessionTimeoutMs((int) OUTAGE_PROOF_SESSION.toMillis());
    }

    /** Counts down once {@code client} reports {@code state}: a test's wait for a connection change it caused. */
    public static CountDownLatch latchOn(CuratorFramework client, ConnectionState state) {
        CountDownLatch reached = new CountDownLatch(1);
        client.getConnectionStateListenable().addListener((c, now) -> {
            if (now == state) {
                reached.countDown();
            }
        });
        return reached;
    }

    /**
     * An application's connection listener that blocks until the returned latch is counted down: added before the
     * client starts, it holds Curator's one listener thread from the first news on, and nothing that listens there
     * hears of a drop, a reconnection or a session's end while it does.
     */
    public static CountDownLatch holdUpListenerThread(CuratorFramework client) {
        CountDownLatch letGo = new CountDownLatch(1);
        client.getConnectionStateListenable().addListener((c, state) -> {
            try {
                letGo.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return letGo;
    }

    /**
     * A started, connected client through {@code proxy} whose session outlives an outage, and which tries a request
     * twice, each time waiting a second for a connection: where a test needs Curator's retry policy to give up.
     */
    public CuratorFramework newClientRetryingOnce(ZooKeeperProxy proxy) throws InterruptedException {
        return newCustomClient(b -> b.connectString(proxy.connectString())
                .sessionTimeoutMs((int) OUTAGE_PROOF_SESSION.toMillis())
                .connectionTimeoutMs(1_000)
                .retryPolicy(new RetryNTimes(1, 100)));
    }

    /**
     * A started, connected client through {@code proxy} whose requests Curator never sends again: an answer lost with
     * the connection comes back in doubt at once.
     */
    public CuratorFramework newClientWithoutRetries(ZooKeeperProxy proxy) throws InterruptedException {
        return newCustomClient(b -> b.connectString(proxy.connectString()).retryPolicy(new RetryNTimes(0, 0)));
    }

    /**
     * A started, connected client through {@code proxy} whose session outlives an outage and whose retries outlast
     * it: nothing but the code under test gives up on a request while the proxy cuts or loses replies.
     */
    public CuratorFramework newOutageProofClient(ZooKeeperProxy proxy) throws InterruptedException {
        return newCustomClient(b -> b.connectString(proxy.connectString())
                .sessionTimeoutMs((int) OUTAGE_PROOF_SESSION.toMillis())
                .retryPolicy(new RetryNTimes(1_000, 100)));
    }

    /**
     * Options under which a client declares its session lost once cut off for 2 s (Curator's simulated expiry) while
     * the server keeps it for 20 s, and gives up on a request after one try: a client that moves on from a session
     * the server still keeps.
     */
    public static void givingUpBeforeTheServer(CuratorFrameworkFactory.Builder builder) {
        builder.sessionTimeoutMs(20_000)
                .simulatedSessionExpirationPercent(10)
                .connectionTimeoutMs(1_000)
                .retryPolicy(new RetryNTimes(0, 0));
    }

    /** A started, connected client with {@link #givingUpBeforeTheServer} options. */
    public CuratorFramework newClientGivingUpBeforeTheServer() throws InterruptedException {
        return newCustomClient(ZooKeeperFixture::givingUpBeforeTheServer);
    }

    /** A session as the server knows it: what a handle needs to join it. */
    public record Session(long id, byte[] password) {
        /** The session {@code client} is on now. */
        public static Session of(CuratorFramework client) throws Exception {
            ZooKeeper handle = client.getZookeeperClient().getZooKeeper();
            return new Session(handle.getSessionId(), handle.getSessionPasswd());
        }
    }

    /**
     * Ends {@code session} on the server if it is still alive there, and answers whether it was: a handle that joins
     * a live session connects, one that joins an ended session is told it expired.
     */
    public boolean endSessionIfAlive(Session session) throws Exception {
        long sessionId = session.id();
        byte[] password = session.password();
        CountDownLatch answered = new CountDownLatch(1);
        AtomicBoolean alive = new AtomicBoolean();
        Watcher watcher = e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                alive.set(true);
                answered.countDown();
            } else if (e.getState() == Watcher.Event.KeeperState.Expired) {
                answered.countDown();
            }
        };
        ZooKeeper twin = new ZooKeeper(connectString(), (int) SESSION_TIMEOUT.toMillis(), watcher, sessionId, password);
        try {
            if (!answered.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no answer about session " + sessionId);
            }
            return alive.get();
        } finally {
            twin.close();
        }
    }

    /** Expires the client's session on the server, as a long partition would: its ephemeral nodes are deleted. */
    public void expireSession(CuratorFramework client) throws Exception {
        ensemble.expireSession(client);
    }

    /** Stops the server; {@link #restartServer()} brings it back with its data and sessions. */
    public void stopServer() {
        ensemble.servers().get(0).kill();
    }

    public void restartServer() {
        ensemble.servers().get(0).restart();
    }

    /**
     * Sets the counter the server numbers {@code path}'s sequential children with, as if {@code creates} children had
     * been created under it: the next one is numbered {@code creates}. It takes billions of creates to bring the 32-bit
     * counter to its wrap, and a moment this way. The change is made in the server's memory, so the path must exist
     * and no request on it may be in flight.
     */
    public void setChildCounter(String path, int creates) throws Exception {
        serverStat(path).setCversion(creates); // the server's own count of creates, which it numbers children with
    }

    /**
     * Sets the data version of {@code path} on the server, as if its data had been set {@code version} times (modulo
     * 2^32): the 32-bit version wraps, and it takes billions of writes to get there. As for {@link #setChildCounter},
     * the path must exist and no request on it may be in flight.
     */
    public void setDataVersion(String path, int version) throws Exception {
        serverStat(path).setVersion(version);
    }

    /** The server's own stat of {@code path}, in its memory. */
    private StatPersisted serverStat(String path) throws Exception {
        // By reflection throughout: the server's classes carry annotations this build does not have on its path.
        TestingCluster cluster = (TestingCluster) read(ensemble, "cluster");
        Object main = read(cluster.getServers().get(0), "main");
        Object connections = main.getClass().getMethod("getServerCnxnFactory").invoke(main);
        Object server = connections.getClass().getMethod("getZooKeeperServer").invoke(connections);
        Object database = server.getClass().getMethod("getZKDatabase").invoke(server);
        Object tree = database.getClass().getMethod("getDataTree").invoke(database);
        Object node = tree.getClass().getMethod("getNode", String.class).invoke(tree, path);
        return (StatPersisted) read(node, "stat");
    }

    /** A field of {@code owner}, declared by its class or a superclass. */
    private static Object read(Object owner, String fieldName) throws ReflectiveOperationException {
        for (Class<?> type = owner.getClass(); type != null; type = type.getSuperclass()) {
            try {
                Field field = type.getDeclaredField(fieldName);
                field.setAccessible(true);
                return field.get(owner);
            } catch (NoSuchFieldException e) {
                // declared higher up, if at all
            }
        }
        throw new NoSuchFieldException(fieldName + " in " + owner.getClass());
    }

    /** The server's count of data and child watches held by all sessions. */
    public int watchCount() {
        return ensemble.watchCount();
    }

    /** The count of watches that the servers of {@code connectString}, which need not be embedded, hold, summed. */
    public static int watchCount(String connectString) throws IOException {
        int total = 0;
        for (String hostPort : connectString.split(",")) {
            int colon = hostPort.lastIndexOf(':');
            InetSocketAddress address = new InetSocketAddress(
                    hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
            String reply;
            try {
                reply = FourLetterWordMain.send4LetterWord(address.getHostString(), address.getPort(), "mntr");
            } catch (Exception e) {
                continue; // a stopped server holds no watches
            }
            Matcher m = WATCH_COUNT.matcher(reply);
            if (!m.find()) {
                throw new IllegalStateException("no zk_watch_count in the mntr reply: " + reply);
            }
            total += Integer.parseInt(m.group(1));
        }
        return total;
    }

    /** Every watched path and how many sessions watch it, for failure messages. */
    public String watchesByPath() {
        return ensemble.watchesUnder("/").toString();
    }

    /** Waits until {@code path} has no children and the server holds no watches. */
    public void assertNoLeaks(String path) throws Exception {
        ensemble.assertNoZnodesUnder(path);
        ensemble.assertNoWatchesUnder("/");
    }

    /** Closes the test's clients, and brings the server back if the test left it stopped. */
    public void closeClients() {
        ensemble.reset();
    }

    public void close() throws Exception {
        ensemble.close();
        System.clearProperty("coord.view");
    }
}
