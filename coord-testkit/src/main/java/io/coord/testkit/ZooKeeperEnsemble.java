package io.coord.testkit;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingZooKeeperServer;
import org.apache.curator.utils.PathUtils;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.FourLetterWordMain;
import org.apache.zookeeper.data.Stat;

/**
 * An embedded ZooKeeper ensemble for tests: real servers in this JVM, clients with short sessions that the
 * ensemble closes for you, the faults a service must survive, and leak checks read from the servers' own counters.
 *
 * <p>{@link ZooKeeperTest} starts one per test class; {@link #builder()} starts one by hand (close it when done).
 * Every fault is the real thing, not a mock: {@link #expireSession} ends the session on the servers, {@link
 * EmbeddedServer#kill()} stops a server, and a {@link ZooKeeperProxy} between a client and a server cuts, slows or
 * loses its traffic.
 */
public final class ZooKeeperEnsemble implements AutoCloseable {
    /** The session timeout of the clients an ensemble hands out unless told otherwise. */
    public static final Duration DEFAULT_SESSION_TIMEOUT = Duration.ofSeconds(4);
    // What a server answers a four-letter word with between a kill and the end of the election that follows.
    private static final String NOT_SERVING = "not currently serving requests";
    // The ports of this JVM's ensembles that have not closed, from the moment they are picked.
    private static final Set<Integer> RESERVED = ConcurrentHashMap.newKeySet();
    private static final String ROOT_PREFIX = "coord-ensemble-";
    private final AtomicBoolean closed = new AtomicBoolean();
    // Servers listen between these, below the ports systems hand out on their own (see specs).
    private static final int FIRST_PICKED_PORT = 20_000;
    private static final int FIRST_EPHEMERAL_PORT = 32_768;

    // A 1 s tick notices a dead peer quickly. The servers grant sessions of 1 to 20 ticks (curator-test lowers
    // ZooKeeper's minimum of 2 to 1); the kit asks for 2 at least, since on a loaded machine a 1 s session expires by
    // chance.
    private static final int TICK_MS = 1_000;
    private static final Duration MIN_SESSION = Duration.ofMillis(2L * TICK_MS);
    private static final Duration MAX_SESSION = Duration.ofMillis(20L * TICK_MS);
    private static final Duration SERVER_READY = Duration.ofSeconds(60);
    private static final Duration CONNECT_WAIT = Duration.ofSeconds(15);
    private static final Duration POLL = Duration.ofMillis(50);
    private static final int FOUR_LETTER_TIMEOUT_MS = 5_000;
    private static final Pattern WATCH_COUNT = Pattern.compile("zk_watch_count\\s+(\\d+)");

    private final TestingCluster cluster;
    private final List<EmbeddedServer> servers;
    private final Duration sessionTimeout;
    private final List<CuratorFramework> clients = new CopyOnWriteArrayList<>();
    // Every change of connection any client has heard: a leak check that sees one while it reads cannot trust the read.
    private final AtomicLong connectionChanges = new AtomicLong();
    private final List<ZooKeeperProxy> proxies = new CopyOnWriteArrayList<>();

    private ZooKeeperEnsemble(TestingCluster cluster, List<InstanceSpec> specs, Duration sessionTimeout) {
        this.cluster = cluster;
        List<EmbeddedServer> list = new ArrayList<>();
        for (InstanceSpec spec : specs) {
            list.add(new EmbeddedServer(this, spec));
        }
        this.servers = List.copyOf(list);
        this.sessionTimeout = sessionTimeout;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Starts {@code servers} servers with the default session timeout and waits until every one serves clients. */
    public static ZooKeeperEnsemble start(int servers) throws Exception {
        return builder().servers(servers).start();
    }

    /** Settings of an ensemble, checked before anything starts. */
    public static final class Builder {
        private int servers = 1;
        private Duration sessionTimeout = DEFAULT_SESSION_TIMEOUT;

        private Builder() {}

        /** How many servers: 1 is a standalone server, 3 or more a quorum. */
        public Builder servers(int count) {
            if (count < 1) {
                throw new IllegalArgumentException("servers must be at least 1, was " + count);
            }
            this.servers = count;
            return this;
        }

        /**
         * The session timeout of the clients the ensemble hands out: between 2 s and 20 s. The servers grant no more
         * than 20 s, and a shorter session than 2 s expires by chance on a loaded machine.
         */
        public Builder sessionTimeout(Duration timeout) {
            if (timeout == null) {
                throw new NullPointerException("sessionTimeout");
            }
            if (timeout.compareTo(MIN_SESSION) < 0 || timeout.compareTo(MAX_SESSION) > 0) {
                throw new IllegalArgumentException("sessionTimeout must be between " + MIN_SESSION.toSeconds()
                        + " s and " + MAX_SESSION.toSeconds() + " s, was " + timeout);
            }
            this.sessionTimeout = timeout;
            return this;
        }

        /** Starts the servers and waits until every one serves clients. */
        public ZooKeeperEnsemble start() throws Exception {
            // The leak checks and the tests' diagnostics read the servers' four-letter words.
            if (System.getProperty("zookeeper.4lw.commands.whitelist") == null) {
                System.setProperty("zookeeper.4lw.commands.whitelist", "*");
            }
            List<InstanceSpec> specs = specs(servers);
            TestingCluster cluster;
            try {
                cluster = new TestingCluster(specs);
            } catch (RuntimeException | Error e) {
                release(specs);
                throw e;
            }
            ZooKeeperEnsemble ensemble = new ZooKeeperEnsemble(cluster, specs, sessionTimeout);
            try {
                cluster.start();
                for (EmbeddedServer server : ensemble.servers) {
                    ensemble.awaitServing(server, SERVER_READY);
                }
            } catch (Exception | Error e) {
                try {
                    ensemble.close();
                } catch (IOException | RuntimeException closing) {
                    e.addSuppressed(closing);
                }
                throw e;
            }
            return ensemble;
        }
    }

    /**
     * Specs for {@code count} servers whose 3 ports each (client, quorum, election) are all different. Each port is
     * picked by binding a socket to it and kept bound until every port is picked: curator-test picks each port alone
     * and frees it at once, so two ports of one ensemble can come out the same, and the second server to bind it
     * fails (its embedded ZooKeeper then ends the JVM). The ports lie below the range systems hand out for port 0 and
     * for outgoing connections (from 32768 on Linux, 49152 elsewhere), so that the port of a killed server is not
     * taken by a client's connection, here or in another JVM, before the server restarts. The ports stay reserved in
     * this JVM until the ensemble closes: a killed server's ports, and a follower's quorum port, which only a leader
     * binds, are free to bind meanwhile, and another ensemble of this JVM must not take them.
     */
    static List<InstanceSpec> specs(int count) throws IOException {
        return specs(count, portSlice());
    }

    /** {@link #specs(int)}, picking from {@code slice}: from its first port up to, not including, its second. */
    static List<InstanceSpec> specs(int count, int[] slice) throws IOException {
        int[] ports = reserve(3 * count, slice);
        try {
            // One directory for the ensemble, which close() deletes: ZooKeeper writes each server's configuration
            // file, at every start, beside the server's data directory, and never deletes it.
            Path root = Files.createTempDirectory(ROOT_PREFIX);
            List<InstanceSpec> specs = new ArrayList<>();
            for (int id = 1; id <= count; id++) {
                int first = 3 * (id - 1);
                File data = Files.createDirectory(root.resolve("server-" + id)).toFile();
                // maxClientCnxns 0 lifts the per-address limit: every client of a test comes from loopback.
                specs.add(
                        new InstanceSpec(data, ports[first], ports[first + 1], ports[first + 2], true, id, TICK_MS, 0));
            }
            return specs;
        } catch (IOException | RuntimeException | Error e) {
            for (int port : ports) {
                RESERVED.remove(port);
            }
            throw e;
        }
    }

    /**
     * {@code count} different ports for servers a test runs on its own (another release's, each in a process of its
     * own), picked as an ensemble's are (see {@link #specs(int)}) and reserved in this JVM for good.
     */
    public static List<Integer> reservePorts(int count) throws IOException {
        return Arrays.stream(reserve(count, portSlice())).boxed().toList();
    }

    /** {@code count} different ports from {@code slice}, each bound until all are picked, and reserved. */
    private static int[] reserve(int count, int[] slice) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        int[] ports = new int[count];
        int picked = 0;
        try {
            while (picked < ports.length) {
                ServerSocket socket = bindBelowEphemeralPorts(slice);
                held.add(socket);
                if (RESERVED.add(socket.getLocalPort())) {
                    ports[picked++] = socket.getLocalPort();
                }
            }
            return ports;
        } catch (IOException | RuntimeException | Error e) {
            for (int i = 0; i < picked; i++) {
                RESERVED.remove(ports[i]);
            }
            throw e;
        } finally {
            for (ServerSocket socket : held) {
                socket.close();
            }
        }
    }

    static boolean isReserved(int port) {
        return RESERVED.contains(port);
    }

    /** Frees the ports of {@code specs} for the next ensembles of this JVM, and deletes their directory. */
    static void release(List<InstanceSpec> specs) {
        for (InstanceSpec spec : specs) {
            RESERVED.remove(spec.getPort());
            RESERVED.remove(spec.getQuorumPort());
            RESERVED.remove(spec.getElectionPort());
        }
        specs.stream()
                .map(spec -> spec.getDataDirectory().toPath().getParent())
                .filter(root -> root != null && root.getFileName().toString().startsWith(ROOT_PREFIX))
                .distinct()
                .forEach(ZooKeeperEnsemble::deleteQuietly);
    }

    /** Deletes the tree at {@code root}, as much of it as can be: what is left is in the system's temp directory. */
    private static void deleteQuietly(Path root) {
        try (Stream<Path> tree = Files.walk(root)) {
            tree.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // Gone already, or held open by a server that did not stop.
        }
    }

    /** A socket bound to a free port picked at random from this JVM's {@link #portSlice()}. */
    private static ServerSocket bindBelowEphemeralPorts(int[] slice) throws IOException {
        IOException last = null;
        for (int attempt = 0; attempt < 100; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(slice[0], slice[1]);
            if (RESERVED.contains(port)) {
                continue; // another ensemble's, perhaps of a server that is down for now
            }
            try {
                return new ServerSocket(port);
            } catch (IOException taken) {
                last = taken;
            }
        }
        throw new IOException("no free port between " + slice[0] + " and " + slice[1], last);
    }

    /**
     * The ports this JVM picks from, {@code [from, to)}: the whole range below the ephemeral ports, or, when test JVMs
     * run side by side (Surefire's {@code forkCount}), the {@code coord.testkit.fork}th of {@code coord.testkit.forks}
     * equal slices of it (set them to {@code ${surefire.forkNumber}} and the fork count), so that no fork of one test
     * run picks a port of a server another one killed, which could then not start again. Values that do not name a
     * slice (unset, {@code 1C}, a fork past the count) leave the whole range.
     */
    static int[] portSlice() {
        int forks = positive(System.getProperty("coord.testkit.forks"));
        int fork = positive(System.getProperty("coord.testkit.fork"));
        if (forks < 2 || forks > 64 || fork < 1 || fork > forks) {
            return new int[] {FIRST_PICKED_PORT, FIRST_EPHEMERAL_PORT};
        }
        int width = (FIRST_EPHEMERAL_PORT - FIRST_PICKED_PORT) / forks;
        int from = FIRST_PICKED_PORT + (fork - 1) * width;
        return new int[] {from, from + width};
    }

    /** The number {@code value} names if it is a positive integer, else 0. */
    private static int positive(String value) {
        try {
            return value == null ? 0 : Math.max(0, Integer.parseInt(value.trim()));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** Every server, running or killed, in id order. */
    public List<EmbeddedServer> servers() {
        return servers;
    }

    /** The connect string of every server, killed ones included: clients move between them on their own. */
    public String connectString() {
        return cluster.getConnectString();
    }

    public Duration sessionTimeout() {
        return sessionTimeout;
    }

    /** A started, connected client of the whole ensemble, closed after the test (or by {@link #reset()}). */
    public CuratorFramework newClient() throws InterruptedException {
        return connect(unstartedClient(builder -> {}));
    }

    /** Like {@link #newClient()}, of the servers in {@code connectString} only, such as a proxy's. */
    public CuratorFramework newClient(String connectString) throws InterruptedException {
        return connect(unstartedClient(builder -> builder.connectString(connectString)));
    }

    /** Like {@link #newClient()}, with the ensemble's settings changed by {@code custom}. */
    public CuratorFramework newClient(Consumer<CuratorFrameworkFactory.Builder> custom) throws InterruptedException {
        return connect(unstartedClient(custom));
    }

    /**
     * An unstarted client with the ensemble's settings changed by {@code custom}, closed after the test: for a
     * client that needs something done before it starts, such as a tracer. {@link #connect} starts it.
     */
    public CuratorFramework unstartedClient(Consumer<CuratorFrameworkFactory.Builder> custom) {
        checkOpen();
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(connectString())
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs(2_000)
                .retryPolicy(new RetryNTimes(20, 100))
                // The tracker keeps a config watch that would hide leaked ones, and could bypass a proxy.
                .ensembleTracker(false);
        custom.accept(builder);
        CuratorFramework client = builder.build();
        client.getConnectionStateListenable().addListener((c, state) -> connectionChanges.incrementAndGet());
        clients.add(client);
        if (closed.get()) { // closed meanwhile: nobody would close this one
            clients.remove(client);
            throw ensembleClosed();
        }
        return client;
    }

    private void checkOpen() {
        if (closed.get()) {
            throw ensembleClosed();
        }
    }

    private IllegalStateException ensembleClosed() {
        return new IllegalStateException("this ensemble (" + connectString()
                + ") was closed with its test class: use the one of the running test");
    }

    /** Starts {@code client} if it is not started and waits until it is connected. */
    public CuratorFramework connect(CuratorFramework client) throws InterruptedException {
        if (client.getState() == org.apache.curator.framework.imps.CuratorFrameworkState.LATENT) {
            client.start();
        }
        if (!client.blockUntilConnected((int) CONNECT_WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new IllegalStateException("client could not connect to "
                    + client.getZookeeperClient().getCurrentConnectionString() + " within " + CONNECT_WAIT);
        }
        return client;
    }

    /**
     * Expires the client's session on the servers, as a long partition would: its ephemeral nodes are deleted and
     * the other clients hear of it, then the client itself learns that its session expired. Returns the session's id.
     */
    public long expireSession(CuratorFramework client) throws Exception {
        checkOpen();
        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        long sessionId = zk.getSessionId();
        CountDownLatch connected = new CountDownLatch(1);
        Watcher watcher = event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        };
        // A second handle on the same session takes it over; closing that handle ends the session for good.
        ZooKeeper twin = new ZooKeeper(
                connectString(), (int) sessionTimeout.toMillis(), watcher, sessionId, zk.getSessionPasswd());
        try {
            if (!connected.await(CONNECT_WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not take over session 0x" + Long.toHexString(sessionId));
            }
        } finally {
            twin.close();
        }
        return sessionId;
    }

    /** The server {@code client} is connected to directly (not through a proxy). */
    public EmbeddedServer serverOf(CuratorFramework client) throws Exception {
        checkOpen();
        InstanceSpec spec =
                cluster.findConnectionInstance(client.getZookeeperClient().getZooKeeper());
        for (EmbeddedServer server : servers) {
            if (server.spec().equals(spec)) {
                return server;
            }
        }
        throw new IllegalStateException(
                "the client is not connected straight to a server of this ensemble (through a proxy, or not at all)");
    }

    /** Kills the server {@code client} is connected to, and returns it so that the test can restart it. */
    public EmbeddedServer killServerOf(CuratorFramework client) throws Exception {
        EmbeddedServer server = serverOf(client);
        server.kill();
        return server;
    }

    /** A proxy in front of {@code server}, closed after the test: connect clients to its connect string. */
    public ZooKeeperProxy proxy(EmbeddedServer server) throws IOException {
        checkOpen();
        ZooKeeperProxy proxy = ZooKeeperProxy.start(server.socketAddress());
        proxies.add(proxy);
        if (closed.get()) {
            proxies.remove(proxy);
            proxy.close();
            throw ensembleClosed();
        }
        return proxy;
    }

    /** The watches held by the running servers, summed: data, child and persistent watches. */
    public int watchCount() {
        checkOpen();
        int total = 0;
        for (EmbeddedServer server : running()) {
            String reply = fourLetterWord(server, "mntr");
            Matcher m = WATCH_COUNT.matcher(reply);
            if (!m.find()) {
                throw new IllegalStateException("no zk_watch_count in the mntr reply of " + server + ": " + reply);
            }
            total += Integer.parseInt(m.group(1));
        }
        return total;
    }

    /**
     * For each watched path at or under {@code path}, how many sessions the running servers hold a watch on it for:
     * data, child or persistent watches (a session that has several kinds there counts once).
     *
     * @throws IllegalArgumentException if {@code path} is not a ZooKeeper path ("/a", not "a" or "/a/")
     * @throws IllegalStateException if a running server is not serving requests yet (an election is under way)
     */
    public Map<String, Integer> watchesUnder(String path) {
        PathUtils.validatePath(path);
        checkOpen();
        Map<String, Integer> watches = new LinkedHashMap<>();
        for (EmbeddedServer server : running()) {
            String reply = fourLetterWord(server, "wchp");
            if (reply.contains(NOT_SERVING)) {
                // Between a kill and the next election: its clients may yet set their watches again there.
                throw new NotServing(server + " is not serving requests yet: " + reply.trim());
            }
            // A session is connected to one server, so its watches are all on that one: sessions are counted per
            // server.
            Map<String, Set<String>> sessions = new LinkedHashMap<>();
            String watchedPath = null;
            for (String line : reply.split("\n")) {
                if (line.startsWith("/")) {
                    watchedPath = isAtOrUnder(line.trim(), path) ? line.trim() : null;
                } else if (watchedPath != null && line.trim().startsWith("0x")) {
                    sessions.computeIfAbsent(watchedPath, p -> new HashSet<>()).add(line.trim());
                }
            }
            ServerWatches.childWatches(serverOf(server)).forEach((watched, watching) -> {
                if (isAtOrUnder(watched, path)) {
                    sessions.computeIfAbsent(watched, p -> new HashSet<>()).addAll(watching);
                }
            });
            sessions.forEach((watched, watching) -> watches.merge(watched, watching.size(), Integer::sum));
        }
        return watches;
    }

    private TestingZooKeeperServer serverOf(EmbeddedServer server) {
        return cluster.getServers().stream()
                .filter(s -> s.getInstanceSpec().equals(server.spec()))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no server of " + server + " in the cluster"));
    }

    /**
     * Waits until {@code path} has no children (or does not exist), or fails listing what is left and who owns it.
     *
     * @throws IllegalArgumentException if {@code path} is not a ZooKeeper path
     */
    public void assertNoZnodesUnder(String path) throws Exception {
        PathUtils.validatePath(path);
        checkOpen();
        ZooKeeper reader = reader();
        try {
            List<String> left = awaitEmpty(() -> describeChildren(reader, path));
            if (!left.isEmpty()) {
                throw new AssertionError("znodes left under " + path + ": " + left);
            }
        } finally {
            reader.close();
        }
    }

    /**
     * Waits until the servers hold no watch at or under {@code path}, or fails listing the watched paths; a server
     * that is not serving yet counts as one that may still hold some.
     *
     * @throws IllegalArgumentException if {@code path} is not a ZooKeeper path
     */
    public void assertNoWatchesUnder(String path) {
        PathUtils.validatePath(path);
        checkOpen();
        List<String> left = awaitEmpty(() -> {
            try {
                // A server drops the watches of a connection that closes, and the client sets them again once it
                // reconnects: none seen is final only if every client was connected all along.
                long changesBefore = connectionChanges.get();
                List<String> disconnected = disconnectedClients();
                List<String> watches = watchesUnder(path).entrySet().stream()
                        .map(e -> e.getKey() + " (" + e.getValue() + ")")
                        .toList();
                if (!watches.isEmpty()) {
                    return watches;
                }
                if (disconnected.isEmpty()) {
                    disconnected = disconnectedClients();
                }
                if (disconnected.isEmpty() && connectionChanges.get() != changesBefore) {
                    disconnected = List.of("unknown: a client's connection changed while the watches were read");
                }
                return disconnected;
            } catch (NotServing notYet) {
                return List.of(notYet.getMessage()); // not known yet: asked again until the deadline
            }
        });
        if (!left.isEmpty()) {
            throw new AssertionError("watches left under " + path + ": " + left);
        }
    }

    /** The started clients of this ensemble that are not connected, as a leak check reports them. */
    private List<String> disconnectedClients() {
        return clients.stream()
                .filter(c -> c.getState() == CuratorFrameworkState.STARTED
                        && !c.getZookeeperClient().isConnected())
                .map(c -> "unknown: a client is disconnected, and will set its watches again as it reconnects ("
                        + c.getZookeeperClient().getCurrentConnectionString() + ")")
                .toList();
    }

    /** A running server that answers no request yet: an election is under way, or no majority runs. */
    private static final class NotServing extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        NotServing(String message) {
            super(message);
        }
    }

    /** {@link #assertNoZnodesUnder} and {@link #assertNoWatchesUnder} both. */
    public void assertNoLeaksUnder(String path) throws Exception {
        assertNoZnodesUnder(path);
        assertNoWatchesUnder(path);
    }

    /**
     * Restarts the test's killed servers and lifts its cuts, then closes its clients: the state a test starts from. In
     * that order, so that each client's close reaches a server and ends its session, and no ephemeral node of one test
     * waits out a session timeout in the next.
     */
    public void reset() {
        RuntimeException failed = null;
        boolean restarted = false;
        for (EmbeddedServer server : servers) {
            if (!server.isRunning()) {
                try {
                    server.restart();
                    restarted = true;
                } catch (RuntimeException e) {
                    failed = either(failed, e); // the other servers, clients and proxies are reset all the same
                }
            }
        }
        try {
            proxies.forEach(ZooKeeperProxy::endFaults); // not cutOff(ZERO), which would cut the clients closed next
            // A client cut off reconnects first, so that its close ends its session on the servers; one that cannot
            // within a session timeout, all clients together, is closed as it is.
            long deadline = System.nanoTime() + sessionTimeout.toNanos();
            for (CuratorFramework client : clients) {
                if (restarted || !client.getZookeeperClient().isConnected()) {
                    awaitReconnected(client, deadline); // a killed server's client may not have noticed yet
                }
                client.close();
            }
        } catch (RuntimeException e) {
            failed = either(failed, e);
        } finally {
            closeAll(); // those a failure passed by; closing twice does nothing
        }
        if (failed != null) {
            throw failed;
        }
    }

    /** Closes every client and proxy, each taken off its list as it closes, so that one added meanwhile is kept. */
    private void closeAll() {
        for (CuratorFramework client : clients) {
            client.close();
            clients.remove(client);
        }
        for (ZooKeeperProxy proxy : proxies) {
            proxy.close();
            proxies.remove(proxy);
        }
    }

    /** The first failure, with any later one added to it as suppressed. */
    private static RuntimeException either(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }

    /** Whether the client connects to this ensemble's servers or to one of its open proxies: only then can it. */
    private boolean reachable(CuratorFramework client) {
        String connectString = client.getZookeeperClient().getCurrentConnectionString();
        int chroot = connectString.indexOf('/');
        Set<Integer> ours = new HashSet<>();
        servers.forEach(server -> ours.add(server.port()));
        proxies.stream().filter(ZooKeeperProxy::isOpen).forEach(proxy -> ours.add(portOf(proxy.connectString())));
        // Every address of the string, whether all servers, one of them, or a proxy, and whatever its chroot.
        return Arrays.stream((chroot < 0 ? connectString : connectString.substring(0, chroot)).split(","))
                .allMatch(address -> ours.contains(portOf(address)));
    }

    private static int portOf(String address) {
        try {
            return Integer.parseInt(
                    address.substring(address.lastIndexOf(':') + 1).trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Waits, until the deadline, for one request of the client to be answered: its connection may not have noticed
     * yet that a killed server's socket is gone, and only an answer proves that its close will reach a server.
     */
    private void awaitReconnected(CuratorFramework client, long deadline) {
        if (client.getState() != CuratorFrameworkState.STARTED || !reachable(client)) {
            return;
        }
        CountDownLatch answered = new CountDownLatch(1);
        try {
            client.checkExists()
                    .inBackground((c, event) -> answered.countDown())
                    .forPath("/");
            answered.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // Closed meanwhile, or refused at once: closed as it is.
        }
    }

    /** Closes every client and proxy and stops the servers, deleting their data. */
    @Override
    public void close() throws IOException {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        closeAll();
        // Server by server, so that one that fails to stop does not keep the others running; the ports and files are
        // freed only once every server stopped, as another ensemble must not take what a running server uses.
        IOException failed = null;
        for (TestingZooKeeperServer server : cluster.getServers()) {
            try {
                server.close();
            } catch (IOException | RuntimeException e) {
                IOException stop = e instanceof IOException io ? io : new IOException("stopping " + server, e);
                if (failed == null) {
                    failed = stop;
                } else {
                    failed.addSuppressed(stop);
                }
            }
        }
        if (failed != null) {
            throw failed;
        }
        release(servers.stream().map(EmbeddedServer::spec).toList());
    }

    void kill(InstanceSpec spec) {
        onCluster("kill", spec, cluster::killServer);
    }

    /**
     * Restarts a killed server, runs {@code started}, and waits until it serves, with every other running one. A member
     * of a quorum serves only once a majority runs: a restart that leaves fewer running returns without waiting.
     */
    void restart(InstanceSpec spec, Runnable started) {
        onCluster("restart", spec, cluster::restartServer);
        started.run();
        List<EmbeddedServer> serving = running();
        if (servers.size() > 1 && serving.size() * 2 <= servers.size()) {
            return;
        }
        serving.forEach(server -> awaitServing(server, SERVER_READY));
    }

    @FunctionalInterface
    private interface ServerOperation {
        boolean apply(InstanceSpec spec) throws Exception;
    }

    private static void onCluster(String what, InstanceSpec spec, ServerOperation operation) {
        boolean done;
        try {
            done = operation.apply(spec);
        } catch (Exception e) {
            throw new IllegalStateException("could not " + what + " server " + spec.getServerId() + ": " + e, e);
        }
        if (!done) {
            throw new IllegalStateException("could not " + what + " server " + spec.getServerId() + ": not found");
        }
    }

    private List<EmbeddedServer> running() {
        return servers.stream().filter(EmbeddedServer::isRunning).toList();
    }

    private void awaitServing(EmbeddedServer server, Duration patience) {
        // srvr names the server's mode only once it serves requests: standalone, or in a quorum.
        long deadline = System.nanoTime() + patience.toNanos();
        while (true) {
            try {
                if (fourLetterWord(server, "srvr").contains("Mode: ")) {
                    return;
                }
            } catch (IllegalStateException e) {
                // Not listening yet.
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException(server + " does not serve clients after " + patience);
            }
            LockSupport.parkNanos(POLL.toNanos());
        }
    }

    private static String fourLetterWord(EmbeddedServer server, String word) {
        String reply;
        try {
            reply = FourLetterWordMain.send4LetterWord(
                    server.host(), server.port(), word, false, FOUR_LETTER_TIMEOUT_MS);
        } catch (Exception e) {
            throw new IllegalStateException(word + " to " + server + " failed: " + e, e);
        }
        if (reply.contains("is not executed because it is not in the whitelist")) {
            // The whitelist is read once per JVM, when the first server answers one: set before any server started.
            throw new IllegalStateException(server + " refuses " + word
                    + ", which the kit reads (set the system property"
                    + " zookeeper.4lw.commands.whitelist to * before any ZooKeeper server starts): " + reply.trim());
        }
        return reply;
    }

    private static boolean isAtOrUnder(String candidate, String path) {
        return path.equals("/") || candidate.equals(path) || candidate.startsWith(path + "/");
    }

    private ZooKeeper reader() throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper reader = new ZooKeeper(connectString(), (int) sessionTimeout.toMillis(), event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        boolean ready = false;
        try {
            ready = connected.await(CONNECT_WAIT.toSeconds(), TimeUnit.SECONDS);
        } finally {
            if (!ready) {
                reader.close(); // timed out, or interrupted
            }
        }
        if (!ready) {
            throw new IllegalStateException("could not connect to " + connectString());
        }
        return reader;
    }

    private static List<String> describeChildren(ZooKeeper reader, String path) throws Exception {
        List<String> children;
        try {
            syncWith(reader, path); // a follower that lags the leader must not miss a create
            children = reader.getChildren(path, false);
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        }
        List<String> described = new ArrayList<>();
        for (String child : children) {
            if (path.equals("/") && child.equals("zookeeper")) {
                continue; // the server's own
            }
            Stat stat = reader.exists(path.equals("/") ? "/" + child : path + "/" + child, false);
            // One gone by now is still reported: the path changed while it was read, and others may have come. The
            // next poll lists it again; only an empty list passes.
            described.add(child
                    + (stat == null
                            ? " (deleted while read)"
                            : stat.getEphemeralOwner() == 0
                                    ? " (persistent)"
                                    : " (ephemeral of session 0x" + Long.toHexString(stat.getEphemeralOwner()) + ")"));
        }
        return described;
    }

    private static void syncWith(ZooKeeper reader, String path) throws InterruptedException, KeeperException {
        CountDownLatch synced = new CountDownLatch(1);
        AtomicInteger answer = new AtomicInteger(Integer.MIN_VALUE);
        reader.sync(
                path,
                (rc, p, ctx) -> {
                    answer.set(rc);
                    synced.countDown();
                },
                null);
        if (!synced.await(CONNECT_WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw KeeperException.create(KeeperException.Code.CONNECTIONLOSS, path);
        }
        KeeperException.Code code = KeeperException.Code.get(answer.get());
        if (code != KeeperException.Code.OK) {
            throw KeeperException.create(code, path);
        }
    }

    /** What is left, polled until it is empty or twice a session timeout has passed, time for expiries to land. */
    private List<String> awaitEmpty(Check check) {
        long deadline = System.nanoTime()
                + sessionTimeout.multipliedBy(2).plusSeconds(5).toNanos();
        while (true) {
            if (Thread.currentThread().isInterrupted()) {
                throw new IllegalStateException("leak check interrupted"); // the flag stays set
            }
            List<String> left;
            try {
                left = check.left();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("leak check interrupted", e);
            } catch (KeeperException.ConnectionLossException e) {
                // The check's own connection dropped (its server killed, say): it reconnects, and asks again.
                left = List.of("unknown: the check lost its connection: " + e.getMessage());
            } catch (Exception e) {
                throw new IllegalStateException("leak check failed: " + e, e);
            }
            if (left.isEmpty() || System.nanoTime() - deadline > 0) {
                return left;
            }
            LockSupport.parkNanos(POLL.toNanos());
        }
    }

    @FunctionalInterface
    private interface Check {
        List<String> left() throws Exception;
    }
}
