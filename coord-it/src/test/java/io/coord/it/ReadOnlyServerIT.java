package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.mutex.ReentrantMutex;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import io.coord.semaphore.DistributedSemaphore;
import io.coord.testkit.EmbeddedServer;
import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A client that may connect read-only ({@code canBeReadOnly}) to a server cut off from its quorum: such a server
 * answers reads and refuses every write, so coord counts the connection as no connection. A one-look acquisition is
 * refused as when disconnected, with nothing sent, and works again once the quorum is back; one that may wait, and a
 * release, which such a server refuses, go through then. A queue write that such a server refuses may have landed
 * before the connection moved there, and the queue finds out.
 */
@Timeout(120)
class ReadOnlyServerIT {
    private static final String READ_ONLY_MODE = "readonlymode.enabled";
    private static ZooKeeperEnsemble ensemble;

    @BeforeAll
    static void startEnsemble() throws Exception {
        System.setProperty(READ_ONLY_MODE, "true"); // read by a server each time it loses its quorum
        ensemble = ZooKeeperEnsemble.start(3);
    }

    @AfterAll
    static void stopEnsemble() throws Exception {
        try {
            ensemble.close();
        } finally {
            System.clearProperty(READ_ONLY_MODE);
        }
    }

    @Test
    void aOneLookAcquisitionOnAReadOnlyConnectionIsRefusedAsWhenDisconnected() throws Exception {
        String path = "/read-only/mutex";
        EmbeddedServer last = ensemble.servers().get(0);
        CuratorFramework client =
                ensemble.newClient(b -> b.connectString(last.address()).canBeReadOnly(true));
        ReentrantMutex mutex = new ReentrantMutex(client, path);
        assertTrue(mutex.acquire(Duration.ZERO)); // the parents are made while the quorum stands
        mutex.release();

        List<EmbeddedServer> others = ensemble.servers().subList(1, 3);
        others.forEach(EmbeddedServer::kill);
        await().atMost(Duration.ofSeconds(60)).until(() -> handleState(client) == ZooKeeper.States.CONNECTEDREADONLY);

        assertFalse(mutex.acquire(Duration.ZERO), "a read-only server takes no create");

        others.forEach(EmbeddedServer::restart);
        await().atMost(Duration.ofSeconds(60)).until(() -> handleState(client) == ZooKeeper.States.CONNECTED);
        await().atMost(Duration.ofSeconds(30)).pollInSameThread().until(() -> mutex.acquire(Duration.ZERO));
        mutex.release();
        await().until(() -> client.getChildren().forPath(path).isEmpty());
    }

    @Test
    void aReleaseAndAnAcquisitionThatAReadOnlyServerRefusesGoThroughOnceTheQuorumIsBack() throws Exception {
        EmbeddedServer last = ensemble.servers().get(0);
        // A long session: a read-only server gives the client a session of its own, but the quorum keeps the one that
        // holds the lock for its whole timeout once it is back, and the lock's node with it, unless deleted.
        CuratorFramework client = ensemble.newClient(
                b -> b.connectString(last.address()).canBeReadOnly(true).sessionTimeoutMs(20_000));
        ReentrantMutex held = new ReentrantMutex(client, "/read-only/released");
        ReentrantMutex wanted = new ReentrantMutex(client, "/read-only/wanted");
        assertTrue(held.acquire(Duration.ofSeconds(30)));

        List<EmbeddedServer> others = ensemble.servers().subList(1, 3);
        others.forEach(EmbeddedServer::kill);
        await().atMost(Duration.ofSeconds(60)).until(() -> handleState(client) == ZooKeeper.States.CONNECTEDREADONLY);
        held.release(); // the server refuses the delete
        // A semaphore's first use records its limit in the path's data: a write the server refuses too.
        CompletableFuture<Lease> permit = new DistributedSemaphore(client, "/read-only/permits", 2).acquireAsync(1);
        CompletableFuture<Boolean> acquiring = CompletableFuture.supplyAsync(() -> {
            try {
                boolean granted = wanted.acquire(Duration.ofSeconds(90)); // waits, as through any lost connection
                if (granted) {
                    wanted.release();
                }
                return granted;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });

        others.forEach(EmbeddedServer::restart);
        await().atMost(Duration.ofSeconds(60)).until(() -> handleState(client) == ZooKeeper.States.CONNECTED);
        assertTrue(acquiring.get(90, TimeUnit.SECONDS));
        permit.get(90, TimeUnit.SECONDS).close();
        // Well within the old session's timeout, which began again when the quorum came back.
        CuratorFramework other = ensemble.newClient();
        ReentrantMutex released = new ReentrantMutex(other, "/read-only/released");
        assertTrue(released.acquire(Duration.ofSeconds(10)));
        released.release();
    }

    @Test
    void aPutWhoseReplyIsLostAndWhoseResendMeetsAReadOnlyServerKnowsItLanded() throws Exception {
        String path = "/read-only/queue";
        EmbeddedServer first = ensemble.servers().get(0);
        try (ZooKeeperProxy proxy = ZooKeeperProxy.start(first.socketAddress())) {
            // Retries enough for Curator to send the transaction again once the read-only server takes the client.
            CuratorFramework client = ensemble.newClient(b -> b.connectString(proxy.connectString())
                    .canBeReadOnly(true)
                    .retryPolicy(new RetryNTimes(1_000, 100)));
            CuratorFramework reader = ensemble.newClient(b -> b.connectString(first.address()));
            DistributedQueue<String> queue = DistributedQueue.builder(client, path, QueueSerializer.utf8())
                    .build();
            queue.put("before"); // the parents and a write slot, while the quorum stands

            proxy.loseReplies(true);
            CompletableFuture<Void> put = CompletableFuture.runAsync(() -> {
                try {
                    queue.put("unanswered");
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> reader.checkExists().forPath(path + "/items").getNumChildren() == 2);
            List<EmbeddedServer> others = ensemble.servers().subList(1, 3);
            others.forEach(EmbeddedServer::kill);
            proxy.cutConnections();
            proxy.loseReplies(false);
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> handleState(client) == ZooKeeper.States.CONNECTEDREADONLY);
            others.forEach(EmbeddedServer::restart);

            put.get(60, TimeUnit.SECONDS); // it landed, which the transaction's resend, refused, cannot tell
            queue.put("after");
            List<String> items = new ArrayList<>();
            queue.drainTo(items, 10);
            assertEquals(List.of("before", "unanswered", "after"), items);
            await().until(() -> reader.getChildren().forPath(path + "/items").isEmpty());
        }
    }

    private static ZooKeeper.States handleState(CuratorFramework client) throws Exception {
        return client.getZookeeperClient().getZooKeeper().getState();
    }
}
