package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.testkit.EngineMode;
import io.coord.testkit.KeptRequests;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperFixture.Session;
import io.coord.testkit.ZooKeeperProxy;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.curator.RetryLoop;
import org.apache.curator.drivers.AdvancedTracerDriver;
import org.apache.curator.drivers.EventTrace;
import org.apache.curator.drivers.OperationTrace;
import org.apache.curator.ensemble.fixed.FixedEnsembleProvider;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.listen.ListenerManager;
import org.apache.curator.framework.listen.StandardListenerManager;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.framework.state.ConnectionStateListenerManagerFactory;
import org.apache.curator.retry.RetryForever;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/**
 * Session expiry, connection loss, closed clients and fencing, against one embedded server. Run in each engine mode by
 * {@link MutexFaultInViewModeTest} and {@link MutexFaultInWatchModeTest}, two classes so that the two modes run side by
 * side.
 */
@Timeout(90)
abstract class MutexFaultTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void leaseTurnsLostWhenSessionExpiresAndTheNextWaiterIsGranted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("expiry");
        CuratorFramework holderClient = zk.newClient();
        ReentrantMutex holder = new ReentrantMutex(holderClient, path);
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path);
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        List<LeaseState> seen = new CopyOnWriteArrayList<>();
        held.addStateListener(seen::add, Runnable::run);
        CompletableFuture<Lease> next = waiter.acquireAsync();
        await().until(() -> waiter.participants().size() == 2);

        zk.expireSession(holderClient);

        assertEquals(LeaseState.LOST, held.ended().get(20, TimeUnit.SECONDS));
        assertFalse(held.isValid());
        await().until(() -> seen.contains(LeaseState.LOST));
        Lease granted = next.get(20, TimeUnit.SECONDS);
        assertTrue(granted.isValid());
        assertTrue(granted.fencingToken() > held.fencingToken());
        held.close(); // a no-op on a lost lease
        assertEquals(LeaseState.LOST, held.state());
        granted.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLostSessionEndsItsLeasesEvenWhileTheHandleStillReportsThatSession() throws Exception {
        String path = ZooKeeperFixture.uniquePath("lost-early");
        CuratorFramework client = zk.newClient();
        Lease held = new ReentrantMutex(client, path).acquireAsync().get(10, TimeUnit.SECONDS);

        // Curator's LOST, heard before the handle is replaced: the handle still reports the session that ended.
        @SuppressWarnings("unchecked")
        ListenerManager<?, ConnectionStateListener> listeners =
                (ListenerManager<?, ConnectionStateListener>) client.getConnectionStateListenable();
        listeners.forEach(l -> l.stateChanged(client, ConnectionState.SUSPENDED));
        listeners.forEach(l -> l.stateChanged(client, ConnectionState.LOST));

        assertEquals(LeaseState.LOST, held.ended().get(10, TimeUnit.SECONDS)); // stayed SUSPECT before
        await().until(() -> client.checkExists().forPath(held.path()) == null);
    }

    @Test
    void aHolderIsToldOfTheDropAndOfTheSessionsEndWhileCuratorsListenerThreadIsHeldUp() throws Exception {
        String path = ZooKeeperFixture.uniquePath("listener-thread-told");
        HeldUp holder = holdWithTheListenerThreadHeldUp(path, ZooKeeperFixture::outageProof); // outlives a restart
        Lease held = holder.lease();
        List<LeaseState> told = holder.told();
        try {
            zk.stopServer();
            await().until(() -> told.equals(List.of(LeaseState.SUSPECT)));
            assertFalse(held.isValid());
            zk.restartServer();
            // The same session: HELD again once a check of the node on the new connection vouches for it.
            await().until(() -> told.equals(List.of(LeaseState.SUSPECT, LeaseState.HELD)));
            assertTrue(held.isValid());
            zk.expireSession(holder.client()); // a drop may come first
            await().until(() -> told.contains(LeaseState.LOST));
            assertEquals(LeaseState.LOST, held.ended().get(10, TimeUnit.SECONDS));
            held.close(); // LOST is final: still LOST
            assertEquals(LeaseState.LOST, held.state());
        } finally {
            letGo(holder);
        }
        zk.assertNoLeaks(path);
        assertEquals(List.of(LeaseState.SUSPECT, LeaseState.HELD), told.subList(0, 2));
        assertLostOnceAndLast(told);
    }

    @Test
    void aHolderIsToldItsSessionEndedWhenCuratorReplacesTheHandleForANewConnectionString() throws Exception {
        String path = ZooKeeperFixture.uniquePath("new-connection-string");
        // A new handle, not an update of the old one's server list: a new session, with no expiry to tell of it.
        FixedEnsembleProvider servers = new FixedEnsembleProvider(zk.connectString(), false);
        // A session that outlives the wait for its node below: only coord's delete makes the node go in time.
        HeldUp holder =
                holdWithTheListenerThreadHeldUp(path, b -> ZooKeeperFixture.outageProof(b.ensembleProvider(servers)));
        Lease held = holder.lease();
        List<LeaseState> told = holder.told();
        try {
            servers.setConnectionString(zk.connectString() + "," + zk.connectString());
            zk.stopServer(); // Curator replaces the handle on the drop's news, before coord hears it
            // LOST on that news: the handle it was granted on is gone. It stayed SUSPECT, on the next session too.
            await().until(() -> told.contains(LeaseState.LOST));
            zk.restartServer();
            // The old session outlives its handle on the server; the new one deletes what the old one held.
            await().until(() -> holder.client().checkExists().forPath(held.path()) == null);
        } finally {
            letGo(holder);
        }
        assertEquals(LeaseState.LOST, held.state());
        assertLostOnceAndLast(told);
        zk.assertNoLeaks(path);
    }

    /** A hold of a client whose Curator listener thread an application's listener holds up, and what it was told. */
    private record HeldUp(CuratorFramework client, CountDownLatch letGo, Lease lease, List<LeaseState> told) {}

    private HeldUp holdWithTheListenerThreadHeldUp(String path, Consumer<CuratorFrameworkFactory.Builder> custom)
            throws Exception {
        CuratorFramework client = zk.unstartedClient(custom);
        CountDownLatch letGo = ZooKeeperFixture.holdUpListenerThread(client);
        client.start();
        try {
            assertTrue(client.blockUntilConnected(10, TimeUnit.SECONDS));
            Lease held = new ReentrantMutex(client, path).acquireAsync().get(10, TimeUnit.SECONDS);
            List<LeaseState> told = new CopyOnWriteArrayList<>();
            held.addStateListener(told::add, Runnable::run);
            return new HeldUp(client, letGo, held, told);
        } catch (Exception | AssertionError e) {
            letGo.countDown();
            throw e;
        }
    }

    /** Lets the listener thread go on, and brings the server back if the test stopped it. */
    private void letGo(HeldUp holder) {
        holder.letGo().countDown();
        if (!zk.ensemble().servers().get(0).isRunning()) {
            zk.restartServer();
        }
    }

    private static void assertLostOnceAndLast(List<LeaseState> told) {
        assertEquals(LeaseState.LOST, told.get(told.size() - 1), "LOST is final, and told once: " + told);
        assertEquals(told.indexOf(LeaseState.LOST), told.size() - 1, told.toString());
    }

    @Test
    void participantsWrittenByOthersTooLargeForOneReplyAreStillListed() throws Exception {
        String path = ZooKeeperFixture.uniquePath("foreign-large");
        CuratorFramework client = zk.newClient();
        // Two nodes another program wrote, with more data together than one reply may carry.
        byte[] large = "y".repeat(600 * 1024).getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < 2; i++) {
            client.create()
                    .creatingParentsIfNeeded()
                    .withMode(CreateMode.PERSISTENT_SEQUENTIAL)
                    .forPath(path + "/other-", large);
        }

        // One read of both breaks the connection each time it is sent; halves fit.
        List<Participant> listed = new ReentrantMutex(client, path).participants();

        assertEquals(2, listed.size());
        assertEquals(600 * 1024, listed.get(1).id().length());
        client.delete().deletingChildrenIfNeeded().forPath(path);
    }

    @Test
    void waiterWhoseSessionExpiresQueuesAgainAndIsStillGranted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("waiter-expiry");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        CuratorFramework waiterClient = zk.newClient();
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path);
        holder.acquire();
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        String before = holder.participants().get(1).nodeName();

        zk.expireSession(waiterClient);
        await().atMost(Duration.ofSeconds(20))
                .until(() -> holder.participants().size() == 2
                        && !holder.participants().get(1).nodeName().equals(before));
        assertFalse(pending.isDone());
        holder.release();
        Lease lease = pending.get(20, TimeUnit.SECONDS);
        assertTrue(lease.isValid());
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void droppedConnectionMakesTheLeaseSuspectThenHeldAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("suspect");
        ReentrantMutex mutex = new ReentrantMutex(zk.newOutageProofClient(), path);
        mutex.acquire();
        Lease lease = mutex.lease();
        List<LeaseState> seen = new CopyOnWriteArrayList<>();
        lease.addStateListener(seen::add, Runnable::run);

        zk.stopServer();
        await().until(() -> lease.state() == LeaseState.SUSPECT);
        assertFalse(lease.isValid());
        zk.restartServer();
        await().atMost(Duration.ofSeconds(20)).until(() -> lease.state() == LeaseState.HELD);

        // Listeners are told on another thread, after the state has changed.
        await().untilAsserted(() -> assertEquals(List.of(LeaseState.SUSPECT, LeaseState.HELD), seen));
        assertTrue(mutex.isHeldByCurrentThread());
        mutex.release();
        assertEquals(LeaseState.RELEASED, lease.state());
        zk.assertNoLeaks(path);
    }

    @Test
    void aSuspectLeaseIsConfirmedBehindASyncSoALaggingServerCannotVouchForIt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("confirm-synced");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newOutageProofClient();
        client.getZookeeperClient().setTracerDriver(counter);
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        mutex.acquire();
        Lease lease = mutex.lease();
        counter.reset();

        zk.stopServer();
        await().until(() -> lease.state() == LeaseState.SUSPECT);
        zk.restartServer();
        await().atMost(Duration.ofSeconds(20)).until(() -> lease.state() == LeaseState.HELD);

        List<String> kinds = counter.names(lease.path()).stream()
                .map(name -> name.substring(0, name.indexOf("BuilderImpl")))
                .toList();
        assertEquals("Sync", kinds.get(0), kinds::toString);
        assertTrue(kinds.indexOf("Exists") > 0, kinds::toString);
        mutex.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void releaseWhileDisconnectedStillDeletesTheZnode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("offline-release");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        mutex.acquire();
        Lease lease = mutex.lease();
        zk.stopServer();
        await().until(() -> lease.state() == LeaseState.SUSPECT);
        mutex.release();
        zk.restartServer();
        zk.assertNoLeaks(path);
    }

    @Test
    void fencingTokensRiseAcrossHoldersEvenWhenTheParentIsRecreated() throws Exception {
        String path = ZooKeeperFixture.uniquePath("fencing");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        long last = 0;
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 3; i++) {
                mutex.acquire();
                long token = mutex.lease().fencingToken();
                assertTrue(token > last, "token " + token + " after " + last);
                last = token;
                mutex.release();
            }
            // Remove the (now empty) parent, as the server's container reaper would.
            await().until(() -> client.getChildren().forPath(path).isEmpty());
            client.delete().forPath(path);
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void fencedCheckFailsTheTransactionOnceTheLeaseIsLost() throws Exception {
        String path = ZooKeeperFixture.uniquePath("fenced");
        String resource = path + "-resource";
        CuratorFramework holderClient = zk.newClient();
        CuratorFramework other = zk.newClient();
        other.create().creatingParentsIfNeeded().forPath(resource, bytes("v0"));
        ReentrantMutex mutex = new ReentrantMutex(holderClient, path);
        Lease lease = mutex.acquireAsync().get(10, TimeUnit.SECONDS);

        other.transaction()
                .forOperations(
                        lease.fencedCheck(), other.transactionOp().setData().forPath(resource, bytes("v1")));
        assertEquals("v1", new String(other.getData().forPath(resource), StandardCharsets.UTF_8));

        zk.expireSession(holderClient);
        assertEquals(LeaseState.LOST, lease.ended().get(20, TimeUnit.SECONDS));
        assertThrows(
                KeeperException.NoNodeException.class,
                () -> other.transaction()
                        .forOperations(
                                lease.fencedCheck(),
                                other.transactionOp().setData().forPath(resource, bytes("v2"))));
        assertEquals("v1", new String(other.getData().forPath(resource), StandardCharsets.UTF_8));
        other.delete().forPath(resource);
        zk.assertNoLeaks(path);
    }

    @Test
    void anAcquisitionCancelledWhileItsCreateIsInDoubtLeavesNoNode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("cancelled-in-doubt");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework client = faults.client(zk);
        ReentrantMutex waiter = new ReentrantMutex(client, path);

        // The create is applied but its reply is lost with the connection; the caller gives up before it is back.
        faults.loseNextLockCreateReply();
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        pending.cancel(false);

        await().alias("the cancelled attempt's node was found and deleted")
                .until(() -> holder.participants().size() == 1);
        held.close();
        waiter.acquire(); // the waiter's client still works
        waiter.release();
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aReleaseWhoseDeleteIsLostWithTheConnectionIsSentAgainOnReconnectingAndHoldsUpNobody() throws Exception {
        String path = ZooKeeperFixture.uniquePath("late-delete");
        FaultyHandle faults = new FaultyHandle();
        // Curator sends a request lost with its connection again only after the policy's sleep (a minute here), while
        // a request made on the new connection goes out at once.
        CuratorFramework client = faults.client(zk, new RetryNTimes(1, 60_000));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        Session session = Session.of(client);
        // Registered before coord's own listener: the application hears of the new connection first.
        CountDownLatch reconnected = ZooKeeperFixture.latchOn(client, ConnectionState.RECONNECTED);
        mutex.acquire();
        String released = mutex.lease().path();

        faults.loseNextDelete();
        mutex.release();
        await().until(faults::deleteLost);
        assertTrue(reconnected.await(20, TimeUnit.SECONDS));
        assertEquals(session.id(), client.getZookeeperClient().getZooKeeper().getSessionId());

        // Right away, on hearing of the connection: the released node may still be there.
        assertTrue(mutex.acquire(Duration.ZERO), "the look was refused behind the node its own thread released");
        assertNotEquals(released, mutex.lease().path());
        await().alias("coord sent the lost delete again on reconnecting, not a minute later")
                .until(() -> client.checkExists().forPath(released) == null);
        ReentrantMutex other = new ReentrantMutex(zk.newClient(), path);
        assertEquals(
                List.of(mutex.lease().path()),
                other.participants().stream()
                        .map(p -> path + "/" + p.nodeName())
                        .toList(),
                "everyone sees the one holder");
        mutex.release();
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void participantsListedInsideTheApplicationsOwnRetryLoopAreListed() throws Exception {
        String path = ZooKeeperFixture.uniquePath("participants-nested");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        mutex.acquire();

        // The children read, Curator's own, finishes the loop it joins: the read of the ids must not join it too.
        List<Participant> listed = RetryLoop.callWithRetry(client.getZookeeperClient(), mutex::participants);

        assertEquals(1, listed.size());
        mutex.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void participantsFailWhenTheRetryPolicyGivesUpOnAConnectionLostBetweenTheirTwoReads() throws Exception {
        String path = ZooKeeperFixture.uniquePath("participants-cut-off");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        holder.acquire();
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // A session that outlives the outage, and one retry: only the retry policy may end the read.
        CuratorFramework client = zk.newClientRetryingOnce(proxy);
        ReentrantMutex looker = new ReentrantMutex(client, path);
        AtomicBoolean cutAfterChildren = new AtomicBoolean();
        client.getZookeeperClient().setTracerDriver(new AdvancedTracerDriver() {
            @Override
            public void addTrace(OperationTrace trace) {
                // Runs as the children read returns, before the data read is sent.
                if (trace.getName().startsWith("GetChildren") && cutAfterChildren.compareAndSet(true, false)) {
                    proxy.refuseConnections(true);
                    proxy.cutConnections();
                }
            }

            @Override
            public void addEvent(EventTrace trace) {}
        });
        assertEquals(1, looker.participants().size());

        cutAfterChildren.set(true);
        CompletableFuture<List<Participant>> listed = CompletableFuture.supplyAsync(looker::participants);

        ExecutionException failed = assertThrows(ExecutionException.class, () -> listed.get(60, TimeUnit.SECONDS));
        CoordinationException error = assertInstanceOf(CoordinationException.class, failed.getCause());
        assertEquals("listing the participants of " + path + " failed: CONNECTIONLOSS", error.getMessage());
        assertInstanceOf(KeeperException.ConnectionLossException.class, error.getCause());
        assertFalse(cutAfterChildren.get(), "the children read answered before the cut");
        proxy.refuseConnections(false);
        assertTrue(client.blockUntilConnected(20, TimeUnit.SECONDS));
        assertEquals(1, looker.participants().size());
        holder.release();
        client.close();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aOneLookAcquisitionWhoseConnectionDropsAnswersFalseWithoutWaitingForItAndLeavesNoNode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("one-look-cut-off");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        holder.acquire();
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // A session that outlives the outage, and retries that outlast it: nothing but coord ends the look.
        CuratorFramework client = zk.newOutageProofClient(proxy);
        ReentrantMutex looker = new ReentrantMutex(client, path);
        Session session = Session.of(client);

        proxy.loseReplies(true); // the create goes out, and its reply never comes back
        CompletableFuture<Boolean> looked = CompletableFuture.supplyAsync(() -> {
            try {
                return looker.acquire(Duration.ZERO);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().until(() -> holder.participants().size() == 2);
        proxy.refuseConnections(true);
        proxy.cutConnections();

        assertFalse(looked.get(30, TimeUnit.SECONDS));
        proxy.loseReplies(false);
        proxy.refuseConnections(false);
        assertTrue(client.blockUntilConnected(20, TimeUnit.SECONDS));
        assertEquals(
                session.id(),
                client.getZookeeperClient().getZooKeeper().getSessionId(),
                "the look waited for the connection until the session was given up");
        await().alias("the look's node was withdrawn once connected")
                .atMost(Duration.ofSeconds(20))
                .until(() -> holder.participants().size() == 1);
        holder.release();
        assertTrue(looker.acquire(Duration.ofSeconds(20)));
        looker.release();
        client.close();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void acquisitionsThatGiveUpWhileDisconnectedNeverSendTheirCreates() throws Exception {
        String path = ZooKeeperFixture.uniquePath("gave-up-cut-off");
        CuratorFramework holderClient = zk.newClient();
        ReentrantMutex holder = new ReentrantMutex(holderClient, path);
        holder.acquire(); // keeps the path, and the look below waiting
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // A session that outlives the outage, and retries that outlast it: Curator would keep every request sent
        // meanwhile, and send it once connected.
        CuratorFramework client = zk.newOutageProofClient(proxy);
        ReentrantMutex looker = new ReentrantMutex(client, path);
        CountDownLatch suspended = ZooKeeperFixture.latchOn(client, ConnectionState.SUSPENDED); // heard after coord
        long createdBefore = KeptRequests.createsUnder(holderClient, path);

        proxy.refuseConnections(true);
        proxy.cutConnections();
        assertTrue(suspended.await(20, TimeUnit.SECONDS));
        for (int i = 0; i < 10; i++) {
            assertFalse(looker.acquire(Duration.ofMillis(1)));
        }
        looker.acquireAsync()
                .orTimeout(1, TimeUnit.MILLISECONDS)
                .exceptionally(e -> null)
                .join();
        assertTrue(looker.acquireAsync().cancel(false));
        KeptRequests.reconnectBehindThem(client, proxy, path);

        assertEquals(
                createdBefore,
                KeptRequests.createsUnder(holderClient, path),
                "a create was sent for a call that had given up");
        holder.release();
        assertTrue(looker.acquire(Duration.ofSeconds(20)));
        looker.release();
        client.close();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aReleaseThatABusyServerRefusesIsSentAgainAndTheNextWaiterIsGranted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("release-throttled");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework holderClient = zk.newCustomClient(b -> b.connectString(proxy.connectString()));
        ReentrantMutex holder = new ReentrantMutex(holderClient, path);
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path);
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> next = waiter.acquireAsync();
        await().until(() -> waiter.participants().size() == 2);

        // A server with request throttling on refuses the delete (THROTTLEDOP) without carrying it out, and Curator
        // does not retry that answer. The holder's session lives on, so nothing else would ever remove the node.
        proxy.refuseNext(ZooDefs.OpCode.delete, KeeperException.Code.THROTTLEDOP);
        held.close();

        Lease granted = next.get(20, TimeUnit.SECONDS);
        assertTrue(granted.isValid());
        granted.close();
        holderClient.close();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void anAcquisitionABusyServerRefusesFailsWithAnErrorThatSaysSoAndLeavesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("acquire-throttled");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(b -> b.connectString(proxy.connectString()));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        proxy.refuseNext(ZooDefs.OpCode.create2, KeeperException.Code.THROTTLEDOP);

        CoordinationException refused =
                assertThrows(CoordinationException.class, () -> mutex.acquire(Duration.ofSeconds(10)));
        assertEquals(
                "ZooKeeper refused a request for " + path
                        + ": org.apache.zookeeper.KeeperException$ThrottledOpException: KeeperErrorCode = Op throttled"
                        + " due to high load for " + path,
                refused.getMessage());
        assertInstanceOf(KeeperException.ThrottledOpException.class, refused.getCause());
        assertEquals(1, proxy.requestsRefused());
        assertTrue(mutex.acquire(Duration.ofSeconds(10)), "only that request was refused");
        mutex.release();
        client.close();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void anAcquisitionZooKeeperRefusesFailsOnceAndNothingAsksAgainForIt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("refused");
        CuratorFramework alice =
                zk.newCustomClient(b -> b.authorization("digest", "alice:secret".getBytes(StandardCharsets.UTF_8))
                        .aclProvider(MutexViewTest.creatorOnly()));
        alice.create().creatingParentsIfNeeded().forPath(path); // nobody else may list it or create under it
        RequestCounter counter = new RequestCounter();
        ReentrantMutex bob = new ReentrantMutex(zk.newClient(counter), path);

        ExecutionException refused =
                assertThrows(ExecutionException.class, () -> bob.acquireAsync().get(10, TimeUnit.SECONDS));
        assertInstanceOf(
                KeeperException.NoAuthException.class, refused.getCause().getCause());
        // A refusal is final: what goes on in the background on its behalf (a sweep for strays, a read to count the
        // path) is asked once, not again and again.
        int sent = counter.count(path);
        await().during(Duration.ofMillis(500))
                .atMost(Duration.ofSeconds(5))
                .until(() -> counter.count(path) <= sent + 4);
    }

    @Test
    void closingTheClientFailsAPendingAcquisition() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        CuratorFramework waiterClient = zk.newClient();
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path);
        holder.acquire();
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        CompletableFuture<Throwable> blocked = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                waiter.acquire();
                blocked.complete(null);
            } catch (Throwable e) {
                blocked.complete(e);
            }
        });
        t.start();
        CompletableFuture<Throwable> locking = new CompletableFuture<>();
        Thread l = new Thread(() -> {
            try {
                waiter.asLock().lock(); // not interruptible, but it ends with the client
                locking.complete(null);
            } catch (Throwable e) {
                locking.complete(e);
            }
        });
        l.start();
        await().until(() -> holder.participants().size() == 4);

        waiterClient.close();

        ExecutionException asyncError = assertThrows(ExecutionException.class, () -> pending.get(10, TimeUnit.SECONDS));
        assertTrue(asyncError.getCause() instanceof CoordinationException, asyncError.toString());
        assertEquals(
                "the client was closed while waiting for " + path,
                asyncError.getCause().getMessage());
        Throwable blockingError = blocked.get(10, TimeUnit.SECONDS);
        assertTrue(blockingError instanceof CoordinationException, String.valueOf(blockingError));
        Throwable lockError = locking.get(10, TimeUnit.SECONDS);
        assertInstanceOf(CoordinationException.class, lockError);
        assertEquals("the client was closed while waiting for " + path, lockError.getMessage());
        CoordinationException afterClose = assertThrows(CoordinationException.class, waiter::acquire);
        assertEquals("the client was closed before acquiring " + path, afterClose.getMessage());
        holder.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void closingTheClientUnderANamespaceFacadeFailsAPendingAcquisition() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-facade");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient().usingNamespace("tenant"), path);
        CuratorFramework waiterClient = zk.newClient();
        ReentrantMutex waiter = new ReentrantMutex(waiterClient.usingNamespace("tenant"), path);
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);

        // A facade hears of its client's close only through its watches: the waiter's must tell it once.
        waiterClient.close();

        ExecutionException asyncError = assertThrows(ExecutionException.class, () -> pending.get(10, TimeUnit.SECONDS));
        assertEquals(
                "the client was closed while waiting for " + path,
                asyncError.getCause().getMessage());
        held.close();
        zk.assertNoLeaks("/tenant" + path);
    }

    @Test
    void closingTheClientUnderANamespaceFacadeWhileDisconnectedFailsAPendingAcquisition() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-facade-offline");
        CuratorFramework client = zk.newCustomClient(MutexFaultTest::givingUpAtOnce);
        assertClosingWhileCutOffFailsAWaiter(
                client, new ReentrantMutex(client.usingNamespace("tenant"), path), "/tenant");
    }

    @Test
    void closingAClientThatCannotTellOfItsCloseFailsAnAcquisitionWaitingForTheConnection() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-unlistenable-offline");
        CuratorFramework client = zk.newCustomClient(MutexFaultTest::givingUpAtOnce);
        // A client of another make, with no CuratorListenable, here under a namespace of its own so that coord does
        // not take it for the client it wraps: nothing tells coord of its close.
        CuratorFramework unlistenable = (CuratorFramework) Proxy.newProxyInstance(
                CuratorFramework.class.getClassLoader(), new Class<?>[] {CuratorFramework.class}, (p, method, args) -> {
                    if (method.getName().equals("getCuratorListenable")) {
                        throw new UnsupportedOperationException("no CuratorListenable here");
                    }
                    if (method.getName().equals("getNamespace")) {
                        return "unlistenable";
                    }
                    try {
                        return method.invoke(client, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        assertClosingWhileCutOffFailsAWaiter(client, new ReentrantMutex(unlistenable, path), "/unlistenable");
    }

    private static void givingUpAtOnce(CuratorFrameworkFactory.Builder builder) {
        builder.retryPolicy(new RetryNTimes(0, 0)).connectionTimeoutMs(300);
    }

    /**
     * Stops the server, has {@code waiter} (on {@code client}, or on a facade of it whose znodes are under {@code
     * root}) wait to queue, and closes the client: the wait fails, and nothing is left.
     */
    private static void assertClosingWhileCutOffFailsAWaiter(
            CuratorFramework client, ReentrantMutex waiter, String root) throws Exception {
        zk.stopServer();
        await().until(() -> !client.getZookeeperClient().isConnected());
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        // It waits for the connection to send its create: no watch, no request that could tell of the close.
        await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5)).until(() -> !pending.isDone());

        client.close();

        ExecutionException asyncError = assertThrows(ExecutionException.class, () -> pending.get(10, TimeUnit.SECONDS));
        assertEquals(
                "the client was closed while waiting for " + waiter.path(),
                asyncError.getCause().getMessage());
        zk.restartServer();
        zk.assertNoLeaks(root + waiter.path());
    }

    @Test
    void aNewSessionWithoutAnExpiryLosesTheOldSessionsLeaseAndRequeuesItsWaiters() throws Exception {
        String path = ZooKeeperFixture.uniquePath("new-session");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        Lease held = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> waiting = mutex.acquireAsync();
        await().until(() -> mutex.participants().size() == 2);
        long before = client.getZookeeperClient().getZooKeeper().getSessionId();

        // A new handle, so a new session, with no expiry in between: what a changed connection string does.
        client.getZookeeperClient().reset();

        assertEquals(LeaseState.LOST, held.ended().get(20, TimeUnit.SECONDS));
        Lease granted = waiting.get(20, TimeUnit.SECONDS);
        assertTrue(granted.isValid());
        assertTrue(client.getZookeeperClient().getZooKeeper().getSessionId() != before);
        granted.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aNewSessionWithoutAnExpiryRequeuesAWaiterBehindAnotherClientsHold() throws Exception {
        CuratorFramework waiterClient = zk.newClient();
        // A new handle, so a new session, with no expiry in between: the waiter's node and its watch go with the old.
        assertAWaiterQueuesAgainAfterEach(
                "new-session-waiter",
                waiterClient,
                1,
                () -> waiterClient.getZookeeperClient().reset());
    }

    @Test
    void aWaiterWhoseClientDampsItsConnectionNewsWithACircuitBreakerQueuesAgainAtEverySessionLoss() throws Exception {
        // Curator's circuit-breaking listener manager passes the first change on, then holds back those that follow
        // while its retry policy runs (here, for a minute): a second expiry in that spell is never told to listeners.
        CuratorFramework waiterClient = zk.newCustomClient(b -> b.connectionStateListenerManagerFactory(
                ConnectionStateListenerManagerFactory.circuitBreaking(new RetryForever(60_000))));
        assertAWaiterQueuesAgainAfterEach("circuit-breaker", waiterClient, 2, () -> zk.expireSession(waiterClient));
    }

    @Test
    void aNewSessionWhosePredecessorsLossWentUntoldRequeuesAWaiterAllTheSame() throws Exception {
        // Curator tells of no second loss while it still reports the first. Here the waiter's client tells of no loss
        // at all, to anybody: the new session's connection is all coord hears of.
        CuratorFramework waiterClient = zk.newCustomClient(b -> b.connectionStateListenerManagerFactory(
                c -> StandardListenerManager.<ConnectionStateListener>mappingStandard(MutexFaultTest::deafToLoss)));
        assertAWaiterQueuesAgainAfterEach(
                "untold-loss",
                waiterClient,
                1,
                () -> waiterClient.getZookeeperClient().reset());
    }

    /** Something that ends a client's session, or gives it a new one. */
    @FunctionalInterface
    private interface SessionChange {
        void happen() throws Exception;
    }

    /**
     * A waiter of {@code waiterClient} behind another client's hold queues again with a new node after each of
     * {@code changes} session changes, and is granted once the hold ends.
     */
    private void assertAWaiterQueuesAgainAfterEach(
            String name, CuratorFramework waiterClient, int changes, SessionChange change) throws Exception {
        String path = ZooKeeperFixture.uniquePath(name);
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        // The waiter's client has not counted the path yet, so it waits on a watch of the holder's node, in either
        // mode.
        CompletableFuture<Lease> waiting = new ReentrantMutex(waiterClient, path).acquireAsync();
        await().until(() -> holder.participants().size() == 2);

        for (int round = 1; round <= changes; round++) {
            String before = holder.participants().get(1).nodeName();
            change.happen();
            await("the waiter queued again after session change " + round)
                    .until(() -> holder.participants().size() == 2
                            && !holder.participants().get(1).nodeName().equals(before));
        }
        held.close();

        Lease granted = waiting.get(20, TimeUnit.SECONDS);
        assertTrue(granted.isValid());
        granted.close();
        zk.assertNoLeaks(path);
    }

    private static ConnectionStateListener deafToLoss(ConnectionStateListener listener) {
        return new ConnectionStateListener() {
            @Override
            public void stateChanged(CuratorFramework client, ConnectionState state) {
                if (state != ConnectionState.LOST) {
                    listener.stateChanged(client, state);
                }
            }

            @Override
            public boolean doNotProxy() {
                return listener.doNotProxy();
            }
        };
    }

    @Test
    void leaseHeldByAClosedClientIsLost() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-holder");
        CuratorFramework client = zk.newClient();
        Lease lease = new ReentrantMutex(client, path).acquireAsync().get(10, TimeUnit.SECONDS);
        client.close();
        assertEquals(LeaseState.LOST, lease.ended().get(10, TimeUnit.SECONDS));
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaseDeclaredLostWhileCutOffHasItsNodeDeletedOnceTheClientReconnects() throws Exception {
        String path = ZooKeeperFixture.uniquePath("lost-while-cut-off");
        // The server keeps this session for 20 s, but the client declares it lost after 2 s without a connection,
        // and gives up on any one request after a single failed try.
        CuratorFramework holderClient = zk.newClientGivingUpBeforeTheServer();
        Session old = Session.of(holderClient);
        Lease held = new ReentrantMutex(holderClient, path).acquireAsync().get(10, TimeUnit.SECONDS);
        CuratorFramework waiterClient = zk.newClient();
        CompletableFuture<Void> waiterLost = new CompletableFuture<>();
        waiterClient.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.LOST) {
                waiterLost.complete(null);
            }
        });
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path);
        CompletableFuture<Lease> next = waiter.acquireAsync();
        await().until(() -> waiter.participants().size() == 2);

        zk.stopServer();
        assertEquals(LeaseState.LOST, held.ended().get(20, TimeUnit.SECONDS));
        // The waiter's own session is declared lost 2 s later: by then a one-try delete of the holder's node would
        // have failed for good.
        waiterLost.get(20, TimeUnit.SECONDS);
        zk.restartServer();

        Lease granted = next.get(15, TimeUnit.SECONDS);
        assertTrue(granted.fencingToken() > held.fencingToken());
        // The old session still lived on the server when the waiter got in: the node went by our delete, retried
        // across the reconnect, not by the server expiring the session.
        assertTrue(zk.endSessionIfAlive(old), "the old session had already expired");
        granted.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aWaiterDeclaredLostWhileCutOffLeavesNoNodeAheadOfTheOthers() throws Exception {
        String path = ZooKeeperFixture.uniquePath("waiter-lost-while-cut-off");
        CuratorFramework cutOff = zk.newClientGivingUpBeforeTheServer();
        Session old = Session.of(cutOff);
        ReentrantMutex holder = new ReentrantMutex(zk.newOutageProofClient(), path);
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> first = new ReentrantMutex(cutOff, path).acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        CompletableFuture<Lease> second = new ReentrantMutex(zk.newOutageProofClient(), path).acquireAsync();
        await().until(() -> holder.participants().size() == 3);
        String firstNode = holder.participants().get(1).nodeName();

        zk.stopServer();
        await().atMost(Duration.ofSeconds(20))
                .until(() -> !cutOff.getZookeeperClient().isConnected());
        await().atMost(Duration.ofSeconds(20))
                .until(() -> cutOff.getZookeeperClient().getZooKeeper().getSessionId() != old.id());
        zk.restartServer();

        // The waiter queues again on its new session, behind the second, and takes its old node away.
        await().atMost(Duration.ofSeconds(20))
                .until(() -> holder.participants().stream()
                        .noneMatch(p -> p.nodeName().equals(firstNode)));
        held.close();
        Lease next = second.get(20, TimeUnit.SECONDS);
        assertTrue(zk.endSessionIfAlive(old), "the old session had already expired");
        assertFalse(first.isDone());
        next.close();
        first.get(20, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
