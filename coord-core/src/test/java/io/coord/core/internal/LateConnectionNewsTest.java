package io.coord.core.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.core.LeaseState;
import io.coord.core.SequenceNode;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.lang.reflect.Field;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.Watcher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/**
 * Curator tells its connection listeners of a reconnection on a thread of its own, after ZooKeeper's event thread has
 * gone on to answer requests on the new connection. What is granted in between is held.
 */
@InBothEngineModes
@Timeout(60)
class LateConnectionNewsTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void aLeaseGrantedBeforeTheClientHearsItIsConnectedAgainIsHeld() throws Exception {
        String path = ZooKeeperFixture.uniquePath("late-news");
        CuratorFramework client = zk.newClient();
        ClientContext context = ClientContext.of(client);
        LeaseEngine engine = mutexEngine(client, path);

        // The handle is connected, and the context has heard only of the drop before.
        context.stateChanged(client, ConnectionState.SUSPENDED);
        Lease lease = engine.acquireAsync().get(10, TimeUnit.SECONDS);
        assertEquals(LeaseState.HELD, lease.state(), "a grant decided on the live connection");

        context.stateChanged(client, ConnectionState.RECONNECTED);
        assertEquals(LeaseState.HELD, lease.state());
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaseClosedBeforeTheContextHearsOfItsClientsCloseIsLostNotReleased() throws Exception {
        String path = ZooKeeperFixture.uniquePath("late-close");
        CuratorFramework client = zk.newClient();
        ClientContext context = ClientContext.of(client);
        LeaseEngine engine = mutexEngine(client, path);
        Lease lease = engine.acquireAsync().get(10, TimeUnit.SECONDS);

        // The client is closed, and its context is still on its way to the news (its state lock is busy).
        ReentrantLock stateLock = stateLockOf(context);
        stateLock.lock();
        CompletableFuture<Void> closing;
        try {
            closing = CompletableFuture.runAsync(client::close);
            await().until(() -> client.getState() == CuratorFrameworkState.STOPPED);
            assertEquals(LeaseState.LOST, lease.state());
            lease.close();
        } finally {
            stateLock.unlock();
        }
        closing.get(10, TimeUnit.SECONDS);

        assertEquals(LeaseState.LOST, lease.ended().get(10, TimeUnit.SECONDS), "LOST is final");
        assertEquals(LeaseState.LOST, lease.state());
        zk.assertNoLeaks(path);
    }

    static LeaseEngine mutexEngine(CuratorFramework client, String path) {
        return new LeaseEngine(client, path, "lock-", LeasePredicate.maxLeases(1), new byte[0]);
    }

    private static ReentrantLock stateLockOf(ClientContext context) throws ReflectiveOperationException {
        Field field = ClientContext.class.getDeclaredField("stateLock");
        field.setAccessible(true);
        return (ReentrantLock) field.get(context);
    }

    @Test
    void theLossOfASessionHeardAfterTheNextConnectionLeavesThatConnectionsLeasesHeld() throws Exception {
        String path = ZooKeeperFixture.uniquePath("late-loss");
        CuratorFramework client = zk.newClient();
        ClientContext context = ClientContext.of(client);
        LeaseEngine engine = mutexEngine(client, path);
        Lease lease = engine.acquireAsync().get(10, TimeUnit.SECONDS);
        context.stateChanged(client, ConnectionState.SUSPENDED);
        context.stateChanged(client, ConnectionState.RECONNECTED);
        await().until(() -> lease.state() == LeaseState.HELD); // its node checked on the session the handle is on

        // The loss of the session before, told after the connection of this one, as Curator may.
        context.stateChanged(client, ConnectionState.LOST);

        assertEquals(LeaseState.HELD, lease.state());
        assertTrue(context.isConnected(), "the client goes on");
        assertEquals(1, engine.participants().size(), "its node is still there");
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aNodeOfALostLeaseStaysInThisClientsQueuesUntilItsDeleteIsAnswered() throws Exception {
        String path = ZooKeeperFixture.uniquePath("lost-node");
        CuratorFramework client = zk.newClient();
        ClientContext context = ClientContext.of(client);
        Lease lease = mutexEngine(client, path).acquireAsync().get(10, TimeUnit.SECONDS);
        SequenceNode node =
                SequenceNode.parse(ZKPaths.getNodeFromPath(lease.path())).orElseThrow();

        // ZooKeeper's event thread is kept busy, so that no answer reaches the client meanwhile.
        CountDownLatch busy = new CountDownLatch(1);
        CountDownLatch free = new CountDownLatch(1);
        String blocker = path + "-blocker";
        client.create().forPath(blocker);
        client.getData()
                .usingWatcher((Watcher) event -> {
                    busy.countDown();
                    try {
                        free.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                })
                .forPath(blocker);
        zk.newClient().setData().forPath(blocker, new byte[1]);
        assertTrue(busy.await(10, TimeUnit.SECONDS));
        try {
            // The client gives the session up, as Curator does once cut off for a session timeout, while the server
            // may keep it, and the node, a while longer: its holder may still fence writes on it.
            context.stateChanged(client, ConnectionState.SUSPENDED);
            context.stateChanged(client, ConnectionState.LOST);
            assertEquals(LeaseState.LOST, lease.state());
            assertFalse(
                    context.deletes().isLeaving(path, node),
                    "the client's own contenders wait for the lost lease's node to go, as everyone else's do");
        } finally {
            free.countDown();
        }
        await().until(() -> client.checkExists().forPath(lease.path()) == null);
        client.delete().forPath(blocker);
        client.close();
        zk.assertNoLeaks(path);
    }
}
