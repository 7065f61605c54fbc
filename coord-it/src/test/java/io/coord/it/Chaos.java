package io.coord.it;

import static org.awaitility.Awaitility.await;

import io.coord.testkit.EmbeddedServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.apache.curator.framework.CuratorFramework;

/**
 * Faults at random, one at a time, until stopped: it kills a server and restarts it (never two down, so the quorum
 * survives), expires a client's session on the servers, or makes a client believe its session expired.
 */
final class Chaos implements Runnable {
    private final ClusterFixture cluster;
    private final List<CuratorFramework> clients;
    private final List<String> labels;
    private final Timeline timeline;
    private final Random random;
    private final CountDownLatch stop = new CountDownLatch(1);
    private final AtomicInteger kills = new AtomicInteger();
    private final AtomicInteger serverExpiries = new AtomicInteger();
    private final AtomicInteger clientExpiries = new AtomicInteger();
    // When each fault was over: a server serving again, a client on its new session, or told its session ended.
    private final List<Long> faultEnds = new CopyOnWriteArrayList<>();

    Chaos(ClusterFixture cluster, List<CuratorFramework> clients, Timeline timeline, long seed) {
        this(
                cluster,
                clients,
                IntStream.range(0, clients.size()).mapToObj(i -> "client-" + i).toList(),
                timeline,
                seed);
    }

    /** Like the other constructor, naming each client in the timeline by its label. */
    Chaos(ClusterFixture cluster, List<CuratorFramework> clients, List<String> labels, Timeline timeline, long seed) {
        if (labels.size() != clients.size()) {
            throw new IllegalArgumentException(clients.size() + " clients but " + labels.size() + " labels");
        }
        this.cluster = cluster;
        this.clients = List.copyOf(clients);
        this.labels = List.copyOf(labels);
        this.timeline = timeline;
        this.random = new Random(seed);
    }

    void stop() {
        stop.countDown();
    }

    int kills() {
        return kills.get();
    }

    int serverExpiries() {
        return serverExpiries.get();
    }

    int clientExpiries() {
        return clientExpiries.get();
    }

    /** The {@link System#nanoTime()} at which each fault so far was over, in order. */
    List<Long> faultEnds() {
        return List.copyOf(faultEnds);
    }

    @Override
    public void run() {
        try {
            // The first three rounds try each fault once, so that a short run still sees all of them.
            for (int round = 0; !pause(300, 1_200); round++) {
                switch (round < 3 ? round : random.nextInt(3)) {
                    case 0 -> killAndRestartServer();
                    case 1 -> expireOnServers(pickConnected());
                    default -> expireOnClient(pickConnected());
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException("chaos failed", e);
        }
    }

    private void killAndRestartServer() throws Exception {
        EmbeddedServer server =
                cluster.servers().get(random.nextInt(cluster.servers().size()));
        timeline.add("chaos: kill server " + server.id() + " at " + server.address());
        server.kill();
        kills.incrementAndGet();
        pause(500, 2_500); // restarted even when stopped meanwhile: a run never ends with a server down
        timeline.add("chaos: restart server " + server.id());
        server.restart();
        timeline.add("chaos: server " + server.id() + " serves again");
        faultEnds.add(System.nanoTime());
    }

    private void expireOnServers(int index) throws Exception {
        CuratorFramework client = clients.get(index);
        long session = cluster.expireSession(client);
        timeline.add("chaos: expired session 0x" + Long.toHexString(session) + " of " + labels.get(index)
                + " on the servers");
        // Counted only once the client is on a new session, which proves the old one really ended.
        await(labels.get(index) + " on a new session")
                .atMost(Duration.ofSeconds(30))
                .until(() -> {
                    long now = ClusterFixture.sessionId(client);
                    return now != 0
                            && now != session
                            && client.getZookeeperClient().isConnected();
                });
        timeline.add("chaos: " + labels.get(index) + " is on session 0x"
                + Long.toHexString(ClusterFixture.sessionId(client)));
        serverExpiries.incrementAndGet();
        faultEnds.add(System.nanoTime());
    }

    private void expireOnClient(int index) throws Exception {
        CuratorFramework client = clients.get(index);
        long session = ClusterFixture.sessionId(client);
        timeline.add("chaos: " + labels.get(index) + " is told session 0x" + Long.toHexString(session) + " expired");
        cluster.expireSessionOnClient(client);
        clientExpiries.incrementAndGet();
        faultEnds.add(System.nanoTime());
    }

    /**
     * A client that is connected now, picked at random. On a loaded machine one client can take long to reconnect
     * after the last fault; the next fault goes to another rather than waiting for it.
     */
    private int pickConnected() {
        List<Integer> connected = new ArrayList<>();
        await("a client connected").atMost(Duration.ofSeconds(30)).until(() -> {
            connected.clear();
            for (int i = 0; i < clients.size(); i++) {
                CuratorFramework client = clients.get(i);
                if (client.getZookeeperClient().isConnected() && ClusterFixture.sessionId(client) != 0) {
                    connected.add(i);
                }
            }
            return !connected.isEmpty();
        });
        return connected.get(random.nextInt(connected.size()));
    }

    /** Waits a random time in the range; true if the run was stopped meanwhile. */
    private boolean pause(int minMillis, int maxMillis) throws InterruptedException {
        return stop.await(minMillis + random.nextInt(maxMillis - minMillis), TimeUnit.MILLISECONDS);
    }
}
