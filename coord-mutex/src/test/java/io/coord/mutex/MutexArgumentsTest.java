package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.Participant;
import io.coord.testkit.Background;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.retry.RetryNTimes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Every argument a user can get wrong, and the message they see. */
class MutexArgumentsTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void aWaitOnCuratorsBackgroundThreadIsRefusedBeforeAnythingIsSent() throws Exception {
        String path = ZooKeeperFixture.uniquePath("curator-thread");
        // A request that finds no connection within the connection timeout, and may not be retried, is answered on
        // Curator's background thread, which also sends every request made while the connection is down.
        CuratorFramework client =
                zk.newCustomClient(b -> b.connectionTimeoutMs(500).retryPolicy(new RetryNTimes(0, 0)));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        CompletableFuture<Throwable> thrown = new CompletableFuture<>();
        AtomicReference<String> thread = new AtomicReference<>();
        zk.stopServer();
        try {
            // Sent once the client knows it has no connection: Curator then hands it to its background thread.
            await().until(() -> !client.getZookeeperClient().isConnected());
            client.checkExists()
                    .inBackground((c, event) -> {
                        thread.set(Thread.currentThread().getName());
                        try {
                            mutex.acquire(Duration.ZERO);
                            thrown.complete(null);
                        } catch (Throwable e) {
                            thrown.complete(e);
                        }
                    })
                    .forPath("/");
            Throwable refused = thrown.get(30, TimeUnit.SECONDS);
            assertTrue(thread.get().startsWith("Curator-Framework-"), thread::get);
            assertInstanceOf(IllegalStateException.class, refused);
            assertEquals(
                    "acquiring " + path + " waits for ZooKeeper's answers, and once the connection drops for requests"
                            + " that Curator's background thread sends: call it from another thread than a background"
                            + " callback",
                    refused.getMessage());
        } finally {
            zk.restartServer();
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void aWaitOnZooKeepersEventThreadIsRefusedBeforeAnythingIsSent() throws Exception {
        String path = ZooKeeperFixture.uniquePath("event-thread");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        String refusal = "acquiring " + path + " waits for ZooKeeper's answers, which ZooKeeper's event thread"
                + " delivers: call it from another thread than a watcher or a background callback";
        Throwable blocking = Background.thrownOnEventThread(client, () -> {
            mutex.acquire();
            return null;
        });
        assertEquals(refusal, blocking.getMessage());
        assertInstanceOf(IllegalStateException.class, blocking);
        Throwable timed = Background.thrownOnEventThread(client, () -> mutex.acquire(Duration.ZERO));
        assertEquals(refusal, timed.getMessage());
        Throwable lock = Background.thrownOnEventThread(client, () -> {
            mutex.asLock().lock();
            return null;
        });
        assertEquals(refusal, lock.getMessage());
        assertEquals(
                refusal,
                Background.thrownOnEventThread(client, mutex.asLock()::tryLock).getMessage());
        assertEquals(
                "listing the participants of " + path + " waits for ZooKeeper's answers, which ZooKeeper's event"
                        + " thread delivers: call it from another thread than a watcher or a background callback",
                Background.thrownOnEventThread(client, mutex::participants).getMessage());
        Participant someone = new Participant("x", "_c_0f0e0d0c-0b0a-0908-0706-050403020100-lock-0000000007", 7);
        assertEquals(
                "forcing the revocation of " + someone.nodeName() + " under " + path + " waits for ZooKeeper's"
                        + " answers, which ZooKeeper's event thread delivers: call it from another thread than a"
                        + " watcher or a background callback",
                Background.thrownOnEventThread(client, () -> mutex.forceRevocation(someone))
                        .getMessage());
        assertInstanceOf(
                IllegalStateException.class,
                Background.thrownOnEventThread(client, () -> mutex.requestRevocation(someone)));
        assertNull(client.checkExists().forPath(path), "nothing was sent");
        // Asynchronous acquisitions park no thread, so they are welcome there.
        CompletableFuture<Lease> async = new CompletableFuture<>();
        assertNull(Background.thrownOnEventThread(
                client,
                () -> mutex.acquireAsync().whenComplete((lease, e) -> {
                    if (e != null) {
                        async.completeExceptionally(e);
                    } else {
                        async.complete(lease);
                    }
                })));
        async.get(10, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aWaitOnAnAsyncAcquisitionOnZooKeepersEventThreadGivesItUpAndSaysWhy() throws Exception {
        String path = ZooKeeperFixture.uniquePath("event-thread-join");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        String refusal = "waiting on the future of acquiring " + path + " waits for ZooKeeper's answers, which"
                + " ZooKeeper's event thread delivers: call it from another thread than a watcher or a background"
                + " callback";
        // The grant of a free lock would come on that very thread: the wait would never end, and the lock be held by
        // nobody who knows it. Each wait gives the acquisition up instead.
        List<CompletableFuture<Lease>> given = new ArrayList<>();
        List<Callable<Lease>> waits = List.of(
                () -> futureOf(mutex, given).join(),
                () -> futureOf(mutex, given).get(),
                () -> futureOf(mutex, given).get(1, TimeUnit.SECONDS));
        for (Callable<Lease> wait : waits) {
            Throwable refused = Background.thrownOnEventThread(client, wait);
            assertInstanceOf(IllegalStateException.class, refused);
            assertEquals(refusal, refused.getMessage());
        }
        assertEquals(3, given.size());
        given.forEach(future -> assertTrue(future.isCancelled()));
        // A zero timeout only looks, and is not refused.
        Throwable looked = Background.thrownOnEventThread(client, () -> {
            CompletableFuture<Lease> future = futureOf(mutex, given);
            try {
                return future.get(0, TimeUnit.SECONDS);
            } finally {
                future.cancel(false);
            }
        });
        assertInstanceOf(TimeoutException.class, looked);
        // A future already complete answers there as anywhere.
        CompletableFuture<Lease> granted = mutex.acquireAsync();
        Lease lease = granted.get(10, TimeUnit.SECONDS);
        assertNull(Background.thrownOnEventThread(client, () -> granted.join().fencingToken()));
        lease.close();
        await().until(() -> !mutex.isAcquiredInThisProcess());
        zk.assertNoLeaks(path);
    }

    private static CompletableFuture<Lease> futureOf(ReentrantMutex mutex, List<CompletableFuture<Lease>> given) {
        CompletableFuture<Lease> future = mutex.acquireAsync();
        given.add(future);
        return future;
    }

    @Test
    void nullClientIsRefused() {
        NullPointerException e = assertThrows(NullPointerException.class, () -> new ReentrantMutex(null, "/locks/a"));
        assertEquals("client must not be null", e.getMessage());
    }

    @Test
    void nullPathIsRefused() {
        CuratorFramework client = zk.unstartedClient();
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new ReentrantMutex(client, null));
        assertEquals("path must not be null", e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "locks/a", "/locks/", "/locks//a", "/locks/./a", "/locks/\u0000"})
    void invalidPathIsRefusedWithZooKeepersReason(String path) {
        CuratorFramework client = zk.unstartedClient();
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new ReentrantMutex(client, path));
        assertEquals(true, e.getMessage().startsWith("invalid ZooKeeper path \"" + path + "\": "), e.getMessage());
    }

    @Test
    void rootPathIsRefused() {
        CuratorFramework client = zk.unstartedClient();
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new ReentrantMutex(client, "/"));
        assertEquals("path must not be the root \"/\": coord keeps its nodes beneath it", e.getMessage());
    }

    @Test
    void participantIdMustBePresentAndSmall() {
        CuratorFramework client = zk.unstartedClient();
        NullPointerException missing =
                assertThrows(NullPointerException.class, () -> new ReentrantMutex(client, "/locks/a", null));
        assertEquals("participantId must not be null", missing.getMessage());
        IllegalArgumentException large = assertThrows(
                IllegalArgumentException.class, () -> new ReentrantMutex(client, "/locks/a", "x".repeat(70_000)));
        assertEquals("participantId must be at most 65536 bytes in UTF-8: 70000", large.getMessage());
    }

    @Test
    void timeoutMustBePresentAndNotNegative() throws Exception {
        ReentrantMutex mutex = new ReentrantMutex(zk.newClient(), ZooKeeperFixture.uniquePath("args"));
        NullPointerException missing = assertThrows(NullPointerException.class, () -> mutex.acquire(null));
        assertEquals("timeout must not be null", missing.getMessage());
        IllegalArgumentException negative =
                assertThrows(IllegalArgumentException.class, () -> mutex.acquire(Duration.ofSeconds(-1)));
        assertEquals("timeout must not be negative: PT-1S", negative.getMessage());
    }

    @Test
    void constructorDoesNoIoAndAcquireNeedsAStartedClient() throws Exception {
        CuratorFramework client = zk.unstartedClient();
        ReentrantMutex mutex = new ReentrantMutex(client, "/locks/not-started");
        IllegalStateException e = assertThrows(IllegalStateException.class, mutex::acquire);
        assertEquals("the client must be started before acquiring /locks/not-started", e.getMessage());
        IllegalStateException async = assertThrows(IllegalStateException.class, mutex::acquireAsync);
        assertEquals(e.getMessage(), async.getMessage());
        Participant someone = new Participant("x", "_c_0f0e0d0c-0b0a-0908-0706-050403020100-lock-0000000007", 7);
        assertEquals(
                "the client must be started before requesting a revocation under /locks/not-started",
                assertThrows(IllegalStateException.class, () -> mutex.requestRevocation(someone))
                        .getMessage());
        assertEquals(
                "the client must be started before forcing a revocation under /locks/not-started",
                assertThrows(IllegalStateException.class, () -> mutex.forceRevocation(someone))
                        .getMessage());
    }
}
