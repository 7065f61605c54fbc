package io.coord.rwlock;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.DistributedLock;
import io.coord.core.Lease;
import io.coord.testkit.Background;
import io.coord.testkit.BreakingTicker;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Both locks: timeouts of any length, failures in the middle of a wait, and holds that end with their lease. */
@InBothEngineModes
@Timeout(90)
class ReadWriteDeadlineTest {
    private static final Duration FOREVER = ChronoUnit.FOREVER.getDuration();

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    private static Function<ReadWriteMutex, DistributedLock> lock(String which) {
        return "read".equals(which) ? ReadWriteMutex::readLock : ReadWriteMutex::writeLock;
    }

    @ParameterizedTest
    @ValueSource(strings = {"read", "write"})
    void aTimeoutTooLongForNanosecondsWaitsForEver(String which) throws Exception {
        String path = ZooKeeperFixture.uniquePath("forever-" + which);
        DistributedLock writer = new ReadWriteMutex(zk.newClient(), path).writeLock();
        DistributedLock waiter = lock(which).apply(new ReadWriteMutex(zk.newClient(), path));
        writer.acquire();
        CompletableFuture<Boolean> granted = Background.call(() -> {
            boolean got = waiter.acquire(FOREVER);
            waiter.release();
            return got;
        });
        await().until(() -> writer.participants().size() == 2);

        writer.release();

        assertTrue(granted.get(20, TimeUnit.SECONDS));
        zk.assertNoLeaks(path);
    }

    @ParameterizedTest
    @ValueSource(strings = {"read", "write"})
    void aFailureAfterTheAttemptStartedWithdrawsItsNode(String which) throws Exception {
        String path = ZooKeeperFixture.uniquePath("forced-failure-" + which);
        DistributedLock writer = new ReadWriteMutex(zk.newClient(), path).writeLock();
        DistributedLock broken =
                lock(which).apply(new ReadWriteMutex(zk.newClient(), path, "broken", new BreakingTicker(1)));
        writer.acquire();

        IllegalStateException error =
                assertThrows(IllegalStateException.class, () -> broken.acquire(Duration.ofSeconds(30)));
        assertEquals("the ticker broke", error.getMessage());
        await().until(() -> writer.participants().size() == 1);

        writer.release();
        DistributedLock next = new ReadWriteMutex(zk.newClient(), path).writeLock();
        assertTrue(next.acquire(Duration.ofSeconds(10)), "no orphan node blocks the lock");
        next.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void closingTheSharedLeaseOfADowngradeEndsBothHolds() throws Exception {
        String path = ZooKeeperFixture.uniquePath("downgrade-closed");
        ReadWriteMutex rw = new ReadWriteMutex(zk.newClient(), path);
        DistributedLock other = new ReadWriteMutex(zk.newClient(), path).writeLock();
        rw.writeLock().acquire();
        rw.readLock().acquire(); // downgrade: shares the write lock's node
        Lease shared = rw.writeLock().lease();

        shared.close();

        assertEquals(0, rw.writeLock().holdCount());
        assertEquals(0, rw.readLock().holdCount());
        assertFalse(rw.readLock().isHeldByCurrentThread());
        rw.readLock().release(); // the releases owed to the ended holds are quiet
        rw.writeLock().release();
        assertThrows(IllegalMonitorStateException.class, rw.readLock()::release);
        assertThrows(IllegalMonitorStateException.class, rw.writeLock()::release);
        assertTrue(other.acquire(Duration.ofSeconds(10)));
        other.release();
        zk.assertNoLeaks(path);
    }
}
