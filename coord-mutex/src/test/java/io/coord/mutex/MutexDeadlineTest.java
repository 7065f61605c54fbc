package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.ClientWatchers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/** Timeouts of any length, failures in the middle of a wait, and what waiting leaves behind. */
@InBothEngineModes
@Timeout(90)
class MutexDeadlineTest {
    private static final Duration FOREVER = ChronoUnit.FOREVER.getDuration();

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void aTimeoutTooLongForNanosecondsWaitsForEver() throws Exception {
        String path = ZooKeeperFixture.uniquePath("forever");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        ReentrantMutex waiter = new ReentrantMutex(zk.newClient(), path);
        holder.acquire();
        CompletableFuture<Boolean> granted = Background.call(() -> {
            boolean got = waiter.acquire(FOREVER);
            waiter.release();
            return got;
        });
        await().until(() -> holder.participants().size() == 2);
        assertFalse(granted.isDone());

        holder.release();

        assertTrue(granted.get(20, TimeUnit.SECONDS));
        assertTrue(holder.acquire(FOREVER)); // uncontended, too
        holder.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void aFailureAfterTheAttemptStartedWithdrawsItsNode() throws Exception {
        String path = ZooKeeperFixture.uniquePath("forced-failure");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        // One good read sets the deadline; the wait's next read of the clock throws, with the node already queued.
        ReentrantMutex broken = new ReentrantMutex(zk.newClient(), path, "broken", new BreakingTicker(1));
        ReentrantMutex next = new ReentrantMutex(zk.newClient(), path);
        holder.acquire();

        IllegalStateException error =
                assertThrows(IllegalStateException.class, () -> broken.acquire(Duration.ofSeconds(30)));
        assertEquals("the ticker broke", error.getMessage());
        assertEquals(0, broken.holdCount());
        await().until(() -> holder.participants().size() == 1);

        holder.release();
        assertTrue(next.acquire(Duration.ofSeconds(10)), "no orphan node blocks the lock");
        next.release();
        zk.assertNoLeaks(path);
    }

    @Test
    void timedOutAndCancelledWaitersLeaveNoWatchersBehind() throws Exception {
        String path = ZooKeeperFixture.uniquePath("watchers");
        ReentrantMutex holder = new ReentrantMutex(zk.newClient(), path);
        CuratorFramework waiterClient = zk.newClient();
        ReentrantMutex waiter = new ReentrantMutex(waiterClient, path);
        holder.acquire();

        for (int i = 0; i < 40; i++) {
            assertFalse(waiter.acquire(Duration.ofMillis(15)));
        }
        for (int i = 0; i < 200; i++) {
            CompletableFuture<Lease> pending = waiter.acquireAsync();
            pending.cancel(false);
        }
        await().until(() -> holder.participants().size() == 1);

        // However many waited on the holder's node, the client keeps at most one watcher for it.
        int watchers =
                ClientWatchers.dataWatchers(waiterClient.getZookeeperClient().getZooKeeper(), path);
        assertTrue(watchers <= 1, "watchers left: " + watchers);
        holder.release();
        zk.assertNoLeaks(path);
    }
}
