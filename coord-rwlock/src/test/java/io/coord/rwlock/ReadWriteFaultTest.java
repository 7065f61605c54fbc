package io.coord.rwlock;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.testkit.Background;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** A holder that downgraded, through a dropped connection and an expired session; threads of one instance. */
@InBothEngineModes
@Timeout(60)
class ReadWriteFaultTest {
    // A client of one server tries to reconnect every 1 to 2 s, then hears of its session or confirms its lease.
    private static final Duration AFTER_RECONNECT = Duration.ofSeconds(20);

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void aDowngradedHolderWhoseSessionExpiresLosesItsReadHoldAndTheQueuedWriterIsGrantedWithALargerToken()
            throws Exception {
        String path = ZooKeeperFixture.uniquePath("downgraded-expired");
        CuratorFramework holderClient = zk.newClient();
        ReadWriteMutex holder = new ReadWriteMutex(holderClient, path, "holder");
        ReadWriteMutex writer = new ReadWriteMutex(zk.newClient(), path, "writer");
        holder.writeLock().acquire();
        holder.readLock().acquire();
        holder.writeLock().release(); // downgraded: the read hold keeps the node
        Lease reading = holder.readLock().lease();
        CompletableFuture<Lease> queued = writer.writeLock().acquireAsync();
        await().until(() -> writer.writeLock().participants().size() == 2);

        zk.expireSession(holderClient);

        Lease granted = queued.get(10, TimeUnit.SECONDS);
        await().atMost(AFTER_RECONNECT).until(() -> reading.state() == LeaseState.LOST);
        assertTrue(granted.fencingToken() > reading.fencingToken());
        holder.readLock().release(); // the hold ended with the session: its release is quiet
        assertFalse(holder.readLock().isHeldByCurrentThread());
        granted.close();
        assertTrue(holder.readLock().acquire(Duration.ofSeconds(10)), "the holder's instance works on its new session");
        holder.readLock().release();
        zk.assertNoLeaks(path);
    }

    @Test
    void aDroppedConnectionMakesTheDowngradedHoldSuspectThenHeldAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("downgraded-dropped");
        ReadWriteMutex holder = new ReadWriteMutex(zk.newOutageProofClient(), path, "holder");
        holder.writeLock().acquire();
        holder.readLock().acquire();
        Lease shared = holder.readLock().lease();
        assertSame(shared, holder.writeLock().lease());

        zk.stopServer();
        try {
            await().until(() -> shared.state() == LeaseState.SUSPECT);
        } finally {
            zk.restartServer();
        }
        await().atMost(AFTER_RECONNECT).until(() -> shared.state() == LeaseState.HELD);
        holder.writeLock().release();
        assertEquals(LeaseState.HELD, holder.readLock().lease().state());
        holder.readLock().release();
        assertEquals(LeaseState.RELEASED, shared.state());
        zk.assertNoLeaks(path);
    }

    @Test
    void anotherThreadOfTheWriteHoldersInstanceIsKeptOutOfBothLocks() throws Exception {
        String path = ZooKeeperFixture.uniquePath("other-thread");
        ReadWriteMutex rw = new ReadWriteMutex(zk.newClient(), path);
        rw.writeLock().acquire();

        // Only the thread that holds the write lock may read under it.
        assertFalse(Background.call(() -> rw.readLock().acquire(Duration.ofMillis(200)))
                .get(10, TimeUnit.SECONDS));
        assertFalse(Background.call(() -> rw.writeLock().acquire(Duration.ofMillis(200)))
                .get(10, TimeUnit.SECONDS));
        // A timed-out attempt deletes its node once it knows the name: after the call when the create answers late.
        await().until(() -> rw.readLock().participants().size() == 1);
        rw.writeLock().release();
        assertTrue(Background.call(() -> {
                    boolean got = rw.readLock().acquire(Duration.ofSeconds(10));
                    rw.readLock().release();
                    return got;
                })
                .get(20, TimeUnit.SECONDS));
        zk.assertNoLeaks(path);
    }
}
