package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.core.Lease;
import io.coord.core.Participant;
import io.coord.mutex.ReentrantMutex;
import io.coord.testkit.EmbeddedServer;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A create that the server applied but whose reply was lost is sent again on reconnection, which makes a second
 * node of the same contender. The first one must not be left in the queue: nobody would ever delete it while the
 * session lives, and everyone behind it would wait for ever.
 */
class ReplayedCreateIT {
    private static final Duration GRANT_WAIT = Duration.ofSeconds(10);

    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void queueKeepsMovingWhenACreateIsReplayedAfterItsReplyWasLost() throws Exception {
        String path = ZooKeeperFixture.uniquePath("replayed-create");
        CuratorFramework holderClient = cluster.newClient();
        ReentrantMutex holder = new ReentrantMutex(holderClient, path, "holder");
        ReentrantMutex early = new ReentrantMutex(cluster.newClient(), path, "early");
        ReentrantMutex late = new ReentrantMutex(cluster.newClient(), path, "late");
        EmbeddedServer server = cluster.servers().get(0);
        try (ZooKeeperProxy proxy = ZooKeeperProxy.start(server.socketAddress())) {
            CuratorFramework replayedClient = cluster.newClient(proxy.connectString());
            ReentrantMutex replayed = new ReentrantMutex(replayedClient, path, "replayed");

            holder.acquire();
            CompletableFuture<Lease> earlyGrant = early.acquireAsync();
            awaitQueue(holder, "holder", "early");

            // The create reaches the server and is applied, but its reply never comes back.
            proxy.loseReplies(true);
            CompletableFuture<Lease> replayedGrant = replayed.acquireAsync();
            awaitQueue(holder, "holder", "early", "replayed");
            proxy.refuseConnections(true);
            proxy.cutConnections();
            // Somebody queues while that client is away, so its two nodes will not be neighbours.
            CompletableFuture<Lease> lateGrant = late.acquireAsync();
            awaitQueue(holder, "holder", "early", "replayed", "late");
            proxy.loseReplies(false);
            proxy.refuseConnections(false);
            await("the client behind the proxy reconnects")
                    .atMost(Duration.ofSeconds(15))
                    .until(() -> replayedClient.getZookeeperClient().isConnected());
            // The replay happened, and its first node is gone: the client now queues behind the late one. (Without a
            // replay the queue would stay as it was, and this test would show nothing.)
            awaitQueue(holder, "holder", "early", "late", "replayed");

            holder.release();
            earlyGrant.get(GRANT_WAIT.toSeconds(), TimeUnit.SECONDS).close();
            // Both contenders still queued must now be served, one after the other, whatever order they take.
            for (int served = 0; served < 2; served++) {
                CompletableFuture<Object> next = CompletableFuture.anyOf(
                        replayedGrant.isDone() ? new CompletableFuture<>() : replayedGrant,
                        lateGrant.isDone() ? new CompletableFuture<>() : lateGrant);
                try {
                    ((Lease) next.get(GRANT_WAIT.toSeconds(), TimeUnit.SECONDS)).close();
                } catch (java.util.concurrent.TimeoutException e) {
                    throw new AssertionError(
                            "nobody was granted within " + GRANT_WAIT + "; the queue is " + describe(holder), e);
                }
            }

            cluster.assertNoLeaks(holderClient, path);
        }
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    private static void awaitQueue(ReentrantMutex mutex, String... ids) {
        await("queue " + List.of(ids))
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertEquals(
                        List.of(ids),
                        mutex.participants().stream().map(Participant::id).toList()));
    }

    private static String describe(ReentrantMutex mutex) {
        StringBuilder queue = new StringBuilder();
        for (Participant p : mutex.participants()) {
            queue.append("\n  ").append(p.id()).append(": ").append(p.nodeName());
        }
        return queue.toString();
    }
}
