package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.Executors;
import io.coord.testkit.Acls;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher.WatcherType;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What the view must get right beyond the common path: the lock's parent deleted and created again under it, nodes
 * it may not read, a path past the herd bound, and nodes deleted by somebody else.
 */
@Timeout(60)
class MutexViewTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void parentDeletedAndCreatedAgainUnderALiveViewRestartsItsCount() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-parent");
        CuratorFramework admin = zk.newClient();
        RequestCounter counter = new RequestCounter();
        CuratorFramework waiterClient = zk.newClient(counter);
        ZooKeeperFixture.lingerViews(waiterClient, Duration.ofMinutes(1)); // keeps the view across the gap
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path);
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        for (int i = 0; i < 3; i++) { // sequences 0 to 2 under the first parent
            waiter.acquire();
            waiter.release();
        }
        Lease first = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        first.close();
        long firstToken = first.fencingToken();
        await().until(() -> admin.getChildren().forPath(path).isEmpty());

        // What the container reaper does, done at once: the parent goes, and comes back with sequences from 0.
        admin.delete().forPath(path);
        admin.create().forPath(path);
        counter.reset();
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        assertTrue(held.path().endsWith("0000000000"), held.path());
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);

        await().until(() -> counter.count(path) >= 1);
        assertFalse(pending.isDone(), "the waiter's view must hold the new parent's first node");
        assertEquals(1, counter.count(path), () -> "the create alone: " + counter.names(path));
        held.close();
        Lease granted = pending.get(10, TimeUnit.SECONDS);
        assertTrue(granted.fencingToken() > held.fencingToken() && held.fencingToken() > firstToken);
        granted.close();
        waiterClient.close();
        zk.assertNoLeaks(path);
    }

    /**
     * The server keeps the events of a node from a client that may not read it (ZooKeeper 3.9.2 on). A view that
     * counted on them would grant past that node; coord notices instead, whether the node was created after the view
     * was read (a create goes missing from the count) or before (listed, but not readable), and goes on without
     * the view, which here ends in NoAuth: a client that cannot read a node cannot wait for its deletion.
     */
    @ParameterizedTest(name = "unreadable node created {0} the view was read")
    @ValueSource(strings = {"after", "before"})
    void aViewNeverGrantsPastANodeItMayNotRead(String when) throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-acl");
        CuratorFramework admin = zk.newClient();
        admin.create().creatingParentsIfNeeded().forPath(path); // open: anybody may list the queue
        CuratorFramework alice =
                zk.newCustomClient(b -> b.authorization("digest", "alice:secret".getBytes(StandardCharsets.UTF_8))
                        .aclProvider(creatorOnly()));
        CuratorFramework bobsClient = zk.newClient();
        ZooKeeperFixture.lingerViews(bobsClient, Duration.ofMinutes(1));
        ReentrantMutex bob = new ReentrantMutex(bobsClient, path);
        ReentrantMutex alicesMutex = new ReentrantMutex(alice, path);
        bob.acquire(); // counts the path: bob's next acquisition uses a view
        bob.release();
        if (when.equals("after")) {
            bob.acquire(); // primes bob's view, which lingers
            bob.release();
        }
        Lease alicesLease = alicesMutex.acquireAsync().get(10, TimeUnit.SECONDS);

        CompletableFuture<Lease> bobs = bob.acquireAsync();

        ExecutionException refused = assertThrows(ExecutionException.class, () -> bobs.get(10, TimeUnit.SECONDS));
        assertInstanceOf(CoordinationException.class, refused.getCause());
        assertInstanceOf(
                KeeperException.NoAuthException.class, refused.getCause().getCause());
        assertEquals(LeaseState.HELD, alicesLease.state());
        alicesLease.close();
        bobsClient.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void pastTheHerdBoundAPathFallsBackToPredecessorWatchesAndComesBackOnceQuiet() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-herd");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = clientWithHerdBoundOfTwo(counter);
        List<CompletableFuture<Lease>> queued = queueOtherSessions(path, 3);
        ReentrantMutex mutex = new ReentrantMutex(client, path);

        CompletableFuture<Lease> crowded = mutex.acquireAsync();
        // Three nodes of other sessions, over the bound of two: the first acquisition's own read counted them, so no
        // view is ever added, and the waiter watches its predecessor like a client without views.
        await().until(() -> counter.count(path, "GetData") == 1);
        for (CompletableFuture<Lease> other : queued) {
            other.get(10, TimeUnit.SECONDS).close();
        }
        crowded.get(10, TimeUnit.SECONDS).close();
        assertEquals(
                0, counter.count(path, "AddWatch"), () -> counter.names(path).toString());

        // A quiet path: once reads in a row find at most half the bound, the view comes back, once.
        for (int i = 0; i < 8 && counter.count(path, "AddWatch") == 0; i++) {
            mutex.acquire();
            mutex.release();
        }
        assertEquals(
                1, counter.count(path, "AddWatch"), () -> counter.names(path).toString());
        counter.reset();
        mutex.acquire();
        mutex.release();
        // On the view again: a create and a delete, with no read and no watch (the last cycle's delete may be traced
        // after the reset).
        await().until(() -> counter.count(path, "Create") == 1 && counter.count(path, "Delete") >= 1);
        assertEquals(
                0, counter.count(path, "GetChildren") + counter.count(path, "GetData") + counter.count(path, "Add"));
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aViewThatOtherSessionsCrowdPastTheBoundIsDroppedWithoutAnEntryOfItsOwn() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-herd-idle");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = clientWithHerdBoundOfTwo(counter);
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        MutexRequestCountTest.primeView(mutex); // the view now lingers, idle, for a minute
        assertEquals(
                1, counter.count(path, "AddWatch"), () -> counter.names(path).toString());
        assertEquals(1, zk.ensemble().watchesUnder(path).getOrDefault(path, 0));

        List<CompletableFuture<Lease>> queued = queueOtherSessions(path, 3);

        // The third node of other sessions puts the path over the bound of two: the view's watch goes at once,
        // so that an idle client does not hear every create and delete of a crowded path until it enters again.
        await().until(() -> zk.ensemble().watchesUnder(path).getOrDefault(path, 0) == 0);
        for (CompletableFuture<Lease> other : queued) {
            other.get(10, TimeUnit.SECONDS).close();
        }
        // Dropped while it lingered, it still knows why: the path must be found quiet by reads in a row first.
        mutex.acquire();
        mutex.release();
        mutex.acquire();
        mutex.release();
        assertEquals(1, counter.count(path, "AddWatch"), () -> "a crowded view stays dropped: " + counter.names(path));
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aCrowdedVerdictOutlivesTheLinger() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-herd-memory");
        RequestCounter counter = new RequestCounter();
        Duration linger = Duration.ofSeconds(1);
        CuratorFramework client = clientWithViews(counter, 2, linger);
        List<CompletableFuture<Lease>> queued = queueOtherSessions(path, 3);
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        CompletableFuture<Lease> crowded = mutex.acquireAsync();
        await().until(() -> counter.count(path, "GetData") == 1); // its read found the path crowded
        for (CompletableFuture<Lease> other : queued) {
            other.get(10, TimeUnit.SECONDS).close();
        }
        crowded.get(10, TimeUnit.SECONDS).close();
        // The view's last user left. Its linger is over once the timer has run what was due before this.
        Executors.after(linger).get(10, TimeUnit.SECONDS);

        // The path is empty now, but the verdict stays: the view comes back only after reads in a row find the path
        // quiet. A view made anew would count it at the first acquisition, and join at the second.
        mutex.acquire();
        mutex.release();
        mutex.acquire();
        mutex.release();
        assertEquals(0, counter.count(path, "AddWatch"), () -> "a crowded view came back: " + counter.names(path));
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aViewWhoseWatchABusyServerRefusesAddsItAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-add-throttled");
        // A server with request throttling on refuses the view's addWatch (THROTTLEDOP) when busy: for now only.
        ZooKeeperProxy proxy = primeThrottledView(path, Duration.ofMinutes(1), ZooDefs.OpCode.addWatch);

        await().until(() -> zk.ensemble().watchesUnder(path).getOrDefault(path, 0) == 1); // the view's, added again
        zk.closeClients();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    /** A client retrying once, through a proxy that breaks the connection under each of its next {@code adds}. */
    private record AddsBreaking(ZooKeeperProxy proxy, CuratorFramework client) {}

    private static AddsBreaking addsBreaking(int adds) throws IOException, InterruptedException {
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newClientRetryingOnce(proxy);
        for (int i = 0; i < adds; i++) {
            proxy.breakOnNext(ZooDefs.OpCode.addWatch);
        }
        return new AddsBreaking(proxy, client);
    }

    @Test
    void aClientWhoseViewWatchIsLostAtEachTryTakesItsServerForAnOlderOne() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-add-lost");
        // A server before 3.6 answers addWatch at once, ahead of a write still in its pipeline, and breaks the
        // connection: the client takes that answer out of turn for a broken connection, and the add comes back lost.
        // Here every add the client makes breaks its connection, as it would behind a write each time.
        // Curator tries each add once more if the connection is back before its retry: coord hears of 3 in at most 6
        // tries. One more stays set, for an add that must not come.
        AddsBreaking breaking = addsBreaking(6 + 1);
        ZooKeeperProxy proxy = breaking.proxy();
        CuratorFramework client = breaking.client();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        MutexRequestCountTest.primeView(mutex);

        // The third add coord hears was lost marks an older server: no view from then on, nor any further add.
        await().until(() -> !ClientContext.of(client).usesViews());
        long broken = proxy.requestsRefused();
        assertTrue(broken >= 3 && broken <= 6, () -> broken + " adds broke their connection");
        // A while later a probe, sent alone, asks the server itself; this one breaks its connection too.
        for (int i = 0; i < 3; i++) {
            proxy.breakOnNext(ZooDefs.OpCode.multiRead);
        }
        await().until(() -> proxy.requestsRefused() == broken + 1);
        assertFalse(ClientContext.of(client).usesViews(), "the guess stands");
        ReentrantMutex theirs = new ReentrantMutex(zk.newClient(), path);
        Lease held = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> waiting = theirs.acquireAsync();
        await().until(() -> mutex.participants().size() == 2); // read node by node, as from an older server
        assertFalse(waiting.isDone(), "granted while another client holds the lock");
        held.close();
        waiting.get(10, TimeUnit.SECONDS).close();
        zk.ensemble().assertNoWatchesUnder(path);
        assertEquals(broken + 1, proxy.requestsRefused());
        zk.closeClients();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aNewerServerTakenForAnOlderOneFromLostAddsSaysOtherwiseToTheProbeAndViewsComeBack() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-add-lost-newer");
        // A flapping network, on a client whose retries give up, can lose a view's adds just as a server before 3.6
        // would: three of them mark an older server, as above.
        AddsBreaking breaking = addsBreaking(6);
        ZooKeeperProxy proxy = breaking.proxy();
        CuratorFramework client = breaking.client();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        MutexRequestCountTest.primeView(mutex);
        await().until(() -> !ClientContext.of(client).usesViews());

        // The probe sent alone a few seconds later is carried out: the guess is taken back.
        await().atMost(Duration.ofSeconds(30))
                .until(() -> ClientContext.of(client).usesViews());
        assertFalse(ClientContext.of(client).server().hasOlderServer());
        // The unusable view lingered out meanwhile: the path takes a view again, as any path does.
        MutexRequestCountTest.primeView(mutex);
        await().until(() -> zk.ensemble().watchesUnder(path).getOrDefault(path, 0) == 1);
        zk.closeClients();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aViewWhoseWatchRemovalABusyServerRefusesRemovesItAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-drop-throttled");
        // A server with request throttling on refuses the removal of the idle view's watch (THROTTLEDOP), and keeps
        // the watch; the client's connection, and with it the watch, lives on.
        ZooKeeperProxy proxy = primeThrottledView(path, Duration.ofMillis(50), ZooDefs.OpCode.removeWatches);

        zk.ensemble().assertNoWatchesUnder(path); // while the client lives
        zk.closeClients();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aClientsOwnEntryDoesNotCountAgainstTheHerdBound() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-herd-own");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = clientWithHerdBoundOfTwo(counter);
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        MutexRequestCountTest.primeView(mutex);
        List<CompletableFuture<Lease>> queued = queueOtherSessions(path, 2); // exactly the bound
        counter.reset();

        // Our create event arrives before its reply: the node is ours all the same, and the view stays.
        CompletableFuture<Lease> ours = mutex.acquireAsync();
        for (CompletableFuture<Lease> other : queued) {
            other.get(10, TimeUnit.SECONDS).close();
        }
        ours.get(10, TimeUnit.SECONDS).close();
        await().until(() -> counter.count(path, "Delete") == 1);
        // Entered, waited and left on the view: a create and a delete, no read, no watch, no removal.
        assertEquals(2, counter.names(path).size(), () -> counter.names(path).toString());
        assertEquals(1, counter.count(path, "Create"), () -> counter.names(path).toString());
        assertEquals(1, zk.ensemble().watchesUnder(path).getOrDefault(path, 0));
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aClientAloneOnAPathKeepsItsViewUnderABoundOfZero() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-herd-zero");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = clientWithViews(counter, 0, Duration.ofMinutes(1));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        for (int i = 0; i < 12; i++) {
            mutex.acquire();
            mutex.release();
        }
        assertEquals(
                1, counter.count(path, "AddWatch"), () -> counter.names(path).toString());
        client.close();
        zk.assertNoLeaks(path);
    }

    /**
     * Primes a view of {@code path} on a client behind a proxy whose views linger for {@code linger}, with the next
     * request of the kind {@code refused} refused by a busy server (THROTTLEDOP); returns once it was.
     */
    private static ZooKeeperProxy primeThrottledView(String path, Duration linger, int refused) throws Exception {
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(b -> b.connectString(proxy.connectString()));
        ZooKeeperFixture.lingerViews(client, linger);
        proxy.refuseNext(refused, KeeperException.Code.THROTTLEDOP);
        MutexRequestCountTest.primeView(new ReentrantMutex(client, path));
        await().until(() -> proxy.requestsRefused() == 1);
        return proxy;
    }

    /** A client whose views allow two nodes of other sessions, and linger for a minute. */
    private static CuratorFramework clientWithHerdBoundOfTwo(RequestCounter counter) throws InterruptedException {
        return clientWithViews(counter, 2, Duration.ofMinutes(1));
    }

    /** A client whose views allow {@code maxOthers} nodes of other sessions, and linger for {@code linger}. */
    private static CuratorFramework clientWithViews(RequestCounter counter, int maxOthers, Duration linger)
            throws InterruptedException {
        CuratorFramework client = zk.newClient(counter);
        ClientContext context = ClientContext.of(client);
        context.configureViews(context.viewSettings().withMaxOthers(maxOthers).withLinger(linger));
        return client;
    }

    /** {@code sessions} sessions queue on {@code path} one after another: the first holds, the others wait. */
    private static List<CompletableFuture<Lease>> queueOtherSessions(String path, int sessions)
            throws InterruptedException {
        List<CompletableFuture<Lease>> queued = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            ReentrantMutex other = new ReentrantMutex(zk.newClient(), path);
            queued.add(other.acquireAsync());
            int n = i + 1;
            await().until(() -> other.participants().size() == n);
        }
        return queued;
    }

    @Test
    void anOptedInHolderWhoseViewOtherSessionsCrowdOutStillHearsARequest() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-herd-revocation");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = clientWithHerdBoundOfTwo(counter);
        ReentrantMutex mutex = new ReentrantMutex(client, path, "holder");
        MutexRequestCountTest.primeView(mutex);
        Lease held = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        AtomicInteger requests = new AtomicInteger();
        held.onRevocationRequested(requests::incrementAndGet, Runnable::run);
        await().until(() -> counter.count(path, "GetData") >= 1); // the first look for a request, on the view

        // Three waiters of other sessions, over the bound of two: the view goes, and the hold listens with a data
        // watch.
        List<CompletableFuture<Lease>> queued = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            queued.add(new ReentrantMutex(zk.newClient(), path).acquireAsync());
        }
        await().until(() -> counter.count(path, "GetData") >= 2);
        ReentrantMutex asker = new ReentrantMutex(zk.newClient(), path, "asker");
        assertTrue(asker.requestRevocation(asker.participants().get(0)));

        await().until(() -> requests.get() == 1);
        assertTrue(held.isValid());
        held.close();
        for (CompletableFuture<Lease> other : queued) {
            other.get(10, TimeUnit.SECONDS).close();
        }
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aHolderWhoseNodeSomebodyElseDeletesTurnsLost() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-deleted-holder");
        CuratorFramework admin = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path);
        MutexRequestCountTest.primeView(mutex);
        Lease lease = mutex.acquireAsync().get(10, TimeUnit.SECONDS);

        admin.delete().forPath(lease.path());

        assertEquals(LeaseState.LOST, lease.ended().get(10, TimeUnit.SECONDS));
        zk.assertNoLeaks(path);
    }

    @Test
    void aWaiterWhoseNodeSomebodyElseDeletesQueuesAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-deleted-waiter");
        CuratorFramework admin = zk.newClient();
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path);
        MutexRequestCountTest.primeView(waiter);
        holder.acquire();
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        String deleted = holder.participants().get(1).nodeName();

        admin.delete().forPath(path + "/" + deleted);

        await().until(() -> holder.participants().size() == 2
                && !holder.participants().get(1).nodeName().equals(deleted));
        assertFalse(pending.isDone());
        holder.release();
        Lease lease = pending.get(10, TimeUnit.SECONDS);
        assertTrue(lease.isValid());
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aWaiterWhoseViewsWatchTheApplicationRemovesIsStillGranted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-watch-removed");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        CuratorFramework waiterClient = zk.newClient();
        ZooKeeperFixture.lingerViews(waiterClient, Duration.ofMinutes(1)); // keeps the view from priming to waiting
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path);
        MutexRequestCountTest.primeView(waiter);
        holder.acquire();
        CompletableFuture<Lease> pending = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        await("the waiter's view watches").until(() -> zk.watchesByPath().contains(path));

        // What another view of the same server path under another namespace does when it drops its watch.
        waiterClient
                .watchers()
                .removeAll()
                .ofType(WatcherType.PersistentRecursive)
                .forPath(path);
        holder.release();

        Lease lease = pending.get(10, TimeUnit.SECONDS);
        assertTrue(lease.isValid());
        lease.close();
        waiterClient.close();
        zk.assertNoLeaks(path);
    }

    /** Every permission for the creator's authenticated ids, none for anybody else. */
    static ACLProvider creatorOnly() {
        return Acls.everywhere(List.of(new ACL(ZooDefs.Perms.ALL, new Id("auth", ""))));
    }
}
