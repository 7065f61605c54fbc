package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.internal.ClientContext;
import io.coord.testkit.ZooKeeperFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The view when a request of its own is left in doubt by a lost connection, after the client's retries gave up: a
 * lock create the server applied, a removal of the view's watch, a check that nodes are readable. Each waiter must
 * end granted or told why not, never waiting for ever.
 */
@Timeout(60)
class ViewFaultTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void aCreateAppliedButNeverAnsweredLeavesNoNodeOfOursToWaitFor() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-lost-create");
        CuratorFramework admin = zk.newClient();
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework client = faults.client(zk);
        ZooKeeperFixture.lingerViews(client, Duration.ofMinutes(1));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        MutexRequestCountTest.primeView(mutex);

        // The attempt queues again under a new id, behind the first node: ours, but a name it never learnt.
        faults.loseNextLockCreateReply();
        Lease lease = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        // The stray is left out of the decision and deleted on the side: it goes, though maybe after the grant.
        await().alias("the unanswered create's node was deleted")
                .until(() -> admin.getChildren().forPath(path).size() == 1);
        lease.close();
        await().until(() -> admin.getChildren().forPath(path).isEmpty());
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aWaiterThatJoinsWhileTheViewsWatchRemovalIsInDoubtIsGranted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-drop-in-doubt");
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework client = faults.client(zk);
        ZooKeeperFixture.lingerViews(client, Duration.ofMillis(200));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        faults.holdNextWatchRemoval();
        MutexRequestCountTest.primeView(mutex);
        await().until(faults::removalHeld); // the linger ran out, and the view is dropping its watch

        // The removal is in doubt: the client will set the watch again on reconnecting, for a watcher the view no
        // longer hears. The waiter must not rely on it.
        CompletableFuture<Lease> pending = mutex.acquireAsync();
        faults.answerHeldRemovalWithLostConnection();
        pending.get(10, TimeUnit.SECONDS).close();
        await().until(() -> zk.ensemble().watchesUnder(path).isEmpty()); // its linger over, the view left
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aWatchRemovalTheHandleRefusesToSendIsSentAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-drop-refused");
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework client = faults.client(zk);
        ZooKeeperFixture.lingerViews(client, Duration.ofMillis(200));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        faults.refuseNextWatchRemoval();
        MutexRequestCountTest.primeView(mutex);

        // The view lingered out and its removal never left the client: the watch is still on the server, and
        // would stay there for the whole session, sending this client every change of the path.
        await().until(() -> faults.refusedRemovals() == 1);
        await().until(() -> zk.ensemble().watchesUnder(path).isEmpty());
        assertTrue(mutex.acquire(Duration.ofSeconds(10)), "the path is usable after the view left");
        mutex.release();
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aWatchAddTheEndedSessionNeverAnsweredIsDroppedOnTheNewSession() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-add-across-sessions");
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework client = faults.client(zk, new RetryNTimes(3, 100));
        leaveAViewWithItsAddUnanswered(client, path, faults);

        // The session ends with the add unanswered; Curator then sends it again on the new session's handle, where
        // it lands. The view, unused by now, must drop that watch when its linger ends.
        int addedBefore = faults.watchesAdded();
        long ended = client.getZookeeperClient().getZooKeeper().getSessionId();
        zk.expireSession(client);
        // Connected on the new session: right after the expiry the client may still report the old connection.
        await().until(() -> client.getZookeeperClient().isConnected()
                && client.getZookeeperClient().getZooKeeper().getSessionId() != ended);
        faults.answerHeldAddWithLostConnection();
        await().until(() -> faults.watchesAdded() > addedBefore);

        await().atMost(Duration.ofSeconds(10))
                .until(() -> zk.ensemble().watchesUnder(path).isEmpty());
        zk.assertNoLeaks(path);
    }

    @Test
    void aWatchRemovalInDoubtOnTheNewSessionIsSentAgainWhenThatSessionIsHeardOfLate() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-drop-across-sessions");
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework client = faults.client(zk, new RetryNTimes(3, 100));
        leaveAViewWithItsAddUnanswered(client, path, faults);

        // The client's listeners hear of the session's end, and so of the next session, only once the view has
        // done all of this on the new handle: its add, sent again there, lands; unused, it lingers out and drops
        // that watch; the drop is lost with the connection, which the client then sets the watch again on.
        CountDownLatch endHeard = new CountDownLatch(1);
        CountDownLatch goOn = new CountDownLatch(1);
        List<ClientContext.SessionEvent> heard = new CopyOnWriteArrayList<>();
        ClientContext.of(client).addSessionListener(event -> {
            heard.add(event);
            if (event == ClientContext.SessionEvent.SESSION_ENDED && endHeard.getCount() > 0) {
                endHeard.countDown();
                awaitQuietly(goOn);
            }
        });
        faults.holdNextWatchRemoval();
        zk.expireSession(client);
        assertTrue(endHeard.await(10, TimeUnit.SECONDS));
        await().until(() -> client.getZookeeperClient().isConnected());
        faults.answerHeldAddWithLostConnection();
        await().until(faults::removalHeld);
        faults.answerHeldRemovalWithLostConnection();
        goOn.countDown();

        // Once back on the same session, the client has set the watch again: the view must have removed it.
        await().until(() -> heard.contains(ClientContext.SessionEvent.RECONNECTED));
        await().atMost(Duration.ofSeconds(10))
                .until(() -> zk.ensemble().watchesUnder(path).isEmpty());
        zk.assertNoLeaks(path);
    }

    @Test
    void aViewWhoseWatchAddIsAnsweredOnTheOldHandleAfterTheNextSessionBeganWatchesOnTheNewOne() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-late-add");
        CuratorFramework client = zk.newClient();
        ZooKeeperFixture.lingerViews(client, Duration.ofMinutes(1)); // the view outlives every use below
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        mutex.acquire(); // counts the path: the next acquisition makes a view
        mutex.release();

        // The handle's event thread is busy while the new view's add, its read and the lock's create are answered;
        // then a new handle, and session, replaces it (what a changed connection string does).
        CountDownLatch busy = new CountDownLatch(1);
        CountDownLatch mayGoOn = new CountDownLatch(1);
        AtomicReference<Thread> oldEventThread = new AtomicReference<>();
        String blocker = path + "-blocker";
        client.checkExists()
                .usingWatcher((Watcher) event -> {
                    oldEventThread.set(Thread.currentThread());
                    busy.countDown();
                    awaitQuietly(mayGoOn);
                })
                .forPath(blocker);
        CuratorFramework other = zk.newClient();
        other.create().forPath(blocker);
        assertTrue(busy.await(10, TimeUnit.SECONDS));
        CompletableFuture<Lease> acquired = mutex.acquireAsync();
        await().until(() -> !zk.ensemble().watchesUnder(path).isEmpty()
                && other.getChildren().forPath(path).size() == 1);
        List<ClientContext.SessionEvent> heard = new CopyOnWriteArrayList<>();
        ClientContext.of(client).addSessionListener(heard::add);
        client.getZookeeperClient().reset();
        await().until(() -> heard.contains(ClientContext.SessionEvent.NEW_SESSION));
        mayGoOn.countDown(); // the old handle's answers now reach the view

        Lease lease = acquired.get(20, TimeUnit.SECONDS);
        ReentrantMutex theirs = new ReentrantMutex(other, path);
        CompletableFuture<Lease> waiting = theirs.acquireAsync();
        await().until(() -> mutex.participants().size() == 2);
        lease.close();
        waiting.get(10, TimeUnit.SECONDS).close();

        // The old handle's close, the last it delivers, speaks of a session that is over: the view goes on serving
        // the one that followed.
        await().until(() -> !oldEventThread.get().isAlive());
        mutex.acquireAsync().get(10, TimeUnit.SECONDS).close();
        other.delete().forPath(blocker);
        client.close(); // its view lingers on
        zk.assertNoLeaks(path);
    }

    @Test
    void aHolderWhoseNodeIsDeletedWhileTheViewsWatchIsOffLosesItsLease() throws Exception {
        assertAHolderLosesANodeDeletedWhileTheViewsWatchIsOff(true);
    }

    @Test
    void aHoldGrantedWithoutTheViewWhoseNodeIsDeletedWhileTheViewsWatchIsOffIsLostToo() throws Exception {
        assertAHolderLosesANodeDeletedWhileTheViewsWatchIsOff(false);
    }

    /**
     * A client holds, and waits behind its hold in the view; while its event thread is busy, another user of its
     * connection removes the view's watch and the holder's node is deleted: no event can tell of it, only the read
     * behind the watch's new add. {@code primed}: the hold is granted through the view, else by a predecessor read
     * (the client's first acquisition on the path), with nothing of the view's listening to it.
     */
    private static void assertAHolderLosesANodeDeletedWhileTheViewsWatchIsOff(boolean primed) throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-unheard-delete");
        CuratorFramework client = zk.newClient();
        CuratorFramework admin = zk.newClient();
        ZooKeeperFixture.lingerViews(client, Duration.ofMinutes(1));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        if (primed) {
            MutexRequestCountTest.primeView(mutex);
        }
        Lease held = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> pending = new ReentrantMutex(client, path).acquireAsync();
        await().until(() -> mutex.participants().size() == 2);
        await("the waiter's view watches").until(() -> zk.watchesByPath().contains(path));

        CountDownLatch busy = new CountDownLatch(1);
        CountDownLatch mayGoOn = new CountDownLatch(1);
        String blocker = path + "-blocker";
        client.checkExists()
                .usingWatcher((Watcher) event -> {
                    busy.countDown();
                    awaitQuietly(mayGoOn);
                })
                .forPath(blocker);
        admin.create().forPath(blocker);
        assertTrue(busy.await(10, TimeUnit.SECONDS));
        client.watchers()
                .removeAll()
                .ofType(Watcher.WatcherType.PersistentRecursive)
                .forPath(path);
        admin.delete().forPath(held.path());
        mayGoOn.countDown();

        await().atMost(Duration.ofSeconds(10)).until(() -> held.state() == LeaseState.LOST);
        Lease next = pending.get(10, TimeUnit.SECONDS);
        assertTrue(next.isValid());
        next.close();
        admin.delete().forPath(blocker);
        client.close(); // its view lingers on
        zk.assertNoLeaks(path);
    }

    /** A view of {@code path} on {@code client} that nothing uses any more, whose watch add is still unanswered. */
    private static void leaveAViewWithItsAddUnanswered(CuratorFramework client, String path, FaultyHandle faults)
            throws Exception {
        ZooKeeperFixture.lingerViews(client, Duration.ofMillis(200));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        mutex.acquire(); // counts the path: the next acquisition joins the view
        mutex.release();
        faults.holdNextWatchAdd();
        CompletableFuture<Lease> pending = mutex.acquireAsync(); // waits for the view, whose add is unanswered
        await().until(faults::addHeld);
        pending.cancel(false); // the view is left with no member
        await().until(() -> zk.ensemble().watchesUnder(path).isEmpty()
                && mutex.participants().isEmpty());
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void aReadabilityCheckLostWithTheConnectionIsAskedAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-check-lost");
        CuratorFramework admin = zk.newClient();
        admin.create().creatingParentsIfNeeded().forPath(path); // open: anybody may list the queue
        CuratorFramework alice =
                zk.newCustomClient(b -> b.authorization("digest", "alice:secret".getBytes(StandardCharsets.UTF_8))
                        .aclProvider(MutexViewTest.creatorOnly()));
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework bobsClient = faults.client(zk);
        ReentrantMutex bob = countingThePath(bobsClient, path);
        Lease alicesLease = new ReentrantMutex(alice, path).acquireAsync().get(10, TimeUnit.SECONDS);

        // Bob waits on a node whose events he may never get; the check that would tell him so is lost.
        faults.loseNextMulti();
        CompletableFuture<Lease> bobs = bob.acquireAsync();
        await().until(faults::multiLost);

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
    void aReadabilityCheckTheHandleRefusesIsNotAskedAgainWithoutEnd() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-check-refused");
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework bobsClient = faults.client(zk);
        ReentrantMutex bob = countingThePath(bobsClient, path);
        Lease alicesLease =
                new ReentrantMutex(zk.newClient(), path).acquireAsync().get(10, TimeUnit.SECONDS);

        // The check that bob may read alice's node cannot even be sent: bob stops relying on the view, once.
        faults.refuseMultis();
        CompletableFuture<Lease> bobs = bob.acquireAsync();
        await().until(() -> faults.refusedMultis() > 0);
        alicesLease.close();
        bobs.get(10, TimeUnit.SECONDS).close();
        assertEquals(1, faults.refusedMultis());
        bobsClient.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aReadabilityCheckOfNodesHoldingLargeIdsKeepsTheConnection() throws Exception {
        String path = ZooKeeperFixture.uniquePath("view-check-large");
        FaultyHandle faults = new FaultyHandle();
        CuratorFramework bobsClient = faults.client(zk);
        List<ConnectionState> bobsStates = new CopyOnWriteArrayList<>();
        bobsClient.getConnectionStateListenable().addListener((c, state) -> bobsStates.add(state));
        ReentrantMutex bob = countingThePath(bobsClient, path);
        // A holder and 16 waiters of another session whose ids, read together, would not fit one reply.
        CuratorFramework others = zk.newClient();
        String large = "z".repeat(64 * 1024 - 8);
        List<CompletableFuture<Lease>> theirs = new ArrayList<>();
        for (int i = 0; i < 17; i++) {
            theirs.add(new ReentrantMutex(others, path, large + i).acquireAsync());
        }
        await().until(() -> others.getChildren().forPath(path).size() == 17);

        // Bob's view is primed now, listing 17 nodes he has not seen created: he checks that he may read them.
        CompletableFuture<Lease> bobs = bob.acquireAsync();
        await().until(() -> faults.answeredMultis() > 0); // each send broke the connection before
        for (CompletableFuture<Lease> lease : theirs) {
            lease.get(10, TimeUnit.SECONDS).close();
        }
        bobs.get(10, TimeUnit.SECONDS).close();

        assertEquals(
                List.of(),
                bobsStates.stream()
                        .filter(state -> state != ConnectionState.CONNECTED)
                        .toList(),
                "bob's connection never dropped");
        bobsClient.close();
        zk.assertNoLeaks(path);
    }

    /** A mutex whose client has taken it once: its next acquisition reads a view, which lists the nodes of others. */
    private static ReentrantMutex countingThePath(CuratorFramework client, String path) throws InterruptedException {
        ZooKeeperFixture.lingerViews(client, Duration.ofMinutes(1));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        mutex.acquire();
        mutex.release();
        return mutex;
    }
}
