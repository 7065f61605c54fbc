package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.mutex.ReentrantMutex;
import io.coord.testkit.EmbeddedServer;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Events that happen while a client is cut off are lost, not replayed, when it reconnects within its session. A
 * waiter whose server is stopped misses the holder's release and the arrival of others, and an acquisition made
 * while cut off is created only after them. Deciding on what the client knew before the gap would grant that late
 * acquisition ahead of the others; coord reads again before deciding anything, so every grant comes in queue order.
 */
class LostEventsIT {
    private static final Duration LONG_SESSION = Duration.ofSeconds(30);

    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    /**
     * Only a deletion is lost here, so nothing in the events that follow the reconnect tells the view it missed one:
     * only the read after reconnecting shows the holder gone.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(EngineMode.class)
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aWaiterCutOffWhenItsTurnComesIsGrantedOnceItReconnects(EngineMode mode) throws Exception {
        cluster.mode(mode);
        String path = ZooKeeperFixture.uniquePath("lost-delete");
        List<EmbeddedServer> servers = cluster.servers();
        EmbeddedServer cutOff = servers.get(0);
        CuratorFramework waiterClient = cluster.newClient(cutOff.address(), LONG_SESSION);
        ZooKeeperFixture.lingerViews(waiterClient, Duration.ofMinutes(5));
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path, "waiter");
        ReentrantMutex holder =
                new ReentrantMutex(cluster.newClient(servers.get(1).address()), path);
        waiter.acquireAsync().get(10, TimeUnit.SECONDS).close(); // counts the path: the next acquisition uses a view
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> waiting = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);

        cutOff.kill();
        await().until(() -> !waiterClient.getZookeeperClient().isConnected());
        held.close();
        await().until(() -> holder.participants().size() == 1);
        cutOff.restart();

        Lease granted = waiting.get(60, TimeUnit.SECONDS);
        assertTrue(granted.fencingToken() > held.fencingToken());
        granted.close();
        waiterClient.close();
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(EngineMode.class)
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aWaiterCutOffFromItsServerIsGrantedOnlyWhenItsTurnTrulyComes(EngineMode mode) throws Exception {
        cluster.mode(mode);
        String path = ZooKeeperFixture.uniquePath("lost-events");
        List<EmbeddedServer> servers = cluster.servers();
        EmbeddedServer cutOff = servers.get(0);
        // The waiter reaches one server only, with a session that outlives the server's restart.
        CuratorFramework waiterClient = cluster.newClient(cutOff.address(), LONG_SESSION);
        ZooKeeperFixture.lingerViews(waiterClient, Duration.ofMinutes(5)); // the same view before and after the gap
        CuratorFramework second = cluster.newClient(servers.get(1).address());
        CuratorFramework third = cluster.newClient(servers.get(2).address());
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path, "waiter");
        ReentrantMutex late = new ReentrantMutex(waiterClient, path, "late");
        ReentrantMutex holder = new ReentrantMutex(second, path, "holder");
        ReentrantMutex y = new ReentrantMutex(third, path, "y");
        ReentrantMutex z = new ReentrantMutex(second, path, "z");
        waiter.acquireAsync().get(10, TimeUnit.SECONDS).close(); // counts the path: the next acquisition uses a view

        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> waiting = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);

        cutOff.kill();
        await().until(() -> !waiterClient.getZookeeperClient().isConnected());
        // While the waiter is cut off: the holder leaves, which is the waiter's turn, and two more queue behind it.
        held.close();
        CompletableFuture<Lease> ys = y.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        CompletableFuture<Lease> zs = z.acquireAsync();
        await().until(() -> holder.participants().size() == 3);
        // Asked for while cut off: its node can only be created after the reconnect, behind y and z.
        CompletableFuture<Lease> lates = late.acquireAsync();
        assertFalse(ys.isDone() || zs.isDone() || waiting.isDone(), "nobody may pass the waiter's node");

        cutOff.restart();

        Lease first = waiting.get(60, TimeUnit.SECONDS);
        assertTrue(first.isValid());
        await().until(() -> holder.participants().size() == 4);
        assertEquals(
                List.of("waiter", "y", "z", "late"),
                holder.participants().stream().map(p -> p.id()).toList());
        // Each grant must come after the release of the one before it: a wrong grant would be stamped earlier.
        // Stamped by a dependent stage, waited for on its own: get() may return before a dependent has run.
        Map<CompletableFuture<Lease>, CompletableFuture<Long>> grantedAt = new ConcurrentHashMap<>();
        for (CompletableFuture<Lease> next : List.of(ys, zs, lates)) {
            grantedAt.put(next, next.thenApply(lease -> System.nanoTime()));
        }
        Lease previous = first;
        for (CompletableFuture<Lease> next : List.of(ys, zs, lates)) {
            long released = System.nanoTime();
            previous.close();
            Lease granted = next.get(30, TimeUnit.SECONDS);
            assertTrue(
                    grantedAt.get(next).get(30, TimeUnit.SECONDS) > released,
                    "granted while the previous holder still held");
            assertTrue(granted.fencingToken() > previous.fencingToken());
            previous = granted;
        }
        previous.close();
        waiterClient.close();
        cluster.closeClientsAndAssertNoLeaks(path);
    }
}
