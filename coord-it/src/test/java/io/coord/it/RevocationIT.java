package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.mutex.ReentrantMutex;
import io.coord.testkit.EmbeddedServer;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Revocation on a 3-node ensemble: requests go both ways between coord and Curator's revocable mutex, an evicted
 * holder is LOST and fenced off, and a request is delivered across connection loss, or the call fails saying so.
 */
@ParameterizedClass(name = "{0}")
@EnumSource(EngineMode.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RevocationIT {
    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    private static final Duration LONG_SESSION = Duration.ofSeconds(30);

    @Parameter
    EngineMode mode;

    // Curator's mutex must be released by the thread that acquired it, so all its calls go through this one.
    private ExecutorService curatorThread;

    @BeforeEach
    void setUp() {
        cluster.mode(mode);
        curatorThread = Executors.newSingleThreadExecutor();
    }

    @AfterEach
    void stopCuratorThread() {
        curatorThread.shutdownNow();
    }

    @Test
    void revocableCuratorHolderHearsCoordsRequest() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-curator-holder");
        CuratorFramework coordClient = cluster.newClient();
        InterProcessMutex curator = new InterProcessMutex(cluster.newClient(), path);
        AtomicInteger asked = new AtomicInteger();
        curator.makeRevocable(
                revoked -> {
                    asked.incrementAndGet();
                    try {
                        revoked.release();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                },
                curatorThread);
        assertTrue(onCuratorThread(() -> curator.acquire(10, TimeUnit.SECONDS)));
        ReentrantMutex coord = new ReentrantMutex(coordClient, path, "coord");
        CompletableFuture<Lease> waiting = coord.acquireAsync();
        await().until(() -> coord.participants().size() == 2);

        assertTrue(coord.requestRevocation(coord.participants().get(0)));

        Lease granted = waiting.get(20, TimeUnit.SECONDS);
        assertEquals(1, asked.get());
        granted.close();
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    @Test
    void coordHolderHearsCuratorsRevoker() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-coord-holder");
        CuratorFramework curatorClient = cluster.newClient();
        ReentrantMutex coord = new ReentrantMutex(cluster.newClient(), path, "coord");
        Lease held = coord.acquireAsync().get(10, TimeUnit.SECONDS);
        AtomicInteger asked = new AtomicInteger();
        held.onRevocationRequested(
                () -> {
                    asked.incrementAndGet();
                    held.close();
                },
                Runnable::run);
        InterProcessMutex curator = new InterProcessMutex(curatorClient, path);
        Future<Boolean> curatorGranted = curatorThread.submit(() -> curator.acquire(30, TimeUnit.SECONDS));
        await().until(() -> curator.getParticipantNodes().size() == 2);
        String holderNode = curator.getParticipantNodes().iterator().next();

        Revoker.attemptRevoke(curatorClient, holderNode);

        assertTrue(curatorGranted.get(20, TimeUnit.SECONDS));
        assertEquals(LeaseState.RELEASED, held.ended().get(5, TimeUnit.SECONDS));
        assertEquals(1, asked.get());
        onCuratorThread(() -> {
            curator.release();
            return null;
        });
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    @Test
    void evictedHolderIsLostAndItsFencedWritesFail() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-forced");
        String resource = path + "-resource";
        CuratorFramework holderClient = cluster.newClient();
        holderClient.create().creatingParentsIfNeeded().forPath(resource);
        ReentrantMutex holder = new ReentrantMutex(holderClient, path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(cluster.newClient(), path, "waiter");
        holder.acquire();
        Lease evicted = holder.lease();
        evicted.onRevocationRequested(() -> {}, Runnable::run); // notices a forced revocation in either mode
        CompletableFuture<Lease> next = waiter.acquireAsync();
        await().until(() -> waiter.participants().size() == 2);

        assertTrue(waiter.forceRevocation(waiter.participants().get(0)));

        assertEquals(LeaseState.LOST, evicted.ended().get(20, TimeUnit.SECONDS));
        assertEquals(0, holder.holdCount());
        Lease granted = next.get(20, TimeUnit.SECONDS);
        assertTrue(granted.fencingToken() > evicted.fencingToken(), granted + " after " + evicted);
        assertThrows(
                KeeperException.NoNodeException.class,
                () -> holderClient
                        .transaction()
                        .forOperations(
                                evicted.fencedCheck(),
                                holderClient.transactionOp().setData().forPath(resource, new byte[] {1})));
        holder.release(); // owed by the ended hold: a quiet no-op
        granted.close();
        holderClient.delete().forPath(resource);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    @Test
    void requestMadeWhileTheHolderIsCutOffReachesItOnReconnection() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-holder-cut-off");
        EmbeddedServer server = cluster.servers().get(0);
        ReentrantMutex asker = new ReentrantMutex(cluster.newClient(), path, "asker");
        try (ZooKeeperProxy proxy = ZooKeeperProxy.start(server.socketAddress())) {
            ReentrantMutex holder =
                    new ReentrantMutex(cluster.newClient(proxy.connectString(), LONG_SESSION), path, "holder");
            Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
            AtomicInteger asked = new AtomicInteger();
            held.onRevocationRequested(asked::incrementAndGet, Runnable::run);
            Participant participant = asker.participants().get(0);

            proxy.refuseConnections(true);
            proxy.cutConnections();
            await().until(() -> held.state() == LeaseState.SUSPECT);
            assertTrue(asker.requestRevocation(participant));
            proxy.refuseConnections(false);

            await().atMost(Duration.ofSeconds(30)).until(() -> asked.get() == 1);
            await().until(() -> held.state() == LeaseState.HELD);
            held.close();
            // While the proxy still carries the holder's close: else its session lingers for its whole timeout.
            cluster.closeClientsAndAssertNoLeaks(path);
        }
    }

    @Test
    void requestStartedWhileTheAskerIsCutOffIsDeliveredOnceItReconnects() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-asker-reconnects");
        EmbeddedServer server = cluster.servers().get(0);
        CuratorFramework reader = cluster.newClient();
        AtomicInteger asked = new AtomicInteger();
        Lease held = optedInHolder(path, asked);
        try (ZooKeeperProxy proxy = ZooKeeperProxy.start(server.socketAddress())) {
            CuratorFramework askerClient = cluster.newClient(proxy.connectString(), LONG_SESSION);
            ReentrantMutex asker = new ReentrantMutex(askerClient, path, "asker");
            Participant participant = asker.participants().get(0);

            proxy.refuseConnections(true);
            proxy.cutConnections();
            await().until(() -> !askerClient.getZookeeperClient().isConnected());
            Future<Boolean> request = curatorThread.submit(() -> asker.requestRevocation(participant));
            proxy.refuseConnections(false); // within the client's retry policy

            assertTrue(request.get(30, TimeUnit.SECONDS));
            // The reader's server may not have applied the asker's write yet: a sync first brings it up to date.
            CompletableFuture<Void> synced = new CompletableFuture<>();
            reader.sync().inBackground((c, event) -> synced.complete(null)).forPath(held.path());
            synced.get(30, TimeUnit.SECONDS);
            Stat stat = new Stat();
            byte[] data = reader.getData().storingStatIn(stat).forPath(held.path());
            assertEquals("__REVOKE__", new String(data, StandardCharsets.US_ASCII));
            assertEquals(1, stat.getVersion(), "written once");
            await().until(() -> asked.get() == 1);
        }
        held.close();
        assertEquals(1, asked.get());
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    @Test
    void askerThatCannotReachZooKeeperFailsNamingTheNode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-asker-cut-off");
        EmbeddedServer server = cluster.servers().get(0);
        CuratorFramework reader = cluster.newClient();
        AtomicInteger asked = new AtomicInteger();
        Lease held = optedInHolder(path, asked);
        try (ZooKeeperProxy proxy = ZooKeeperProxy.start(server.socketAddress());
                CuratorFramework askerClient = CuratorFrameworkFactory.builder()
                        .connectString(proxy.connectString())
                        .sessionTimeoutMs((int) ClusterFixture.SESSION_TIMEOUT.toMillis())
                        .connectionTimeoutMs(1_000)
                        .retryPolicy(new RetryNTimes(1, 100))
                        .ensembleTracker(false)
                        .build()) {
            mode.apply(askerClient);
            askerClient.start();
            assertTrue(askerClient.blockUntilConnected(15, TimeUnit.SECONDS));
            ReentrantMutex asker = new ReentrantMutex(askerClient, path, "asker");
            Participant participant = asker.participants().get(0);

            proxy.refuseConnections(true);
            proxy.cutConnections();
            CoordinationException error =
                    assertThrows(CoordinationException.class, () -> asker.requestRevocation(participant));
            assertTrue(error.getMessage().contains(path), error.getMessage());
            assertTrue(error.getMessage().contains("CONNECTIONLOSS"), error.getMessage());
        }
        assertEquals(
                List.of("holder"),
                new ReentrantMutex(reader, path)
                        .participants().stream().map(Participant::id).toList());
        assertEquals(0, reader.checkExists().forPath(held.path()).getVersion(), "nothing was written");
        held.close();
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    /** A coord holder on a client of its own that opted in to revocation, counting in {@code asked} what it hears. */
    private static Lease optedInHolder(String path, AtomicInteger asked) throws Exception {
        ReentrantMutex holder = new ReentrantMutex(cluster.newClient(), path, "holder");
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        held.onRevocationRequested(asked::incrementAndGet, Runnable::run);
        return held;
    }

    private <T> T onCuratorThread(Callable<T> call) throws Exception {
        return curatorThread.submit(call).get(30, TimeUnit.SECONDS);
    }
}
