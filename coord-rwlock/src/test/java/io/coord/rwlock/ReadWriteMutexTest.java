package io.coord.rwlock;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.DistributedLock;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

@InBothEngineModes
@Timeout(60)
class ReadWriteMutexTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    private final ExecutorService threads = Executors.newCachedThreadPool();

    @AfterEach
    void closeClients() throws Exception {
        threads.shutdownNow();
    }

    @Test
    void readersShare() throws Exception {
        String path = ZooKeeperFixture.uniquePath("readers-share");
        ReadWriteMutex a = new ReadWriteMutex(zk.newClient(), path);
        ReadWriteMutex b = new ReadWriteMutex(zk.newClient(), path);
        a.readLock().acquire();
        assertTrue(threads.submit(() -> acquireAndRelease(b.readLock(), Duration.ofSeconds(5)))
                .get(10, TimeUnit.SECONDS));
        a.readLock().release();
        zk.assertNoLeaks(path);
    }

    @Test
    void writerExcludesEveryone() throws Exception {
        String path = ZooKeeperFixture.uniquePath("writer-excludes");
        ReadWriteMutex writer = new ReadWriteMutex(zk.newClient(), path);
        ReadWriteMutex other = new ReadWriteMutex(zk.newClient(), path);
        writer.writeLock().acquire();
        assertFalse(threads.submit(() -> acquireAndRelease(other.readLock(), Duration.ofMillis(300)))
                .get(10, TimeUnit.SECONDS));
        assertFalse(threads.submit(() -> acquireAndRelease(other.writeLock(), Duration.ofMillis(300)))
                .get(10, TimeUnit.SECONDS));
        writer.writeLock().release();
        assertTrue(threads.submit(() -> acquireAndRelease(other.writeLock(), Duration.ofSeconds(5)))
                .get(10, TimeUnit.SECONDS));
        zk.assertNoLeaks(path);
    }

    @Test
    void readerQueuedBehindAWriterWaitsAndWritersAreNotStarvedByLaterReaders() throws Exception {
        String path = ZooKeeperFixture.uniquePath("fifo");
        ReadWriteMutex first = new ReadWriteMutex(zk.newClient(), path, "reader-1");
        ReadWriteMutex writer = new ReadWriteMutex(zk.newClient(), path, "writer");
        ReadWriteMutex late = new ReadWriteMutex(zk.newClient(), path, "reader-2");
        List<String> order = new CopyOnWriteArrayList<>();
        first.readLock().acquire();
        CompletableFuture<Lease> write = writer.writeLock().acquireAsync();
        await().until(() -> first.readLock().participants().size() == 2);
        CompletableFuture<Lease> lateRead = late.readLock().acquireAsync();
        await().until(() -> first.readLock().participants().size() == 3);
        CompletableFuture<Void> writerSeen = write.thenRun(() -> order.add("writer"));
        CompletableFuture<Void> readerSeen = lateRead.thenRun(() -> order.add("reader-2"));

        assertFalse(lateRead.isDone(), "a reader queued behind a writer must wait for it");
        first.readLock().release();
        Lease writeLease = write.get(10, TimeUnit.SECONDS);
        assertFalse(lateRead.isDone());
        writeLease.close();
        lateRead.get(10, TimeUnit.SECONDS).close();
        // get() can return before a dependent action has run: wait for both actions, then compare.
        CompletableFuture.allOf(writerSeen, readerSeen).get(10, TimeUnit.SECONDS);
        assertEquals(List.of("writer", "reader-2"), order);
        zk.assertNoLeaks(path);
    }

    @Test
    void nodeNamesUseTheReadAndWritePrefixesInOneSequence() throws Exception {
        String path = ZooKeeperFixture.uniquePath("layout");
        ReadWriteMutex rw = new ReadWriteMutex(zk.newClient(), path, "me");
        Lease read = rw.readLock().acquireAsync().get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> write = rw.writeLock().acquireAsync();
        await().until(() -> rw.readLock().participants().size() == 2);
        List<Participant> queue = rw.writeLock().participants();
        assertTrue(queue.get(0).nodeName().matches("_c_[0-9a-f-]{36}-R-\\d{10}"), queue.toString());
        assertTrue(queue.get(1).nodeName().matches("_c_[0-9a-f-]{36}-W-\\d{10}"), queue.toString());
        assertEquals(queue.get(0).sequence() + 1, queue.get(1).sequence());
        assertTrue(read.path().endsWith(queue.get(0).nodeName()));
        read.close();
        write.get(10, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void writeHolderDowngradesAndQueuedWritersStayBlocked() throws Exception {
        String path = ZooKeeperFixture.uniquePath("downgrade");
        ReadWriteMutex rw = new ReadWriteMutex(zk.newClient(), path, "holder");
        ReadWriteMutex other = new ReadWriteMutex(zk.newClient(), path, "other");
        rw.writeLock().acquire();
        CompletableFuture<Lease> queuedWriter = other.writeLock().acquireAsync();
        await().until(() -> rw.readLock().participants().size() == 2);

        rw.readLock().acquire(); // granted at once: the write holder may read
        assertSame(rw.writeLock().lease(), rw.readLock().lease());
        rw.writeLock().release();
        assertTrue(rw.readLock().isHeldByCurrentThread());
        assertFalse(rw.writeLock().isHeldByCurrentThread());
        assertTrue(rw.readLock().isAcquiredInThisProcess());
        assertFalse(rw.writeLock().isAcquiredInThisProcess(), "the write lock's node stays for the reader alone");
        assertEquals(LeaseState.HELD, rw.readLock().lease().state());

        // Still reading: the writer queued behind must not get in.
        assertFalse(threads.submit(() -> acquireAndRelease(other.writeLock(), Duration.ofMillis(300)))
                .get(10, TimeUnit.SECONDS));
        assertFalse(queuedWriter.isDone());
        rw.readLock().release();
        queuedWriter.get(10, TimeUnit.SECONDS).close();
        zk.assertNoLeaks(path);
    }

    @Test
    void aReadHoldEndedInsideAWriteHoldLeavesOnlyTheWriteLockAcquired() throws Exception {
        String path = ZooKeeperFixture.uniquePath("downgrade-read-ends");
        ReadWriteMutex rw = new ReadWriteMutex(zk.newClient(), path);
        rw.writeLock().acquire();
        for (int round = 0; round < 3; round++) {
            rw.readLock().acquire();
            rw.readLock().release();
            assertFalse(rw.readLock().isAcquiredInThisProcess(), "round " + round);
            assertTrue(rw.writeLock().isAcquiredInThisProcess(), "round " + round);
        }
        rw.writeLock().release();
        assertFalse(rw.writeLock().isAcquiredInThisProcess());
        zk.assertNoLeaks(path);
    }

    @Test
    void aReaderWaitsBehindANodeOfAnotherKindOnItsPath() throws Exception {
        // Curator's InterProcessReadWriteLock names its writers __WRIT__, and a mutex sharing the path names its
        // holders lock-: a reader cannot tell whether either holds a lock it must respect, so it waits for them.
        String path = ZooKeeperFixture.uniquePath("foreign");
        CuratorFramework other = zk.newClient();
        ReadWriteMutex rw = new ReadWriteMutex(zk.newClient(), path);
        for (String foreign : List.of("__WRIT__", "lock-")) {
            String node = other.create()
                    .creatingParentContainersIfNeeded()
                    .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                    .forPath(path + "/_c_" + UUID.randomUUID() + "-" + foreign);
            assertFalse(rw.readLock().acquire(Duration.ZERO), "passed a " + foreign + " node");
            Future<Boolean> waiting = threads.submit(() -> acquireAndRelease(rw.readLock(), Duration.ofSeconds(20)));
            await().until(() -> other.getChildren().forPath(path).size() == 2); // queued behind it
            other.delete().forPath(node);
            assertTrue(waiting.get(30, TimeUnit.SECONDS));
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void upgradeIsRefusedAtOnce() throws Exception {
        String path = ZooKeeperFixture.uniquePath("upgrade");
        ReadWriteMutex rw = new ReadWriteMutex(zk.newClient(), path);
        rw.readLock().acquire();
        IllegalStateException e =
                assertThrows(IllegalStateException.class, () -> rw.writeLock().acquire());
        assertEquals(
                "the current thread holds the read lock on " + path
                        + " and would wait behind itself for the write lock; release the read lock first",
                e.getMessage());
        assertThrows(IllegalStateException.class, () -> rw.writeLock().acquire(Duration.ZERO));
        // Asked for asynchronously, it would be granted only after the read lock's release: a thread that waited for
        // it would wait for ever.
        assertThrows(IllegalStateException.class, () -> rw.writeLock().acquireAsync());
        // Through the Lock view, tryLock answers false, as ReentrantReadWriteLock's write lock does for a reader;
        // lock() throws rather than wait behind itself for ever.
        Lock write = rw.writeLock().asLock();
        assertFalse(write.tryLock());
        assertFalse(write.tryLock(1, TimeUnit.SECONDS));
        assertThrows(IllegalStateException.class, write::lock);
        assertEquals(1, rw.readLock().participants().size());
        rw.readLock().release();
        zk.assertNoLeaks(path);
    }

    @Test
    void bothLocksAreReentrantPerThread() throws Exception {
        String path = ZooKeeperFixture.uniquePath("reentrant");
        ReadWriteMutex rw = new ReadWriteMutex(zk.newClient(), path);
        rw.writeLock().acquire();
        rw.writeLock().acquire();
        rw.readLock().acquire();
        rw.readLock().acquire();
        assertEquals(2, rw.writeLock().holdCount());
        assertEquals(2, rw.readLock().holdCount());
        assertEquals(1, rw.readLock().participants().size());
        rw.readLock().release();
        rw.readLock().release();
        rw.writeLock().release();
        assertEquals(LeaseState.HELD, rw.writeLock().lease().state());
        rw.writeLock().release();
        assertThrows(IllegalMonitorStateException.class, () -> rw.readLock().release());
        zk.assertNoLeaks(path);
    }

    @Test
    void writerFencingTokensRise() throws Exception {
        String path = ZooKeeperFixture.uniquePath("tokens");
        ReadWriteMutex rw = new ReadWriteMutex(zk.newClient(), path);
        long last = 0;
        for (int i = 0; i < 4; i++) {
            rw.readLock().acquire();
            rw.readLock().release();
            rw.writeLock().acquire();
            long token = rw.writeLock().lease().fencingToken();
            assertTrue(token > last);
            last = token;
            rw.writeLock().release();
        }
        zk.assertNoLeaks(path);
    }

    @Test
    void timeoutInterruptAndCancelLeaveNoZnode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("withdraw");
        ReadWriteMutex writer = new ReadWriteMutex(zk.newClient(), path);
        ReadWriteMutex other = new ReadWriteMutex(zk.newClient(), path);
        writer.writeLock().acquire();
        assertFalse(threads.submit(() -> other.readLock().acquire(Duration.ofMillis(200)))
                .get(10, TimeUnit.SECONDS));
        Future<?> interrupted = threads.submit(() -> {
            other.writeLock().acquire();
            return null;
        });
        await().until(() -> writer.readLock().participants().size() == 2);
        interrupted.cancel(true);
        CompletableFuture<Lease> cancelled = other.readLock().acquireAsync();
        await().until(() -> writer.readLock().participants().size() >= 2);
        cancelled.cancel(false);
        await().until(() -> writer.readLock().participants().size() == 1);
        writer.writeLock().release();
        zk.assertNoLeaks(path);
    }

    @Test
    void invalidArgumentsAreRefused() {
        var client = zk.unstartedClient();
        assertEquals(
                "client must not be null",
                assertThrows(NullPointerException.class, () -> new ReadWriteMutex(null, "/rw"))
                        .getMessage());
        assertEquals(
                "path must not be null",
                assertThrows(IllegalArgumentException.class, () -> new ReadWriteMutex(client, null))
                        .getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ReadWriteMutex(client, "rw"))
                .getMessage()
                .startsWith("invalid ZooKeeper path \"rw\""));
        assertEquals(
                "participantId must not be null",
                assertThrows(NullPointerException.class, () -> new ReadWriteMutex(client, "/rw", null))
                        .getMessage());
        ReadWriteMutex rw = new ReadWriteMutex(client, "/rw");
        assertEquals(
                "timeout must not be negative: PT-0.001S",
                assertThrows(IllegalArgumentException.class, () -> rw.readLock().acquire(Duration.ofMillis(-1)))
                        .getMessage());
    }

    private static boolean acquireAndRelease(DistributedLock lock, Duration timeout) throws InterruptedException {
        if (!lock.acquire(timeout)) {
            return false;
        }
        lock.release();
        return true;
    }
}
