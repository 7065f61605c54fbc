package io.coord.semaphore;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.core.internal.Observations;
import io.coord.core.internal.Observer;
import io.coord.testkit.Background;
import io.coord.testkit.BreakingTicker;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperFixture.Session;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.drivers.AdvancedTracerDriver;
import org.apache.curator.drivers.EventTrace;
import org.apache.curator.drivers.OperationTrace;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEventType;
import org.apache.curator.retry.RetryForever;
import org.apache.curator.retry.RetryNTimes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/**
 * Unusable clients, timeouts of any length, failures mid-wait, and deadlines while the server is down. Run in each
 * engine mode by {@link SemaphoreFaultsInViewModeTest} and {@link SemaphoreFaultsInWatchModeTest}, two classes so that
 * the two modes run side by side.
 */
@Timeout(90)
abstract class SemaphoreFaultsTest {
    private static final Duration FOREVER = ChronoUnit.FOREVER.getDuration();

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void aWaiterOneOfWhoseNodesSomebodyElseDeletesQueuesAgainThroughTheView() throws Exception {
        // Without a view a waiter learns of its nodes' fate from its session alone (see README).
        assumeTrue(mode == EngineMode.VIEW, "the view is what hears the deletion");
        String path = ZooKeeperFixture.uniquePath("waiter-node-deleted");
        DistributedSemaphore holder = new DistributedSemaphore(zk.newClient(), path, 4);
        DistributedSemaphore waiter = new DistributedSemaphore(zk.newClient(), path, 4);
        waiter.acquire(1).close(); // counts the path: the next acquisition decides on the view
        Lease held = holder.acquire(4);
        List<Participant> holders = holder.participants();
        CompletableFuture<Lease> pending = waiter.acquireAsync(3);
        await().until(() -> holder.participants().size() == 7);

        Participant victim = holder.participants().stream()
                .filter(p -> !holders.contains(p))
                .findFirst()
                .orElseThrow();
        zk.newClient().delete().forPath(path + "/" + victim.nodeName()); // by hand, or by a forced revocation
        held.close();

        Lease granted = pending.get(10, TimeUnit.SECONDS);
        assertEquals(LeaseState.HELD, granted.state());
        await().until(() -> holder.participants().size() == 3); // the other two nodes of the first try are gone
        assertFalse(holder.tryAcquire(2, Duration.ZERO).isPresent(), "3 of 4 permits are held");
        granted.close();
        holder.acquire(4).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void permitsDeclaredLostWhileCutOffAreFreedOnceBackWithoutWaitingForTheServersExpiry() throws Exception {
        String path = ZooKeeperFixture.uniquePath("lost-while-cut-off");
        CuratorFramework holderClient = zk.newClientGivingUpBeforeTheServer();
        Session old = Session.of(holderClient);
        DistributedSemaphore holder = new DistributedSemaphore(holderClient, path, 3);
        DistributedSemaphore waiter = new DistributedSemaphore(zk.newOutageProofClient(), path, 3);
        Lease held = holder.acquire(2);
        Lease other = waiter.acquire(1);
        CompletableFuture<Lease> pending = waiter.acquireAsync(2);
        await().until(() -> waiter.participants().size() == 5);

        zk.stopServer();
        assertEquals(LeaseState.LOST, held.ended().get(20, TimeUnit.SECONDS));
        zk.restartServer();

        Lease granted = pending.get(20, TimeUnit.SECONDS);
        assertEquals(LeaseState.HELD, granted.state());
        await().until(other::isValid); // held again once its client has checked it after reconnecting
        assertEquals(3, waiter.participants().size());
        // The permits came back by the holder's own deletes, not by the server expiring its session, which still
        // lives.
        assertTrue(zk.endSessionIfAlive(old), "the old session had already expired");
        assertFalse(holder.tryAcquire(1, Duration.ZERO).isPresent(), "3 of 3 permits are held");
        granted.close();
        other.close();
        holder.acquire(3).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aNeverStartedClientIsRefusedWithIllegalStateException() {
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.unstartedClient(), "/never-started", 2);
        String expected = "the client must be started before acquiring /never-started";
        assertEquals(
                expected,
                assertThrows(IllegalStateException.class, semaphore::acquire).getMessage());
        assertEquals(
                expected,
                assertThrows(IllegalStateException.class, () -> semaphore.tryAcquire(1, Duration.ofSeconds(1)))
                        .getMessage());
        assertEquals(
                expected,
                assertThrows(IllegalStateException.class, () -> semaphore.acquireAsync(1))
                        .getMessage());
    }

    @Test
    void aTimeoutTooLongForNanosecondsWaitsForEver() throws Exception {
        String path = ZooKeeperFixture.uniquePath("forever");
        DistributedSemaphore holder = new DistributedSemaphore(zk.newClient(), path, 1);
        DistributedSemaphore waiter = new DistributedSemaphore(zk.newClient(), path, 1);
        Lease held = holder.tryAcquire(1, FOREVER).orElseThrow();
        CompletableFuture<Optional<Lease>> pending = Background.call(() -> waiter.tryAcquire(1, FOREVER));
        await().until(() -> holder.participants().size() == 2);

        held.close();

        pending.get(20, TimeUnit.SECONDS).orElseThrow().close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aFailureAfterTheAttemptStartedWithdrawsAllItsNodes() throws Exception {
        String path = ZooKeeperFixture.uniquePath("forced-failure");
        DistributedSemaphore holder = new DistributedSemaphore(zk.newClient(), path, 2);
        DistributedSemaphore broken = new DistributedSemaphore(zk.newClient(), path, 2, new BreakingTicker(1));
        Lease held = holder.acquire();
        assertEquals(Optional.empty(), broken.tryAcquire(2, Duration.ZERO)); // checks the record, reads no clock

        // One good read sets the deadline; the wait's next read throws, with both nodes already queued.
        IllegalStateException error =
                assertThrows(IllegalStateException.class, () -> broken.tryAcquire(2, Duration.ofSeconds(30)));
        assertEquals("the ticker broke", error.getMessage());
        await().until(() -> holder.participants().size() == 1);

        held.close();
        new DistributedSemaphore(zk.newClient(), path, 2)
                .tryAcquire(2, Duration.ofSeconds(10))
                .orElseThrow()
                .close();
        zk.assertNoLeaks(path);
    }

    @Test
    void timedCallsHonourTheirDeadlineWhileTheServerIsDown() throws Exception {
        String path = ZooKeeperFixture.uniquePath("server-down");
        CuratorFramework client = zk.newClient();
        DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 2); // its record is not checked yet
        zk.stopServer();
        await().until(() -> !client.getZookeeperClient().isConnected());

        // Bounded well below what Curator's retries take to give up on the record read (over a minute).
        assertTimeoutPreemptively(Duration.ofSeconds(15), () -> {
            assertEquals(Optional.empty(), semaphore.tryAcquire(1, Duration.ofMillis(300)));
            assertEquals(Optional.empty(), semaphore.tryAcquire(1, Duration.ZERO));
        });

        zk.restartServer();
        Lease lease = semaphore.tryAcquire(2, Duration.ofSeconds(20)).orElseThrow();
        assertTrue(lease.isValid());
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aFirstUseThatEndsInTheRecordCheckIsReportedLikeAnyAcquisition() throws Exception {
        String path = ZooKeeperFixture.uniquePath("first-use-reported");
        List<String> heard = new CopyOnWriteArrayList<>();
        Observer observer = new Observer() {
            @Override
            public void acquisitionStarted(String p, String primitive) {
                if (p.startsWith(path)) {
                    heard.add("started");
                }
            }

            @Override
            public void acquisitionEnded(
                    String p, String primitive, String participant, long waitNanos, AcquireOutcome outcome) {
                if (p.startsWith(path)) {
                    heard.add(outcome.tag());
                }
            }
        };
        Observations.add(observer);
        try {
            CuratorFramework client = zk.newClient();
            DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 2);
            new DistributedSemaphore(zk.newClient(), path, 3).acquire().close(); // records another limit
            assertThrows(IllegalStateException.class, () -> semaphore.tryAcquire(1, Duration.ofSeconds(10)));

            DistributedSemaphore unchecked = new DistributedSemaphore(client, path + "-down", 2);
            zk.stopServer();
            await().until(() -> !client.getZookeeperClient().isConnected());
            assertEquals(Optional.empty(), unchecked.tryAcquire(1, Duration.ofMillis(300)));
            zk.restartServer();

            await().until(() -> heard.size() == 6);
            assertEquals(List.of("started", "granted", "started", "failed", "started", "timed_out"), heard);
        } finally {
            Observations.remove(observer);
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void aFirstUseCheckThatOutlastsTheClientsRetriesWaitsForTheConnection() throws Exception {
        String path = ZooKeeperFixture.uniquePath("record-outage");
        CuratorFramework client =
                zk.newCustomClient(b -> b.retryPolicy(new RetryNTimes(0, 0)).connectionTimeoutMs(500));
        DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 2); // its record is not checked yet
        zk.stopServer();
        await().until(() -> !client.getZookeeperClient().isConnected());

        // Curator gives up on the record read long before the deadline: the call still waits, and times out.
        assertEquals(Optional.empty(), semaphore.tryAcquire(1, Duration.ofSeconds(3)));

        zk.restartServer();
        Lease lease = semaphore.acquire();
        assertTrue(lease.isValid());
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aHolderOneOfWhoseNodesGoesWhileItIsCutOffIsLostOnReconnectAndLeavesNoPermitTaken() throws Exception {
        String path = ZooKeeperFixture.uniquePath("holder-node-gone-cut-off");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newOutageProofClient(proxy);
        CuratorFramework admin = zk.newClient();
        DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 4);
        Lease lease = semaphore.acquire(2);
        String first = lease.path().substring(path.length() + 1);
        String ours = first.substring(0, first.indexOf('-', "_c_".length() + 36) + 1); // _c_<uuid>-
        List<String> nodes = admin.getChildren().forPath(path).stream()
                .filter(name -> name.startsWith(ours))
                .sorted()
                .toList();
        assertEquals(2, nodes.size(), nodes.toString());

        proxy.refuseConnections(true);
        proxy.cutConnections();
        await().until(() -> lease.state() == LeaseState.SUSPECT);
        admin.delete().forPath(path + "/" + nodes.get(1)); // the second permit, not the node a check reads first
        proxy.refuseConnections(false);

        await().until(() -> lease.state() == LeaseState.LOST);
        await().until(() -> admin.getChildren().forPath(path).stream().noneMatch(name -> name.startsWith(ours)));
        Lease all = new DistributedSemaphore(admin, path, 4).acquire(4);
        all.close();
        client.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aOneLookFirstUseIsRefusedWhenItsCheckLosesTheConnectionAndTheCheckGoesOn() throws Exception {
        String path = ZooKeeperFixture.uniquePath("one-look-record");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(b -> b.connectString(proxy.connectString())
                .retryPolicy(new RetryNTimes(0, 0))
                .connectionTimeoutMs(500));
        DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 2); // its record is not checked yet
        // The client still counts itself connected, so the look is taken; the record read's reply never comes, and
        // no reconnection gets through until the proxy passes replies again.
        proxy.loseReplies(true);
        CompletableFuture<Optional<Lease>> look = Background.call(() -> semaphore.tryAcquire(1, Duration.ZERO));

        // Answered once the client gives the connection up (its read timeout), with replies still lost.
        await().atMost(Duration.ofSeconds(30)).until(look::isDone);
        assertEquals(Optional.empty(), look.get());

        proxy.loseReplies(false);
        Lease lease = semaphore.acquire(); // joins the check, which went on once connected
        assertTrue(lease.isValid());
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aOneLookFirstUseIsRefusedWhenItsConnectionDropsEvenIfTheClientRetriesForEver() throws Exception {
        String path = ZooKeeperFixture.uniquePath("one-look-retrying");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(b -> b.connectString(proxy.connectString())
                .retryPolicy(new RetryForever(100))
                .connectionTimeoutMs(500));
        DistributedSemaphore semaphore = new DistributedSemaphore(client, path, 2);
        proxy.loseReplies(true);
        CompletableFuture<Optional<Lease>> look = Background.call(() -> semaphore.tryAcquire(1, Duration.ZERO));

        // Answered once the connection drops, though Curator goes on retrying the record's read and replies are lost.
        await().atMost(Duration.ofSeconds(30)).until(look::isDone);
        assertEquals(Optional.empty(), look.get());

        proxy.loseReplies(false);
        Lease lease = semaphore.acquire();
        assertTrue(lease.isValid());
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aFirstUseRefusalReachesAsyncCallersOffZooKeepersEventThread() throws Exception {
        String path = ZooKeeperFixture.uniquePath("record-refused-async");
        CuratorFramework client = zk.newClient();
        new DistributedSemaphore(client, path, 3).acquire().close(); // records maxLeases 3
        CompletableFuture<String> thread = new CompletableFuture<>();
        new DistributedSemaphore(client, path, 2)
                .acquireAsync(1)
                .whenComplete(
                        (lease, error) -> thread.complete(Thread.currentThread().getName()));
        assertFalse(thread.get(10, TimeUnit.SECONDS).endsWith("EventThread"), thread.get());
        zk.assertNoLeaks(path);
    }

    @Test
    void anAsyncFirstUseWhoseClientClosesRightAfterTheCheckAnsweredFails() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-after-check");
        new DistributedSemaphore(zk.newClient(), path, 2).acquire().close(); // recorded: the check is one read
        CuratorFramework client = zk.newClient();
        CountDownLatch closing = new CountDownLatch(1);
        client.getCuratorListenable().addListener((c, event) -> {
            if (event.getType() == CuratorEventType.CLOSING) {
                closing.countDown(); // the client counts itself closed by now
            }
        });
        // Curator traces a reply right before handing it on: hold the check's reply until the client is closing, so
        // that the check answers on a closed client. Test only; the wait is for the closer's first step.
        client.getZookeeperClient().setTracerDriver(new AdvancedTracerDriver() {
            @Override
            public void addTrace(OperationTrace trace) {
                if (trace.getName().startsWith("GetData") && path.equals(trace.getPath())) {
                    Background.call(() -> {
                        client.close();
                        return null;
                    });
                    await().until(() -> closing.getCount() == 0);
                }
            }

            @Override
            public void addEvent(EventTrace trace) {}
        });

        CompletableFuture<Lease> pending = new DistributedSemaphore(client, path, 2).acquireAsync(1);

        ExecutionException error = assertThrows(ExecutionException.class, () -> pending.get(30, TimeUnit.SECONDS));
        assertInstanceOf(CoordinationException.class, error.getCause());
        zk.assertNoLeaks(path);
    }

    @Test
    void aFirstUseAcquisitionCompletedFromOutsideIsWithdrawn() throws Exception {
        String path = ZooKeeperFixture.uniquePath("record-completed-outside");
        DistributedSemaphore holder = new DistributedSemaphore(zk.newClient(), path, 1);
        Lease held = holder.acquire();
        CompletableFuture<Lease> pending = new DistributedSemaphore(zk.newClient(), path, 1).acquireAsync(1);
        await().until(() -> holder.participants().size() == 2);

        pending.complete(null); // as completeOnTimeout(null, ...) does

        await().until(() -> holder.participants().size() == 1);
        held.close();
        zk.assertNoLeaks(path);
    }
}
