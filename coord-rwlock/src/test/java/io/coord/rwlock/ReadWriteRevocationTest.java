package io.coord.rwlock;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** Readers and writers can be asked to let go, or evicted, each through the lock they hold. */
@InBothEngineModes
@Timeout(90)
class ReadWriteRevocationTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void readersAskedToLetGoLetTheWriterIn() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-readers");
        ReadWriteMutex first = new ReadWriteMutex(zk.newClient(), path, "reader-1");
        ReadWriteMutex second = new ReadWriteMutex(zk.newClient(), path, "reader-2");
        ReadWriteMutex writer = new ReadWriteMutex(zk.newClient(), path, "writer");
        Lease one = first.readLock().acquireAsync().get(10, TimeUnit.SECONDS);
        Lease two = second.readLock().acquireAsync().get(10, TimeUnit.SECONDS);
        AtomicInteger asked = new AtomicInteger();
        for (Lease reader : List.of(one, two)) {
            reader.onRevocationRequested(
                    () -> {
                        asked.incrementAndGet();
                        reader.close();
                    },
                    Runnable::run);
        }
        CompletableFuture<Lease> writing = writer.writeLock().acquireAsync();
        await().until(() -> writer.readLock().participants().size() == 3);
        List<Participant> queue = writer.readLock().participants();

        assertFalse(writer.writeLock().requestRevocation(queue.get(2)), "the queued writer does not hold");
        IllegalArgumentException wrongLock = assertThrows(
                IllegalArgumentException.class, () -> writer.writeLock().requestRevocation(queue.get(0)));
        assertTrue(wrongLock.getMessage().contains("no W- node"), wrongLock.getMessage());
        assertTrue(writer.readLock().requestRevocation(queue.get(0)));
        assertTrue(writer.readLock().requestRevocation(queue.get(1)));

        Lease written = writing.get(10, TimeUnit.SECONDS);
        assertEquals(2, asked.get());
        assertEquals(LeaseState.RELEASED, one.ended().get(5, TimeUnit.SECONDS));
        assertEquals(LeaseState.RELEASED, two.ended().get(5, TimeUnit.SECONDS));
        written.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void writerAskedToLetGoHearsItOnce() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-writer");
        ReadWriteMutex writer = new ReadWriteMutex(zk.newClient(), path, "writer");
        ReadWriteMutex reader = new ReadWriteMutex(zk.newClient(), path, "reader");
        writer.writeLock().acquire();
        AtomicInteger asked = new AtomicInteger();
        writer.writeLock().lease().onRevocationRequested(asked::incrementAndGet, Runnable::run);
        Participant holder = reader.readLock().participants().get(0);

        assertThrows(IllegalArgumentException.class, () -> reader.readLock().requestRevocation(holder));
        assertTrue(reader.writeLock().requestRevocation(holder));

        await().until(() -> asked.get() == 1);
        assertTrue(writer.writeLock().isHeldByCurrentThread(), "cooperative: the writer decides");
        writer.writeLock().release();
        // The release's delete is asynchronous: ask once it has landed.
        await().until(() -> reader.readLock().participants().isEmpty());
        assertFalse(reader.writeLock().requestRevocation(holder));
        assertEquals(1, asked.get());
        zk.assertNoLeaks(path);
    }

    @Test
    void evictedWriterIsLostAndQueuedReadersAreGrantedWithLargerTokens() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-writer-forced");
        ReadWriteMutex writer = new ReadWriteMutex(zk.newClient(), path, "writer");
        ReadWriteMutex reader = new ReadWriteMutex(zk.newClient(), path, "reader");
        writer.writeLock().acquire();
        Lease evicted = writer.writeLock().lease();
        evicted.onRevocationRequested(() -> {}, Runnable::run);
        CompletableFuture<Lease> reading = reader.readLock().acquireAsync();
        await().until(() -> reader.readLock().participants().size() == 2);

        assertTrue(reader.writeLock()
                .forceRevocation(reader.readLock().participants().get(0)));

        assertEquals(LeaseState.LOST, evicted.ended().get(10, TimeUnit.SECONDS));
        assertFalse(writer.writeLock().isHeldByCurrentThread());
        Lease read = reading.get(10, TimeUnit.SECONDS);
        assertTrue(read.fencingToken() > evicted.fencingToken());
        writer.writeLock().release(); // owed by the ended hold: a quiet no-op
        read.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void evictedReaderIsLostAndTheWriterIsGranted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("revoke-reader-forced");
        ReadWriteMutex reader = new ReadWriteMutex(zk.newClient(), path, "reader");
        ReadWriteMutex writer = new ReadWriteMutex(zk.newClient(), path, "writer");
        reader.readLock().acquire();
        Lease evicted = reader.readLock().lease();
        evicted.onRevocationRequested(() -> {}, Runnable::run);
        CompletableFuture<Lease> writing = writer.writeLock().acquireAsync();
        await().until(() -> writer.readLock().participants().size() == 2);

        assertTrue(writer.readLock()
                .forceRevocation(writer.readLock().participants().get(0)));

        assertEquals(LeaseState.LOST, evicted.ended().get(10, TimeUnit.SECONDS));
        assertFalse(reader.readLock().isHeldByCurrentThread());
        Lease written = writing.get(10, TimeUnit.SECONDS);
        assertTrue(written.fencingToken() > evicted.fencingToken());
        reader.readLock().release();
        written.close();
        zk.assertNoLeaks(path);
    }
}
