package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.testkit.EngineMode;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Requests per operation, counted by a Curator tracer on the client that makes them: counts, never timings. */
@Timeout(60)
class MutexRequestCountTest {
    private static final String CREATE = "CreateBuilderImpl";
    private static final String DELETE = "DeleteBuilderImpl";
    private static final String READ = "GetChildrenBuilderImpl";
    private static final String ADD_WATCH = "AddWatchBuilderImpl";
    private static final String SYNC = "SyncBuilderImpl";
    private static final String EXISTS = "ExistsBuilderImpl";

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @AfterEach
    void backToViews() {
        zk.mode(EngineMode.VIEW);
    }

    // ---- with the view (the default) ----

    @Test
    void firstCycleCountsTheQueueSecondPrimesTheViewAndEveryCycleAfterIsTwoRequests() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-view");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        ZooKeeperFixture.lingerViews(client, Duration.ofMinutes(1)); // nothing is dropped between two calls
        client.create().creatingParentsIfNeeded().forPath(path); // so that parent creation is not counted
        counter.reset();

        ReentrantMutex first = new ReentrantMutex(client, path);
        first.acquire();
        first.release();
        // The first acquisition on a path queues without a view, and its read counts the path: create, the children
        // read right behind it, delete.
        assertEquals(
                List.of(CREATE, READ, DELETE),
                kinds(counter, path, 3),
                () -> counter.names(path).toString());
        awaitReleased(counter, path);
        counter.reset();
        first.acquire();
        first.release();
        // Few enough others: the second primes the view (addWatch and a read, on one round trip), then create, delete.
        assertEquals(
                List.of(ADD_WATCH, READ, CREATE, DELETE),
                kinds(counter, path, 4),
                () -> counter.names(path).toString());

        // A new mutex per call, as a service would build one per request: the view belongs to client and path.
        awaitReleased(counter, path);
        counter.reset();
        for (int i = 0; i < 5; i++) {
            ReentrantMutex mutex = new ReentrantMutex(client, path);
            mutex.acquire();
            mutex.release();
        }
        await().until(() -> counter.count(path) >= 10);
        assertEquals(5, counter.count(path, CREATE), () -> counter.names(path).toString());
        assertEquals(5, counter.count(path, DELETE), () -> counter.names(path).toString());
        assertEquals(10, counter.count(path), () -> counter.names(path).toString());

        // Unused for its linger, the view removes its watch (a request Curator does not trace), and none is left.
        ZooKeeperFixture.lingerViews(client, ZooKeeperFixture.VIEW_LINGER);
        counter.reset();
        first.acquire();
        first.release();
        zk.assertNoLeaks(path);
        assertEquals(List.of(CREATE, DELETE), kinds(counter, path, 2));
        assertEquals(2, counter.count(path), () -> counter.names(path).toString());
    }

    @Test
    void crossSessionHandOffNeedsNoReadAndNoRequestAfterTheHoldersDelete() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-view-contended");
        RequestCounter counter = new RequestCounter();
        CuratorFramework holderClient = zk.newClient();
        holderClient.create().creatingParentsIfNeeded().forPath(path);
        ReentrantMutex holder = new ReentrantMutex(holderClient, path);
        CuratorFramework waiterClient = zk.newClient(counter);
        ZooKeeperFixture.lingerViews(waiterClient, Duration.ofMinutes(1));
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path);
        primeView(waiter);
        holder.acquire();
        awaitReleased(counter, path);
        counter.reset();

        CompletableFuture<Lease> pending = waiter.acquireAsync();
        // The create, and nothing else: the view already holds the holder's node, and its deletion will come to it.
        await().until(() -> holder.participants().size() == 2);
        assertEquals(
                List.of(CREATE),
                kinds(counter, path, 1),
                () -> counter.names(path).toString());
        holder.release();
        Lease lease = pending.get(10, TimeUnit.SECONDS);
        assertEquals(1, counter.count(path), () -> "requests after the holder's delete: " + counter.names(path));

        lease.close();
        await().until(() -> counter.count(path) == 2);
        assertEquals(0, counter.count(path, READ), () -> counter.names(path).toString());
        waiterClient.close(); // its view would linger for a minute
        zk.assertNoLeaks(path);
    }

    @Test
    void waiterThatPrimesItsViewBehindAHolderChecksOnceThatItMayReadTheHoldersNode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-view-prime-behind");
        RequestCounter counter = new RequestCounter();
        CuratorFramework holderClient = zk.newClient();
        holderClient.create().creatingParentsIfNeeded().forPath(path);
        ReentrantMutex holder = new ReentrantMutex(holderClient, path);
        CuratorFramework waiterClient = zk.newClient(counter);
        ZooKeeperFixture.lingerViews(waiterClient, Duration.ofMinutes(1));
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path);
        waiter.acquire(); // counts the path, without a view
        waiter.release();
        holder.acquire();
        awaitReleased(counter, path);
        counter.reset();

        CompletableFuture<Lease> pending = waiter.acquireAsync();
        // addWatch, read, create, and one multi-read asking whether the holder's node is readable: a node the
        // client may not read sends it no events, so it must not wait on one.
        await().until(() -> counter.count(path) == 4);
        assertEquals(
                1,
                counter.count(path, "ViewConfirmation"),
                () -> counter.names(path).toString());
        int beforeHandOff = counter.count(path);
        holder.release();
        Lease lease = pending.get(10, TimeUnit.SECONDS);
        assertEquals(
                beforeHandOff, counter.count(path), () -> counter.names(path).toString());
        assertEquals(1, counter.count(path, READ), () -> counter.names(path).toString());
        lease.close();
        waiterClient.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void handOffDownAQueueInOneClientNeedsNoReadsAndNoWatches() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-view-queue");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        ZooKeeperFixture.lingerViews(client, Duration.ofMinutes(1));
        client.create().creatingParentsIfNeeded().forPath(path);
        counter.reset();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        primeView(mutex);
        awaitReleased(counter, path);
        int waiters = 50;
        Lease first = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        await().until(() -> counter.count(path, CREATE) == 3);
        counter.reset();
        CompletableFuture<?>[] queued = new CompletableFuture<?>[waiters];
        for (int i = 0; i < waiters; i++) {
            queued[i] = mutex.acquireAsync().thenAccept(Lease::close);
        }
        await().until(() -> counter.count(path, CREATE) == waiters);

        first.close();
        CompletableFuture.allOf(queued).get(30, TimeUnit.SECONDS);

        // Each waiter: its create and its delete. Each hand-off: the holder's delete alone.
        await().until(() -> counter.count(path) >= 2 * waiters + 1);
        assertEquals(
                2 * waiters + 1, counter.count(path), () -> counter.names(path).toString());
        client.close();
        zk.assertNoLeaks(path);
    }

    // ---- with predecessor watches (coord.view=off, or a path past the herd bound) ----

    @Test
    void withoutAViewUncontendedAcquireAndReleaseMakeThreeRequests() throws Exception {
        zk.mode(EngineMode.WATCH);
        String path = ZooKeeperFixture.uniquePath("count-uncontended");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        client.create().creatingParentsIfNeeded().forPath(path);
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        counter.reset();

        mutex.acquire();
        mutex.release();

        // create + the getChildren pipelined behind it + delete
        await().untilAsserted(() ->
                assertEquals(3, counter.count(path), () -> counter.names(path).toString()));
        assertEquals(3, counter.count(path), () -> counter.names(path).toString());
        zk.assertNoLeaks(path);
        assertEquals(3, counter.count(path), () -> counter.names(path).toString());
    }

    @Test
    void withoutAViewContendedAcquisitionMakesFourRequestsAndNoneAfterTheHoldersDelete() throws Exception {
        zk.mode(EngineMode.WATCH);
        String path = ZooKeeperFixture.uniquePath("count-contended");
        RequestCounter counter = new RequestCounter();
        CuratorFramework holderClient = zk.newClient();
        holderClient.create().creatingParentsIfNeeded().forPath(path);
        ReentrantMutex holder = new ReentrantMutex(holderClient, path);
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(counter), path);
        holder.acquire();

        CompletableFuture<Lease> pending = waiter.acquireAsync();
        // create, getChildren, getData with a watch on the holder's node
        await().until(() -> counter.count(path) == 3);
        int beforeHandOff = counter.count(path);
        holder.release();
        Lease lease = pending.get(10, TimeUnit.SECONDS);
        assertEquals(
                beforeHandOff, counter.count(path), () -> "requests after the holder's delete: " + counter.names(path));

        lease.close();
        await().until(() -> counter.count(path) == 4);
        zk.assertNoLeaks(path);
        assertTrue(counter.count(path) <= 4, () -> counter.names(path).toString());
    }

    @Test
    void withoutAViewHandOffDownAQueueInOneClientNeedsNoReads() throws Exception {
        zk.mode(EngineMode.WATCH);
        String path = ZooKeeperFixture.uniquePath("count-queue");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        client.create().creatingParentsIfNeeded().forPath(path);
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        int waiters = 50;
        Lease first = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<?>[] queued = new CompletableFuture<?>[waiters];
        for (int i = 0; i < waiters; i++) {
            queued[i] = mutex.acquireAsync().thenAccept(Lease::close);
        }
        // Every waiter has set its one watch, on the node just before its own.
        await().until(() -> counter.count(path, "GetData") == waiters);
        counter.reset();

        first.close();
        CompletableFuture.allOf(queued).get(30, TimeUnit.SECONDS);

        // Each hand-off is the holder's delete and nothing else: the waiters learn from each other's watches.
        await().until(() -> counter.count(path) >= waiters + 1);
        zk.assertNoLeaks(path);
        assertEquals(waiters + 1, counter.count(path), () -> counter.names(path).toString());
    }

    @Test
    void aViewReadsAgainAfterAReconnectionBehindASync() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-reconnect");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newOutageProofClient(proxy);
        RequestCounter counter = new RequestCounter();
        Lease held = holdOnAPrimedView(client, path, counter);

        CountDownLatch reconnected = ZooKeeperFixture.latchOn(client, ConnectionState.RECONNECTED);
        proxy.cutConnections();
        assertTrue(reconnected.await(30, TimeUnit.SECONDS));
        // The view heard events that no reply has shown the handle: a server the client reconnects to may not have
        // applied them yet, and a read there would take the view back. The sync makes the read wait for them.
        // (The held lease is confirmed with a sync and an exists of its own node, which is not the view's.)
        await().until(() -> counter.count(path, READ) == 1);
        assertEquals(List.of(SYNC, READ), viewRequests(counter, path));

        held.close();
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aViewWhoseSyncFailsDoesNotReadWithoutOne() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-sync-failed");
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework client = faults.client(zk);
        RequestCounter counter = new RequestCounter();
        Lease held = holdOnAPrimedView(client, path, counter);

        faults.failNextSyncOf(path);
        faults.dropConnection();
        await().until(() -> counter.count(path, READ) == 1);
        assertTrue(faults.syncFailed());
        // The failed sync is asked again before the read goes.
        assertEquals(List.of(SYNC, SYNC, READ), viewRequests(counter, path));
        await().until(() -> held.state() == LeaseState.HELD); // confirmed again after the reconnection

        held.close();
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aHeldLeaseWhoseSyncFailsOnReconnectionIsCheckedOnlyBehindOneThatIsAnswered() throws Exception {
        String path = ZooKeeperFixture.uniquePath("count-confirm-sync-failed");
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework client = faults.client(zk);
        RequestCounter counter = new RequestCounter();
        Lease held = holdOnAPrimedView(client, path, counter);
        List<LeaseState> told = new CopyOnWriteArrayList<>();
        held.addStateListener(told::add, Runnable::run);

        faults.failNextSyncOf(held.path());
        faults.dropConnection();
        await().until(() -> told.equals(List.of(LeaseState.SUSPECT, LeaseState.HELD)));
        assertTrue(faults.syncFailed());
        // A check sent behind a refused sync could read a server that lags behind a deletion of the node.
        assertEquals(List.of(SYNC, SYNC, EXISTS), requestsOn(counter, held.path()));

        held.close();
        client.close();
        zk.assertNoLeaks(path);
    }

    /**
     * Primes {@code client}'s view of {@code path}, kept for a minute, and holds the mutex there; {@code counter}
     * counts the client's requests from then on.
     */
    private static Lease holdOnAPrimedView(CuratorFramework client, String path, RequestCounter counter)
            throws Exception {
        ZooKeeperFixture.lingerViews(client, Duration.ofMinutes(1));
        client.create().creatingParentsIfNeeded().forPath(path); // so that parent creation is not counted
        client.getZookeeperClient().setTracerDriver(counter);
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        primeView(mutex);
        awaitReleased(counter, path);
        Lease held = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        counter.reset();
        return held;
    }

    /** The kinds of the requests on {@code path} itself, not on nodes under it: the view's, not a lease's. */
    private static List<String> viewRequests(RequestCounter counter, String path) {
        return requestsOn(counter, path);
    }

    /** The kinds of the requests on {@code path} itself, in the order sent. */
    private static List<String> requestsOn(RequestCounter counter, String path) {
        return counter.names(path).stream()
                .filter(name -> name.endsWith(" " + path))
                .map(name -> name.substring(0, name.indexOf('-')))
                .toList();
    }

    /** Two cycles: the first counts the path, the second primes the client's view of it. */
    static void primeView(ReentrantMutex mutex) throws InterruptedException {
        for (int i = 0; i < 2; i++) {
            mutex.acquire();
            mutex.release();
        }
    }

    /** Waits until every create counted so far has its delete counted too: a release returns before its reply. */
    private static void awaitReleased(RequestCounter counter, String path) {
        await().until(() -> counter.count(path, CREATE) == counter.count(path, DELETE));
    }

    /** The kinds of the first {@code n} requests under {@code path}, once there are that many. */
    private static List<String> kinds(RequestCounter counter, String path, int n) {
        await().alias("" + n + " requests: " + counter.names(path)).until(() -> counter.count(path) >= n);
        return counter.names(path).stream()
                .limit(n)
                .map(name -> name.substring(0, name.indexOf('-')))
                .toList();
    }
}
