package io.coord.mutex;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.testkit.EngineMode;
import io.coord.testkit.InBothEngineModes;
import io.coord.testkit.ZooKeeperFixture;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

@InBothEngineModes
@Timeout(180)
class AsyncScaleTest {
    private static final int PENDING = 10_000;

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    @Test
    void tenThousandPendingAcquisitionsAddFewerThanTwentyThreads() throws Exception {
        String path = ZooKeeperFixture.uniquePath("scale");
        CuratorFramework client = zk.newClient();
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        Lease holder = mutex.acquireAsync().get(10, TimeUnit.SECONDS);
        int threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();

        List<CompletableFuture<Lease>> pending = new ArrayList<>(PENDING);
        for (int i = 0; i < PENDING; i++) {
            pending.add(mutex.acquireAsync());
        }
        await().atMost(Duration.ofSeconds(120))
                .pollInterval(Duration.ofMillis(500))
                .until(() -> client.checkExists().forPath(path).getNumChildren() == PENDING + 1);
        int threadsWhileWaiting = ManagementFactory.getThreadMXBean().getThreadCount();
        assertTrue(
                threadsWhileWaiting - threadsBefore < 20,
                "threads grew from " + threadsBefore + " to " + threadsWhileWaiting);
        assertTrue(pending.stream().noneMatch(CompletableFuture::isDone));

        // Withdraw them all; the holder keeps the lock throughout.
        pending.forEach(f -> f.cancel(false));
        await().atMost(Duration.ofSeconds(120))
                .pollInterval(Duration.ofMillis(500))
                .until(() -> client.checkExists().forPath(path).getNumChildren() == 1);
        assertTrue(holder.isValid());
        holder.close();
        zk.assertNoLeaks(path);
    }
}
