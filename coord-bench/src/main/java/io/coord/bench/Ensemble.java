package io.coord.bench;

import io.coord.testkit.EmbeddedServer;
import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperProxy;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;

/**
 * The ZooKeeper ensemble a run talks to: coord-testkit's embedded 3-node {@link ZooKeeperEnsemble}, or an existing
 * one given with {@code --connect}, optionally behind one delaying {@link ZooKeeperProxy} per server. It hands out
 * started clients and closes them, the proxies and the cluster at the end.
 */
public final class Ensemble implements AutoCloseable {
    /** Short, so that a killed server's sessions expire within a demo's patience, yet long enough for a busy 2-core box. */
    public static final Duration SESSION_TIMEOUT = Duration.ofSeconds(5);

    /**
     * The longest session the embedded servers grant (20 ticks of 1 s), for sessions that wait. ZooKeeper's client
     * pings a session that sent nothing for a third of its timeout less a second, and the servers count each ping as
     * a request: with 5 s sessions a waiter that waits a second for its turn pings once or twice per operation.
     */
    public static final Duration LONG_SESSION_TIMEOUT = Duration.ofSeconds(20);

    private static final Duration CONNECT_WAIT = Duration.ofSeconds(30);
    private static final String FORCE_SYNC = "zookeeper.forceSync";

    private final ZooKeeperEnsemble cluster; // null with --connect
    private final List<InetSocketAddress> servers;
    private final List<ZooKeeperProxy> proxies;
    private final List<CuratorFramework> clients = new CopyOnWriteArrayList<>();

    private Ensemble(ZooKeeperEnsemble cluster, List<InetSocketAddress> servers, List<ZooKeeperProxy> proxies) {
        this.cluster = cluster;
        this.servers = List.copyOf(servers);
        this.proxies = List.copyOf(proxies);
    }

    /** Starts the embedded ensemble, or uses {@code connect}; with {@code rtt}, puts a delaying proxy in front. */
    public static Ensemble start(Optional<List<String>> connect, Optional<Duration> rtt, Progress progress)
            throws Exception {
        ZooKeeperEnsemble cluster = null;
        List<InetSocketAddress> servers = new ArrayList<>();
        if (connect.isPresent()) {
            for (String hostPort : connect.get()) {
                int colon = hostPort.lastIndexOf(':');
                servers.add(InetSocketAddress.createUnresolved(
                        hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1))));
            }
        } else {
            progress.step("starting an embedded 3-node ZooKeeper ensemble");
            cluster = startCluster();
            for (EmbeddedServer server : cluster.servers()) {
                servers.add(InetSocketAddress.createUnresolved(server.host(), server.port()));
            }
        }
        List<ZooKeeperProxy> proxies = new ArrayList<>();
        if (rtt.isPresent()) {
            for (InetSocketAddress server : servers) {
                proxies.add(ZooKeeperProxy.start(new InetSocketAddress(server.getHostString(), server.getPort()))
                        .delay(rtt.get()));
            }
            progress.step(
                    "client traffic goes through a proxy adding " + rtt.get().toNanos() / 1_000 + "us per round trip");
        }
        Ensemble ensemble = new Ensemble(cluster, servers, proxies);
        try {
            ensemble.awaitEveryServer();
        } catch (Exception e) {
            ensemble.close();
            throw e;
        }
        progress.step("ensemble ready: " + ensemble.describe());
        return ensemble;
    }

    private static ZooKeeperEnsemble startCluster() throws Exception {
        // The embedded servers' data is thrown away, and on a VM disk every fsync adds 1 to 60 ms of noise that would
        // drown what the bench compares: the clients' protocols. -Dzookeeper.forceSync=yes keeps it.
        if (System.getProperty(FORCE_SYNC) == null) {
            System.setProperty(FORCE_SYNC, "no");
        }
        return ZooKeeperEnsemble.builder()
                .servers(3)
                .sessionTimeout(SESSION_TIMEOUT)
                .start();
    }

    public boolean isEmbedded() {
        return cluster != null;
    }

    /** Whether the embedded servers skip fsync; false for an external ensemble, whose settings are its own. */
    public boolean skipsFsync() {
        return cluster != null && "no".equals(System.getProperty(FORCE_SYNC));
    }

    /** The servers' own client ports, never the proxies: where the four-letter words go. */
    public List<InetSocketAddress> servers() {
        return servers;
    }

    /** What clients connect to: one entry per server, through the proxy when there is one. */
    public List<String> clientAddresses() {
        List<String> addresses = new ArrayList<>();
        for (int i = 0; i < servers.size(); i++) {
            addresses.add(
                    proxies.isEmpty()
                            ? servers.get(i).getHostString() + ":"
                                    + servers.get(i).getPort()
                            : proxies.get(i).connectString());
        }
        return addresses;
    }

    /** A started, connected client of the whole ensemble; closed by {@link #close()} unless closed before. */
    public CuratorFramework newClient() throws InterruptedException {
        return newClient(SESSION_TIMEOUT);
    }

    /** A started, connected client of the whole ensemble whose session lasts {@code sessionTimeout}. */
    public CuratorFramework newClient(Duration sessionTimeout) throws InterruptedException {
        return newClient(String.join(",", clientAddresses()), sessionTimeout);
    }

    /** A started, connected client of the servers in {@code connectString} only. */
    public CuratorFramework newClient(String connectString) throws InterruptedException {
        return newClient(connectString, SESSION_TIMEOUT);
    }

    private CuratorFramework newClient(String connectString, Duration sessionTimeout) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs((int) sessionTimeout.toMillis())
                .connectionTimeoutMs(3_000)
                .retryPolicy(new RetryNTimes(30, 200))
                // The tracker would rewrite the connect string from the ensemble's config and bypass the proxy.
                .ensembleTracker(false)
                .build();
        clients.add(client);
        client.start();
        if (!client.blockUntilConnected((int) CONNECT_WAIT.toSeconds(), TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("could not connect to " + connectString + " within " + CONNECT_WAIT);
        }
        return client;
    }

    /**
     * Kills the embedded server that {@code client} is connected to, and names it. Its clients lose their connection
     * at once; a client that can reach no other server loses its session when the timeout runs out.
     */
    public String killServerOf(CuratorFramework client) throws Exception {
        if (cluster == null) {
            throw new IllegalStateException("only an embedded ensemble can have a server killed");
        }
        EmbeddedServer server = cluster.killServerOf(client);
        return "server " + server.id() + " (port " + server.port() + ")";
    }

    /**
     * On an external ensemble, deletes what a run left under {@code root}: queues' parents, the demo's stock and
     * config nodes. Best effort: a failure is reported, never thrown, because the run's results stand regardless.
     * An embedded ensemble is thrown away whole, so there is nothing to do.
     */
    public void removeRunData(String root, Progress progress) {
        if (cluster != null) {
            return;
        }
        try {
            CuratorFramework client = newClient();
            if (client.checkExists().forPath(root) != null) {
                client.delete().deletingChildrenIfNeeded().forPath(root);
            }
        } catch (Exception e) {
            progress.step("could not remove " + root + " from the ensemble: " + e);
        }
    }

    /** Closes every client handed out; the ensemble stays up. */
    public void closeClients() {
        clients.forEach(CuratorFramework::close);
        clients.clear();
    }

    @Override
    public void close() throws IOException {
        closeClients();
        proxies.forEach(ZooKeeperProxy::close);
        if (cluster != null) {
            cluster.close();
        }
    }

    private String describe() {
        String where = (cluster != null ? "embedded, " : "external, ") + String.join(",", clientAddresses());
        return proxies.isEmpty() ? where : where + " (proxies)";
    }

    /**
     * Connects once to each server alone, so every one is known to be in the quorum and serving before anything is
     * measured; a server that is still electing does not accept sessions.
     */
    private void awaitEveryServer() throws InterruptedException {
        for (String address : clientAddresses()) {
            CuratorFramework probe = newClient(address);
            clients.remove(probe);
            probe.close();
        }
    }
}
