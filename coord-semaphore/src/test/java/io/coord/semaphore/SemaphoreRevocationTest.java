package io.coord.semaphore;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.testkit.Background;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.retry.RetryNTimes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** A permit holder can be asked to give its lease back, or evicted; a multi-permit lease goes as one. */
@InBothEngineModes
@Timeout(90)
class SemaphoreRevocationTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void multiPermitLeaseIsAskedOnceWhicheverPermitNamesIt() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-permits");
        DistributedSemaphore holder = new DistributedSemaphore(zk.newClient(), path, 2);
        DistributedSemaphore waiter = new DistributedSemaphore(zk.newClient(), path, 2);
        Lease both = holder.acquire(2);
        AtomicInteger asked = new AtomicInteger();
        both.onRevocationRequested(
                () -> {
                    asked.incrementAndGet();
                    both.close();
                },
                Runnable::run);
        CompletableFuture<Lease> next = waiter.acquireAsync(1);
        await().until(() -> waiter.participants().size() == 3);
        List<Participant> queue = waiter.participants();

        assertFalse(waiter.requestRevocation(queue.get(2)), "the waiter holds no permit");
        assertTrue(waiter.requestRevocation(queue.get(1)), "the second permit names the lease too");

        Lease granted = next.get(10, TimeUnit.SECONDS);
        assertEquals(1, asked.get());
        assertEquals(LeaseState.RELEASED, both.ended().get(5, TimeUnit.SECONDS));
        granted.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void evictedLeaseLosesEveryPermitAndTheWaiterIsGranted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-permits-forced");
        CuratorFramework reader = zk.newClient();
        DistributedSemaphore holder = new DistributedSemaphore(zk.newClient(), path, 2);
        DistributedSemaphore waiter = new DistributedSemaphore(zk.newClient(), path, 2);
        Lease both = holder.acquire(2);
        both.onRevocationRequested(() -> {}, Runnable::run);
        CompletableFuture<Lease> next = waiter.acquireAsync(2);
        await().until(() -> waiter.participants().size() == 4);

        assertTrue(waiter.forceRevocation(waiter.participants().get(0)));

        assertEquals(LeaseState.LOST, both.ended().get(10, TimeUnit.SECONDS));
        Lease granted = next.get(10, TimeUnit.SECONDS);
        assertEquals(2, reader.getChildren().forPath(path).size(), "only the new holder's two permits are left");
        assertTrue(granted.fencingToken() > both.fencingToken());
        assertFalse(waiter.forceRevocation(new Participant("gone", both.path().substring(path.length() + 1), 0)));
        granted.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void anInstanceBuiltWithAnotherLimitIsRefusedBeforeItRevokesAnything() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-other-limit");
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 1);
        Lease held = semaphore.acquire();
        CompletableFuture<Lease> waiting = semaphore.acquireAsync(1);
        await().until(() -> semaphore.participants().size() == 2);
        Participant waiter = semaphore.participants().get(1);

        // With a limit of 2 the waiter would pass for a holder.
        DistributedSemaphore wider = new DistributedSemaphore(zk.newClient(), path, 2);
        IllegalStateException forced = assertThrows(IllegalStateException.class, () -> wider.forceRevocation(waiter));
        assertEquals(
                "semaphore " + path + " records maxLeases 1, but this instance was built with maxLeases 2",
                forced.getMessage());
        assertThrows(IllegalStateException.class, () -> wider.requestRevocation(waiter));
        assertEquals(2, semaphore.participants().size(), "the waiter's node is still there");
        assertEquals(waiter, semaphore.participants().get(1), "and was not asked to let go");

        held.close();
        waiting.get(10, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void revokingOnADeletedPathAnswersFalseAndDoesNotMakeThePathAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-deleted-path");
        CuratorFramework admin = zk.newClient();
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 1);
        Lease held = semaphore.acquire();
        Participant holder = semaphore.participants().get(0);
        held.close();
        await().until(() -> admin.getChildren().forPath(path).isEmpty());
        admin.delete().forPath(path); // retired by hand

        DistributedSemaphore late = new DistributedSemaphore(zk.newClient(), path, 1);
        assertFalse(late.forceRevocation(holder));
        assertFalse(late.requestRevocation(holder));
        assertNull(admin.checkExists().forPath(path), "a revocation never makes the path");
        zk.assertNoLeaks(path);
    }

    @Test
    void closingTheClientWhileARevocationReadsTheRecordFailsWithCoordinationException() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-closed");
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 1);
        Lease held = semaphore.acquire();
        Participant holder = semaphore.participants().get(0);
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework askerClient = zk.newCustomClient(
                b -> b.connectString(proxy.connectString()).retryPolicy(new RetryNTimes(1_000, 100)));
        DistributedSemaphore asker = new DistributedSemaphore(askerClient, path, 1); // its record is not checked yet
        proxy.refuseConnections(true);
        proxy.cutConnections();

        // Waiting inside Curator's retries for a connection, past coord's own check that the client is open.
        CompletableFuture<Boolean> asked = Background.callUntilItSleeps(() -> asker.forceRevocation(holder));
        askerClient.close();

        ExecutionException failed = assertThrows(ExecutionException.class, () -> asked.get(30, TimeUnit.SECONDS));
        assertInstanceOf(CoordinationException.class, failed.getCause());
        assertTrue(held.isValid(), "nothing was revoked");
        held.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aRevocationOnZooKeepersEventThreadIsRefusedBeforeTheLimitIsRead() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-permits-event-thread");
        DistributedSemaphore owner = new DistributedSemaphore(zk.newClient(), path, 1);
        Lease lease = owner.acquire();
        Participant holder = owner.participants().get(0);
        RequestCounter counter = new RequestCounter();
        CuratorFramework client = zk.newClient(counter);
        DistributedSemaphore asker = new DistributedSemaphore(client, path, 1); // its limit not yet checked

        Throwable refused = Background.thrownOnEventThread(client, () -> asker.forceRevocation(holder));

        assertInstanceOf(IllegalStateException.class, refused);
        assertTrue(
                refused.getMessage().startsWith("forcing the revocation of " + holder.nodeName()),
                refused.getMessage());
        assertEquals(0, counter.count(path), () -> counter.names(path).toString());
        assertTrue(lease.isValid());
        lease.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void badInputIsRefusedBeforeAnythingIsWritten() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-permits-bad-input");
        DistributedSemaphore semaphore = new DistributedSemaphore(zk.newClient(), path, 1);
        Lease lease = semaphore.acquire();

        assertThrows(NullPointerException.class, () -> semaphore.requestRevocation(null));
        IllegalArgumentException wrongKind = assertThrows(
                IllegalArgumentException.class,
                () -> semaphore.forceRevocation(new Participant("x", "_c_0-lock-0000000000", 0)));
        assertTrue(wrongKind.getMessage().contains("no lease- node under " + path), wrongKind.getMessage());

        assertTrue(lease.isValid());
        lease.close();
        zk.assertNoLeaks(path);
    }
}
