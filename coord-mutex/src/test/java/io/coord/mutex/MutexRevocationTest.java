package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.testkit.Background;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperFixture.Session;
import io.coord.testkit.ZooKeeperProxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.AuthInfo;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** A waiter can ask the mutex's holder to let go, or evict it; the holder hears, or turns LOST. */
@InBothEngineModes
@Timeout(90)
class MutexRevocationTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void holderThatOptedInHearsTheRequestAndLetsTheWaiterIn() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-cooperative");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path, "waiter");
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        AtomicInteger requests = new AtomicInteger();
        held.onRevocationRequested(
                () -> {
                    requests.incrementAndGet();
                    held.close();
                },
                Runnable::run);
        CompletableFuture<Lease> next = waiter.acquireAsync();
        await().until(() -> waiter.participants().size() == 2);
        Participant first = waiter.participants().get(0);
        assertEquals("holder", first.id());

        assertTrue(waiter.requestRevocation(first));

        Lease granted = next.get(10, TimeUnit.SECONDS);
        assertEquals(1, requests.get());
        assertEquals(LeaseState.RELEASED, held.ended().get(5, TimeUnit.SECONDS));
        assertTrue(granted.fencingToken() > held.fencingToken());
        assertFalse(waiter.requestRevocation(first), "a released holder is not asked again");
        granted.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void requestIsWrittenAsCuratorWritesItAndListedInPlaceOfTheId() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-marker");
        CuratorFramework reader = zk.newClient();
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        holder.acquire();
        Participant participant = holder.participants().get(0);

        assertTrue(new ReentrantMutex(reader, path).requestRevocation(participant));

        byte[] data = reader.getData().forPath(path + "/" + participant.nodeName());
        assertEquals("__REVOKE__", new String(data, StandardCharsets.US_ASCII));
        assertEquals(List.of("__REVOKE__"), ids(holder.participants()));
        assertTrue(holder.isHeldByCurrentThread(), "a holder that did not opt in keeps the lock");
        holder.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void requestMadeBeforeOptingInIsHeardAtOnceAndEachRequestOnce() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-early");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        ReentrantMutex asker = new ReentrantMutex(zk.newClient(), path, "asker");
        holder.acquire();
        assertTrue(asker.requestRevocation(asker.participants().get(0)));

        AtomicInteger heard = new AtomicInteger();
        holder.lease().onRevocationRequested(heard::incrementAndGet, Runnable::run);
        await().until(() -> heard.get() == 1);

        AtomicInteger later = new AtomicInteger();
        holder.lease().onRevocationRequested(later::incrementAndGet, Runnable::run);
        await().until(() -> later.get() == 1);
        assertEquals(1, heard.get(), "a second listener does not replay the request to the first");

        assertTrue(asker.requestRevocation(asker.participants().get(0)));
        await().until(() -> heard.get() == 2);
        await().until(() -> later.get() == 2);
        holder.release();
        assertEquals(2, heard.get());
        zk.assertNoLeaks(path);
    }

    @Test
    void waiterAndFormerHolderAreNotRevoked() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-not-holding");
        CuratorFramework reader = zk.newClient();
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path, "waiter");
        holder.acquire();
        CompletableFuture<Lease> queued = waiter.acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        Participant former = holder.participants().get(0);
        Participant waiting = holder.participants().get(1);

        assertFalse(holder.requestRevocation(waiting));
        assertFalse(holder.forceRevocation(waiting));
        assertEquals(List.of("holder", "waiter"), ids(holder.participants()), "nothing was written");
        assertFalse(queued.isDone());

        holder.release();
        Lease lease = queued.get(10, TimeUnit.SECONDS);
        assertFalse(waiter.requestRevocation(former));
        assertFalse(waiter.forceRevocation(former));
        assertEquals("waiter", new String(reader.getData().forPath(lease.path()), StandardCharsets.UTF_8));
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void forcedRevocationEndsAHolderThatOptedInAndGrantsTheNextWithALargerToken() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-forced");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path, "waiter");
        holder.acquire();
        Lease evicted = holder.lease();
        evicted.onRevocationRequested(() -> {}, Runnable::run); // a hold that opted in notices in either mode
        CompletableFuture<Lease> next = waiter.acquireAsync();
        await().until(() -> waiter.participants().size() == 2);

        assertTrue(waiter.forceRevocation(waiter.participants().get(0)));

        assertEquals(LeaseState.LOST, evicted.ended().get(10, TimeUnit.SECONDS));
        Lease granted = next.get(10, TimeUnit.SECONDS);
        assertTrue(granted.fencingToken() > evicted.fencingToken());
        assertFalse(holder.isHeldByCurrentThread());
        holder.release(); // owed by the ended hold: a quiet no-op
        granted.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void forcedRevocationReachesAHoldOnTheViewWithoutOptingIn() throws Exception {
        assumeTrue(mode == EngineMode.VIEW, "without a view, only a hold that opted in notices at once");
        String path = ZooKeeperFixture.uniquePath("revoke-forced-view");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path, "waiter");
        MutexRequestCountTest.primeView(holder); // the hold below is granted on the view, which hears the delete
        holder.acquire();
        Lease evicted = holder.lease();
        CompletableFuture<Lease> next = waiter.acquireAsync();
        await().until(() -> waiter.participants().size() == 2);

        assertTrue(waiter.forceRevocation(waiter.participants().get(0)));

        assertEquals(LeaseState.LOST, evicted.ended().get(10, TimeUnit.SECONDS));
        assertEquals(0, holder.holdCount());
        Lease granted = next.get(10, TimeUnit.SECONDS);
        assertTrue(granted.fencingToken() > evicted.fencingToken());
        holder.release();
        granted.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void forcedRevocationThroughTheHoldersOwnClientEndsTheHoldWhenItReturns() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-forced-own-client");
        CuratorFramework client = zk.newClient(); // its first acquisition on the path: granted without a view
        ReentrantMutex holder = new ReentrantMutex(client, path, "holder");
        holder.acquire();
        Lease evicted = holder.lease();

        assertTrue(new ReentrantMutex(client, path)
                .forceRevocation(holder.participants().get(0)));

        assertEquals(LeaseState.LOST, evicted.state());
        assertEquals(0, holder.holdCount());
        holder.release(); // owed to the ended hold: quiet
        assertEquals(LeaseState.LOST, evicted.ended().get(10, TimeUnit.SECONDS));
        zk.assertNoLeaks(path);
    }

    @Test
    void forcedRevocationEndsAHoldWhoseNodeAWaiterOfTheSameClientWatched() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-forced-same-client");
        CuratorFramework client = zk.newClient(); // its first acquisitions on the path: granted without a view
        ReentrantMutex holder = new ReentrantMutex(client, path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(client, path, "waiter");
        Lease evicted = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> next = waiter.acquireAsync();
        // What the evicted hold says at the moment the waiter's lease is handed out, on the thread that hands it out.
        CompletableFuture<LeaseState> evictedAtGrant = next.thenApply(granted -> evicted.state());
        await().until(() -> waiter.participants().size() == 2);

        assertTrue(new ReentrantMutex(zk.newClient(), path)
                .forceRevocation(waiter.participants().get(0)));

        // The waiter hears the deletion and is granted: the holder, in the same process, must not hold on, not
        // even for the moment between the two.
        Lease granted = next.get(10, TimeUnit.SECONDS);
        assertEquals(LeaseState.LOST, evictedAtGrant.get(10, TimeUnit.SECONDS));
        assertEquals(LeaseState.LOST, evicted.ended().get(10, TimeUnit.SECONDS));
        granted.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void optingInOnAnEndedLeaseDoesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-ended");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        ReentrantMutex mutex = new ReentrantMutex(client, path, "holder");
        Lease released = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        released.close();
        Lease lost = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        zk.expireSession(client);
        assertEquals(LeaseState.LOST, lost.ended().get(10, TimeUnit.SECONDS));
        counter.reset();

        AtomicInteger ran = new AtomicInteger();
        released.onRevocationRequested(ran::incrementAndGet, Runnable::run);
        lost.onRevocationRequested(ran::incrementAndGet, Runnable::run);

        // Answers come in the order requests were sent: once this one is back, so is anything sent before it.
        CompletableFuture<Void> after = new CompletableFuture<>();
        client.checkExists().inBackground((c, e) -> after.complete(null)).forPath("/");
        after.get(10, TimeUnit.SECONDS);
        // The lost lease's node may still be deleted on the new session: that is its cleanup, not a revocation's.
        List<String> sent = counter.names(path).stream()
                .filter(name -> !name.startsWith("Delete"))
                .toList();
        assertEquals(List.of(), sent, "nothing sent for an ended lease");
        assertEquals(0, ran.get());
        zk.assertNoLeaks(path);
    }

    @Test
    void closingTheAskersClientWhileItsRequestWaitsForTheConnectionFailsWithCoordinationException() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-closed");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path, "holder");
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        Participant first = holder.participants().get(0);
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework askerClient = zk.newCustomClient(
                b -> b.connectString(proxy.connectString()).retryPolicy(new RetryNTimes(1_000, 100)));
        ReentrantMutex asker = new ReentrantMutex(askerClient, path, "asker");
        proxy.refuseConnections(true);
        proxy.cutConnections();

        // Waiting inside Curator's retries for a connection, past coord's own check that the client is open.
        CompletableFuture<Boolean> asked = Background.callUntilItSleeps(() -> asker.requestRevocation(first));
        askerClient.close();

        ExecutionException failed = assertThrows(ExecutionException.class, () -> asked.get(30, TimeUnit.SECONDS));
        assertTrue(
                failed.getCause() instanceof CoordinationException,
                failed.getCause().toString());
        assertEquals(List.of("holder"), ids(holder.participants()), "nothing was written");
        held.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aRequestWrittenWhileTheHoldersConnectionIsDownIsHeardOnceItIsBackOnTheSameSession() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-while-down");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework holderClient = zk.newCustomClient(b -> b.connectString(proxy.connectString())
                .sessionTimeoutMs((int) ZooKeeperFixture.OUTAGE_PROOF_SESSION.toMillis()));
        ZooKeeperFixture.lingerViews(holderClient, Duration.ofMinutes(1));
        ReentrantMutex holder = new ReentrantMutex(holderClient, path, "holder");
        holder.acquireAsync().get(10, TimeUnit.SECONDS).close(); // with views on, the next hold is on a primed view
        Lease held = holder.acquireAsync().get(10, TimeUnit.SECONDS);
        AtomicInteger requests = new AtomicInteger();
        held.onRevocationRequested(requests::incrementAndGet, Runnable::run);
        ReentrantMutex asker = new ReentrantMutex(zk.newClient(), path, "asker");
        Participant first = asker.participants().get(0);
        Session session = Session.of(holderClient);

        proxy.refuseConnections(true);
        proxy.cutConnections();
        await().until(() -> held.state() == LeaseState.SUSPECT);
        assertTrue(asker.requestRevocation(first));
        proxy.refuseConnections(false);

        // Heard once the view reads again, which may come before the reads that confirm the hold.
        await().until(() -> requests.get() == 1);
        await().until(() -> held.state() == LeaseState.HELD);
        assertEquals(1, requests.get(), "each request is heard once");
        assertEquals(session.id(), Session.of(holderClient).id(), "the same session throughout");
        held.close();
        holderClient.close(); // its view would linger for a minute
        zk.assertNoLeaks(path);
    }

    @Test
    void badInputIsRefusedBeforeAnythingIsWritten() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-bad-input");
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), path, "holder");
        mutex.acquire();

        NullPointerException noHolder = assertThrows(NullPointerException.class, () -> mutex.requestRevocation(null));
        assertEquals("holder must not be null", noHolder.getMessage());
        assertThrows(NullPointerException.class, () -> mutex.forceRevocation(null));
        Participant foreign = new Participant("x", "_c_0-R-0000000001", 1);
        IllegalArgumentException wrongKind =
                assertThrows(IllegalArgumentException.class, () -> mutex.requestRevocation(foreign));
        assertTrue(wrongKind.getMessage().contains("_c_0-R-0000000001"), wrongKind.getMessage());
        assertTrue(wrongKind.getMessage().contains("no lock- node under " + path), wrongKind.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> mutex.forceRevocation(new Participant("x", "../lock-0000000001", 1)));
        assertThrows(IllegalArgumentException.class, () -> mutex.forceRevocation(new Participant("x", "lock-12", 12)));
        NullPointerException noAction = assertThrows(
                NullPointerException.class, () -> mutex.lease().onRevocationRequested(null, Runnable::run));
        assertEquals("action must not be null", noAction.getMessage());

        assertEquals(List.of("holder"), ids(mutex.participants()));
        assertTrue(mutex.isHeldByCurrentThread());
        mutex.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void revokingWithoutPermissionFailsNamingTheNode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-noauth");
        // The holder's nodes, and the lock path it creates, are writable by the holder only and readable by all.
        Id anyone = new Id("world", "anyone");
        // Lists that answer contains(null), which ZooKeeper asks of every ACL list.
        List<ACL> open = Arrays.asList(new ACL(ZooDefs.Perms.ALL, anyone));
        List<ACL> ownerWritesAllRead =
                Arrays.asList(new ACL(ZooDefs.Perms.ALL, new Id("auth", "")), new ACL(ZooDefs.Perms.READ, anyone));
        CuratorFramework holderClient = zk.newCustomClient(b -> b.authorization(
                        List.of(new AuthInfo("digest", "owner:secret".getBytes(StandardCharsets.UTF_8))))
                .aclProvider(new ACLProvider() {
                    @Override
                    public List<ACL> getDefaultAcl() {
                        return open;
                    }

                    @Override
                    public List<ACL> getAclForPath(String p) {
                        return p.startsWith(path) ? ownerWritesAllRead : open;
                    }
                }));
        ReentrantMutex holder = new ReentrantMutex(holderClient, path, "holder");
        ReentrantMutex stranger = new ReentrantMutex(zk.newClient(), path, "stranger");
        holder.acquire();
        Participant participant = stranger.participants().get(0);

        CoordinationException asked =
                assertThrows(CoordinationException.class, () -> stranger.requestRevocation(participant));
        assertTrue(asked.getMessage().contains(path + "/" + participant.nodeName()), asked.getMessage());
        assertTrue(asked.getMessage().contains("NOAUTH"), asked.getMessage());
        CoordinationException forced =
                assertThrows(CoordinationException.class, () -> stranger.forceRevocation(participant));
        assertTrue(forced.getMessage().contains(path), forced.getMessage());
        assertTrue(forced.getMessage().contains("NOAUTH"), forced.getMessage());

        assertEquals(List.of("holder"), ids(stranger.participants()));
        holder.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void aWaiterBehindANodeThisClientIsStillDeletingIsNotRevoked() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-behind-leaving");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        ReentrantMutex mine =
                new ReentrantMutex(zk.newCustomClient(b -> b.connectString(proxy.connectString())), path, "mine");
        ReentrantMutex theirs = new ReentrantMutex(zk.newClient(), path, "theirs");
        Lease held = mine.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> waiting = theirs.acquireAsync();
        await().until(() -> theirs.participants().size() == 2);
        Participant waiter = theirs.participants().get(1);
        // A busy server refuses the release's delete (THROTTLEDOP) a dozen times, a pause apart: this client's node is
        // on its way out, and passed by its own contenders, but the other client still waits behind it.
        int refusals = 12;
        for (int i = 0; i < refusals; i++) {
            proxy.refuseNext(ZooDefs.OpCode.delete, KeeperException.Code.THROTTLEDOP);
        }
        held.close();
        await().until(() -> proxy.requestsRefused() >= 1);

        assertFalse(mine.forceRevocation(waiter), "a waiter was revoked");
        assertTrue(proxy.requestsRefused() < refusals, "decided after the release's delete landed");
        assertEquals(List.of("mine", "theirs"), ids(theirs.participants()));
        Lease granted = waiting.get(20, TimeUnit.SECONDS); // once the delete lands
        assertEquals(LeaseState.HELD, granted.state());
        assertEquals(List.of("theirs"), ids(mine.participants()));
        granted.close();
        zk.closeClients();
        proxy.close();
        zk.assertNoLeaks(path);
    }

    private static List<String> ids(List<Participant> participants) {
        return participants.stream().map(Participant::id).toList();
    }
}
