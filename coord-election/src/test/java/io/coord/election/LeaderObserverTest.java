package io.coord.election;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.coord.core.Participant;
import io.coord.core.internal.ClientContext;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** Following the leader from outside the election, with one watch. */
@InBothEngineModes
@Timeout(60)
class LeaderObserverTest {
    private static final String NOBODY = "nobody";

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void observerSeesEveryChangeOfLatchLeaderIncludingNobody() throws Exception {
        String path = ZooKeeperFixture.uniquePath("latch"); // does not exist yet
        LeaderObserver observer = new LeaderObserver(zk.newClient(), path);
        List<String> seen = new CopyOnWriteArrayList<>();
        observer.addListener(recorder(seen), Runnable::run);
        observer.start();
        assertTrue(observer.leader().isEmpty());

        CuratorFramework client = zk.newClient();
        LeaderLatch a = new LeaderLatch(client, path, "a");
        LeaderLatch b = new LeaderLatch(client, path, "b");
        a.start();
        await().until(() -> seen.equals(List.of("a")));
        assertEquals("a", observer.leader().orElseThrow().id());
        b.start();
        await().until(() -> a.participants().size() == 2);

        a.close();
        await().until(() -> seen.equals(List.of("a", "b")));
        assertEquals(b.participants().get(0), observer.leader().orElseThrow());
        b.close();
        await().until(() -> seen.equals(List.of("a", "b", NOBODY)));
        assertTrue(observer.leader().isEmpty());

        LeaderLatch c = new LeaderLatch(client, path, "c");
        c.start();
        await().until(() -> seen.equals(List.of("a", "b", NOBODY, "c")));
        c.close();
        await().until(() -> seen.size() == 5);
        observer.close();

        // Closed: later changes go unheard, and the server's watch entry goes with the first of them.
        LeaderLatch d = new LeaderLatch(client, path, "d");
        d.start();
        assertTrue(d.await(Duration.ofSeconds(10)));
        d.close();
        zk.assertNoLeaks(path);
        assertEquals(List.of("a", "b", NOBODY, "c", NOBODY), seen);
    }

    @Test
    void anObserverWhoseReadIsThrottledReadsAgainAndReportsTheNewLeader() throws Exception {
        String path = ZooKeeperFixture.uniquePath("throttled-observer");
        CuratorFramework client = zk.newClient();
        LeaderLatch a = new LeaderLatch(client, path, "a");
        LeaderLatch b = new LeaderLatch(client, path, "b");
        a.start();
        assertTrue(a.await(Duration.ofSeconds(10)));
        b.start();
        await().until(() -> a.participants().size() == 2);
        Proxied proxied = observeThroughProxy(path, proxy -> {});
        await().until(() -> proxied.seen().equals(List.of("a")));

        // The read that follows the change (of the children, or of the new leader's id) is refused, as a server with
        // request throttling on refuses a request when it is busy.
        proxied.proxy().failNextReply(KeeperException.Code.THROTTLEDOP);
        a.close();
        await().until(() -> proxied.seen().equals(List.of("a", "b")));
        proxied.close();
        b.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void anObserverWhoseWatchForAMissingPathIsThrottledWatchesAgainAndReportsTheFirstLeader() throws Exception {
        assumeTrue(mode == EngineMode.WATCH, "a view watches a missing path with its persistent watch");
        String path = ZooKeeperFixture.uniquePath("throttled-missing"); // does not exist yet
        // Without a view, the observer watches for the path's creation with exists: a server with request
        // throttling on refuses it when busy, and sets no watch.
        Proxied proxied = observeThroughProxy(
                path, proxy -> proxy.refuseNext(ZooDefs.OpCode.exists, KeeperException.Code.THROTTLEDOP));
        await().until(() -> proxied.proxy().requestsRefused() == 1); // the path was still missing

        LeaderLatch a = new LeaderLatch(zk.newClient(), path, "a");
        a.start();
        await().until(() -> proxied.seen().equals(List.of("a")));
        proxied.close();
        a.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void anObserverWhoseDropOfItsCreationWatchABusyServerRefusesDropsItAgain() throws Exception {
        assumeTrue(mode == EngineMode.WATCH, "a view watches a missing path with its persistent watch");
        String path = ZooKeeperFixture.uniquePath("throttled-creation-drop");
        LeaderLatch a = new LeaderLatch(zk.newClient(), path, "a");
        a.start();
        assertTrue(a.await(Duration.ofSeconds(10)));
        await().until(() -> zk.watchCount() == 1); // the leader's own
        // The observer's first read finds the path missing (refused with NONODE), so it sets an exists watch for the
        // path's creation, which finds the path there: the watch is dropped, and a busy server refuses that.
        Proxied proxied = observeThroughProxy(path, proxy -> {
            proxy.refuseNext(ZooDefs.OpCode.getChildren2, KeeperException.Code.NONODE);
            proxy.refuseNext(ZooDefs.OpCode.removeWatches, KeeperException.Code.THROTTLEDOP);
        });
        await().until(() -> proxied.seen().equals(List.of("a")));
        await().until(() -> proxied.proxy().requestsRefused() == 2);

        // The observer's children watch and nothing else, while it lives.
        await().untilAsserted(() -> assertEquals(2, zk.watchCount(), zk::watchesByPath));
        proxied.close();
        a.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void anObserverWhoseWatchRemovalABusyServerRefusesRemovesItAgain() throws Exception {
        assumeTrue(mode == EngineMode.WATCH, "a view's watch is dropped by the view, which has its own test");
        String path = ZooKeeperFixture.uniquePath("throttled-removal");
        LeaderLatch a = new LeaderLatch(zk.newClient(), path, "a");
        a.start();
        assertTrue(a.await(Duration.ofSeconds(10)));
        Proxied proxied = observeThroughProxy(path, proxy -> {});
        await().until(() -> proxied.seen().equals(List.of("a")));

        // The last observer to leave removes the children watch on the election; a server with request throttling on
        // refuses that (THROTTLEDOP) when busy, and keeps the watch on a connection that goes on.
        proxied.proxy().refuseNext(ZooDefs.OpCode.removeWatches, KeeperException.Code.THROTTLEDOP);
        proxied.observer().close();
        await().until(() -> proxied.proxy().requestsRefused() == 1);
        await().until(() -> zk.ensemble().watchesUnder(path).getOrDefault(path, 0) == 0); // while the client lives
        a.close();
        proxied.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void observerFollowsSelectorsAndStopsNotifyingWhenClosed() throws Exception {
        String path = ZooKeeperFixture.uniquePath("selector");
        CuratorFramework client = zk.newClient();
        LeaderSelector first = new LeaderSelector(client, path, "first", LeaderSelectorTest::leadUntilInterrupted);
        LeaderSelector second = new LeaderSelector(client, path, "second", LeaderSelectorTest::leadUntilInterrupted);
        first.start();
        await().until(first::hasLeadership);
        second.start();
        LeaderObserver observer = new LeaderObserver(zk.newClient(), path);
        List<String> seen = new CopyOnWriteArrayList<>();
        observer.addListener(recorder(seen), Runnable::run);
        observer.start();
        await().until(() -> seen.equals(List.of("first")));

        first.interruptLeadership(); // no requeue: the term ends and the second leads
        await().until(() -> seen.equals(List.of("first", "second")));
        observer.close();
        second.close();
        first.close();
        await().until(() -> second.participants().isEmpty());
        assertEquals(List.of("first", "second"), seen);
        zk.assertNoLeaks(path);
    }

    @Test
    void observerCostsOneWatchHoweverManyParticipants() throws Exception {
        String path = ZooKeeperFixture.uniquePath("one-watch");
        CuratorFramework client = zk.newClient();
        LeaderLatch leader = new LeaderLatch(client, path, "leader");
        leader.start();
        assertTrue(leader.await(Duration.ofSeconds(10)));
        // A leader watches its own node, so that it hears if somebody else deletes it: through its client's view, or,
        // without one, with a data watch. One watch either way.
        int leaders = 1;
        await().until(() -> zk.watchCount() == leaders); // the last test's sessions may still be closing
        LeaderObserver observer = new LeaderObserver(zk.newClient(), path);
        observer.start();
        await().until(() -> observer.leader().isPresent());
        assertEquals(leaders + 1, zk.watchCount(), "the observer's view, or its children watch");
        observer.close();
        leader.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void observerOnAClientThatTakesPartSharesItsView() throws Exception {
        assumeTrue(mode == EngineMode.VIEW, "a view is what is shared");
        String path = ZooKeeperFixture.uniquePath("shared-watch");
        CuratorFramework client = zk.newClient();
        LeaderLatch leader = new LeaderLatch(client, path, "leader");
        leader.start();
        assertTrue(leader.await(Duration.ofSeconds(10)));
        LeaderObserver observer = new LeaderObserver(client, path);
        observer.start();
        await().until(() -> observer.leader().isPresent());

        // One view per client and path: the latch and the observer use the same watch.
        assertEquals(1, zk.watchCount(), zk::watchesByPath);
        leader.close();
        await().until(() -> observer.leader().isEmpty());
        observer.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aClientWhoseObserverFollowsWithPlainWatchesTakesNoViewOfThatPath() throws Exception {
        assumeTrue(mode == EngineMode.VIEW, "without views nothing could be mixed");
        String path = ZooKeeperFixture.uniquePath("plain-watches");
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        ClientContext context = ClientContext.of(client);
        context.configureViews(context.viewSettings().withMaxOthers(1));
        LeaderLatch first = new LeaderLatch(zk.newClient(), path, "first");
        LeaderLatch second = new LeaderLatch(zk.newClient(), path, "second");
        first.start();
        assertTrue(first.await(Duration.ofSeconds(10)));
        second.start();

        // Two nodes of other sessions, over the bound of one: the observer's view is crowded, and it follows the
        // path with a children watch.
        LeaderObserver observer = new LeaderObserver(client, path);
        observer.start();
        await().until(() -> observer.leader().map(Participant::id).equals(Optional.of("first")));
        first.close();
        second.close();
        await().until(() -> observer.leader().isEmpty());
        counter.reset(); // the observer's view was added before it found the path crowded

        // The path is quiet now, and a crowded view would come back after a few quiet reads. But a server before 3.9
        // keeps one watch per connection and path, where the view's watch and the observer's would end each other:
        // this client takes no view of the path while it follows it with plain watches, nor after.
        LeaderLatch own = new LeaderLatch(client, path, "own");
        for (int i = 0; i < 8; i++) {
            own.start();
            assertTrue(own.await(Duration.ofSeconds(10)));
            await().until(() -> observer.leader().map(Participant::id).equals(Optional.of("own")));
            own.close();
            await().until(() -> observer.leader().isEmpty());
            own = new LeaderLatch(client, path, "own");
        }
        assertEquals(
                0, counter.count(path, "AddWatch"), () -> counter.names(path).toString());
        observer.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void closingAnObserverDropsItsWatchWhileTheElectionStandsStill() throws Exception {
        String path = ZooKeeperFixture.uniquePath("standing-still");
        LeaderLatch leader = new LeaderLatch(zk.newClient(), path, "leader");
        leader.start();
        assertTrue(leader.await(Duration.ofSeconds(10)));
        // The leader's one watch (on its node, see above); earlier tests' sessions may still be closing.
        await().until(() -> zk.watchCount() == 1);
        LeaderObserver observer = new LeaderObserver(zk.newClient(), path);
        observer.start();
        await().until(() -> observer.leader().isPresent());

        observer.close();
        // Nothing changes on the path from here on: the observer's close alone must take its watch off the server.
        await().until(() -> zk.watchCount() == 1);
        assertTrue(leader.hasLeadership());
        leader.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void anObserverClosedWhileItsServerIsDownTakesItsWatchOffOnceTheServerIsBack() throws Exception {
        assumeTrue(mode == EngineMode.WATCH, "a view's watch is dropped by the view, which has its own test");
        String path = ZooKeeperFixture.uniquePath("closed-in-outage");
        LeaderLatch leader = new LeaderLatch(zk.newOutageProofClient(), path, "leader");
        leader.start();
        assertTrue(leader.await(Duration.ofSeconds(10)));
        await().until(() -> zk.watchCount() == 1); // the leader's own (see above)
        CuratorFramework watching = zk.newOutageProofClient();
        LeaderObserver observer = new LeaderObserver(watching, path);
        observer.start();
        await().until(() -> observer.leader().isPresent());

        zk.stopServer();
        await().until(() -> !watching.getZookeeperClient().isConnected());
        observer.close();
        // A request queued behind the drop on the same handle fails with it, when the next connection attempt fails:
        // the client then keeps the watch, and would set it on the server again as it reconnects.
        CompletableFuture<Integer> probe = new CompletableFuture<>();
        watching.getZookeeperClient().getZooKeeper().exists("/", false, (rc, p, ctx, stat) -> probe.complete(rc), null);
        assertEquals(KeeperException.Code.CONNECTIONLOSS.intValue(), probe.get(20, TimeUnit.SECONDS));
        zk.restartServer();

        await().until(leader::hasLeadership); // confirmed on its session again
        // The client puts the watches it still has back on the server as it reconnects: none must stay there.
        await().until(() -> watching.getZookeeperClient().isConnected());
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(10)).until(() -> zk.watchCount() == 1);
        leader.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void observersOfOneClientShareTheirWatchAndOneLeavingKeepsTheOtherInformed() throws Exception {
        String path = ZooKeeperFixture.uniquePath("two-observers");
        CuratorFramework candidates = zk.newClient();
        LeaderLatch first = new LeaderLatch(candidates, path, "first");
        LeaderLatch second = new LeaderLatch(candidates, path, "second");
        first.start();
        assertTrue(first.await(Duration.ofSeconds(10)));
        second.start();
        await().until(() -> first.participants().size() == 2);
        CuratorFramework watching = zk.newClient();
        LeaderObserver leaving = new LeaderObserver(watching, path);
        LeaderObserver staying = new LeaderObserver(watching, path);
        List<String> seen = new CopyOnWriteArrayList<>();
        staying.addListener(recorder(seen), Runnable::run);
        leaving.start();
        staying.start();
        await().until(() -> seen.equals(List.of("first")));

        leaving.close(); // must not take the watch that the other observer still follows with
        first.close();
        await().until(() -> seen.equals(List.of("first", "second")));
        staying.close();
        second.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaderWhoseNodeTheObserverMayNotReadIsReportedWithAnEmptyId() throws Exception {
        String path = ZooKeeperFixture.uniquePath("unreadable");
        CuratorFramework observing = zk.newClient();
        observing.create().creatingParentsIfNeeded().forPath(path); // open: the observer may list the candidates
        LeaderObserver observer = new LeaderObserver(observing, path);
        List<String> seen = new CopyOnWriteArrayList<>();
        observer.addListener(recorder(seen), Runnable::run);
        observer.start();

        CuratorFramework owner = candidateOwner();
        String node = hiddenCandidate(owner, path);
        // A view hears nothing of it (ZooKeeper withholds the event), and finds the gap at the next create it hears.
        LeaderLatch behind = new LeaderLatch(zk.newClient(), path, "behind");
        behind.start();
        await().until(() -> seen.contains(""));
        assertEquals(List.of(""), seen, "the one behind it was never reported as leading");
        Participant leader = observer.leader().orElseThrow();
        assertEquals("", leader.id());
        assertEquals(ZKPaths.getNodeFromPath(node), leader.nodeName());

        // The latch behind it may not read it either, so it left the election (NoAuth) and deleted its node.
        await().until(() -> observing.getChildren().forPath(path).size() == 1);
        behind.close();
        owner.delete().forPath(node);
        await().until(() -> seen.equals(List.of("", NOBODY)));
        observer.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aLeaderWhoseNodeTheObserverMayNotReadIsSeenToGoAndTheNextIsReported() throws Exception {
        String path = ZooKeeperFixture.uniquePath("unreadable-gone");
        HiddenThenOpen candidates = hiddenThenOpen(path);
        // Both were there before it: a view lists them with its first read, and hears no gap of a withheld create.
        LeaderObserver observer = new LeaderObserver(candidates.reader(), path);
        List<String> seen = new CopyOnWriteArrayList<>();
        observer.addListener(recorder(seen), Runnable::run);
        observer.start();
        await().until(() -> seen.equals(List.of("")));

        // ZooKeeper withholds the deletion of a node the client may not read, from a view's watch too.
        candidates.owner().delete().forPath(candidates.hidden());
        await().until(() -> seen.equals(List.of("", "open")));
        assertEquals(
                ZKPaths.getNodeFromPath(candidates.open()),
                observer.leader().orElseThrow().nodeName());

        candidates.reader().delete().forPath(candidates.open());
        await().until(() -> seen.equals(List.of("", "open", NOBODY)));
        observer.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void anObserverThatMayNotListThePathReadsItAgainUntilItMay() throws Exception {
        String path = ZooKeeperFixture.uniquePath("unlisted");
        CuratorFramework owner = candidateOwner();
        owner.create()
                .creatingParentsIfNeeded()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL, new Id("auth", ""))))
                .forPath(path);
        LeaderLatch latch = new LeaderLatch(owner, path, "owner");
        latch.start();
        assertTrue(latch.await(Duration.ofSeconds(10)));
        RequestCounter counter = new RequestCounter();
        LeaderObserver observer = new LeaderObserver(zk.newClient(counter), path);
        List<String> seen = new CopyOnWriteArrayList<>();
        observer.addListener(recorder(seen), Runnable::run);
        observer.start();

        // Refused (NoAuth) on a connection that goes on, so no reconnection would bring another read: it reads again.
        await().until(() -> counter.count(path, "GetChildren") >= 2);
        assertEquals(Optional.empty(), observer.leader());
        assertEquals(List.of(), seen);
        owner.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL, new Id("world", "anyone"))))
                .forPath(path);
        await().until(() -> seen.equals(List.of("owner")));
        assertEquals("owner", observer.leader().orElseThrow().id());

        observer.close();
        latch.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aCandidateWhoseNodeTheClientMayNotReadIsStillListedInItsPlace() throws Exception {
        String path = ZooKeeperFixture.uniquePath("unreadable-listed");
        HiddenThenOpen candidates = hiddenThenOpen(path);
        String hidden = candidates.hidden();
        String open = candidates.open();
        LeaderLatch latch = new LeaderLatch(candidates.reader(), path, "never-started");

        List<Participant> listed = latch.participants();
        assertEquals(
                List.of(ZKPaths.getNodeFromPath(hidden), ZKPaths.getNodeFromPath(open)),
                listed.stream().map(Participant::nodeName).toList());
        assertEquals(List.of("", "open"), listed.stream().map(Participant::id).toList());
        assertEquals(
                ZKPaths.getNodeFromPath(hidden), latch.leader().orElseThrow().nodeName(), "the leader is first");

        candidates.owner().delete().forPath(hidden);
        candidates.reader().delete().forPath(open);
        latch.close();
        zk.assertNoLeaks(path);
    }

    private static CuratorFramework candidateOwner() throws InterruptedException {
        return zk.newCustomClient(b -> b.authorization("digest", "owner:secret".getBytes(StandardCharsets.UTF_8)));
    }

    /** Two candidates at an open path: first one only {@code owner} may read, then one {@code reader} made. */
    private record HiddenThenOpen(CuratorFramework reader, CuratorFramework owner, String hidden, String open) {}

    private static HiddenThenOpen hiddenThenOpen(String path) throws Exception {
        CuratorFramework reader = zk.newClient();
        reader.create().creatingParentsIfNeeded().forPath(path);
        CuratorFramework owner = candidateOwner();
        String hidden = hiddenCandidate(owner, path);
        String open = reader.create()
                .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                .forPath(path + "/_c_" + UUID.randomUUID() + "-latch-", "open".getBytes(StandardCharsets.UTF_8));
        return new HiddenThenOpen(reader, owner, hidden, open);
    }

    /** A candidate only its creator may read, as a latch of a client whose ACL provider says so makes it. */
    private static String hiddenCandidate(CuratorFramework owner, String path) throws Exception {
        return owner.create()
                .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL, new Id("auth", ""))))
                .forPath(path + "/_c_" + UUID.randomUUID() + "-latch-", "hidden".getBytes(StandardCharsets.UTF_8));
    }

    /** An observer on a client of its own behind a proxy, and the leaders it has reported. */
    private record Proxied(ZooKeeperProxy proxy, CuratorFramework client, LeaderObserver observer, List<String> seen) {
        /** The observer, then its client, then the proxy: a client closes through its proxy. */
        void close() {
            observer.close();
            client.close();
            proxy.close();
        }
    }

    /** Starts a {@link Proxied} observer of {@code path}; {@code beforeStart} sets the proxy's faults first. */
    private static Proxied observeThroughProxy(String path, Consumer<ZooKeeperProxy> beforeStart)
            throws IOException, InterruptedException {
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(builder -> builder.connectString(proxy.connectString()));
        beforeStart.accept(proxy);
        LeaderObserver observer = new LeaderObserver(client, path);
        List<String> seen = new CopyOnWriteArrayList<>();
        observer.addListener(recorder(seen), Runnable::run);
        observer.start();
        return new Proxied(proxy, client, observer, seen);
    }

    private static Consumer<Optional<Participant>> recorder(List<String> seen) {
        return leader -> seen.add(leader.map(Participant::id).orElse(NOBODY));
    }
}
