package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.core.internal.ClientContext;
import io.coord.election.LeaderLatch;
import io.coord.election.LeaderObserver;
import io.coord.mutex.ReentrantMutex;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import io.coord.testkit.RequestCounter;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * coord on a server from before persistent watches (3.5): such a server answers {@code addWatch} with UNIMPLEMENTED,
 * and then drops the connection. A client that meets it stops asking for views and waits with predecessor watches,
 * as when views are turned off; the connection blip is a SUSPECT and HELD again, never a loss.
 */
@Timeout(120)
class OldServerIT {
    private static OldServer server;
    private final List<CuratorFramework> clients = new ArrayList<>();

    @BeforeAll
    static void startServer() throws Exception {
        server = OldServer.start();
    }

    @AfterAll
    static void stopServer() throws Exception {
        server.stop();
    }

    @AfterEach
    void closeClients() {
        clients.forEach(CuratorFramework::close);
    }

    @Test
    void aMutexFallsBackToPredecessorWatchesAndStaysExclusive() throws Exception {
        String path = "/old/mutex";
        RequestCounter counter = new RequestCounter();
        CuratorFramework mine = client(counter);
        ReentrantMutex mutex = new ReentrantMutex(mine, path);
        for (int i = 0; i < 3; i++) { // from the second acquisition on, the client would follow the path with a view
            assertTrue(mutex.acquire(Duration.ofSeconds(30)));
            mutex.release();
        }
        await().until(() -> mine.getZookeeperClient().isConnected());
        assertFalse(ClientContext.of(mine).usesViews(), "a client told UNIMPLEMENTED asks for no more views");
        // Asked once; asked again if the answer was lost with the connection the server dropped.
        assertTrue(counter.count(path, "AddWatch") >= 1, () -> String.valueOf(counter.names(path)));

        counter.reset(); // from here on, no addWatch
        assertTrue(mutex.acquire(Duration.ofSeconds(30)));
        mutex.release();
        // The delete is sent as release() returns, and traced when answered.
        await().until(() -> counter.count(path) == 3);
        assertEquals(
                List.of("Create", "GetChildren", "Delete"),
                counter.names(path).stream()
                        .map(name -> name.substring(0, name.indexOf("BuilderImpl")))
                        .toList());

        ReentrantMutex theirs = new ReentrantMutex(client(null), path);
        assertTrue(mutex.acquire(Duration.ofSeconds(30)));
        Lease held = mutex.lease();
        CompletableFuture<Lease> waiting = theirs.acquireAsync();
        await().until(() -> mutex.participants().size() == 2);
        assertFalse(waiting.isDone(), "granted while another client holds the lock");
        assertEquals(LeaseState.HELD, held.state());
        mutex.release();
        Lease granted = waiting.get(30, TimeUnit.SECONDS);
        assertEquals(LeaseState.HELD, granted.state());
        assertTrue(granted.fencingToken() > held.fencingToken());
        granted.close();
        assertNoLeaks(mine, path);
    }

    @Test
    void leadershipMovesAndAnObserverFollowsItWithoutAView() throws Exception {
        String path = "/old/election";
        CuratorFramework observing = client(null);
        LeaderObserver observer = new LeaderObserver(observing, path);
        List<String> seen = new CopyOnWriteArrayList<>();
        observer.addListener(leader -> seen.add(leader.map(Participant::id).orElse("nobody")), Runnable::run);
        observer.start();
        LeaderLatch first = new LeaderLatch(client(null), path, "first");
        LeaderLatch second = new LeaderLatch(client(null), path, "second");
        first.start();
        assertTrue(first.await(Duration.ofSeconds(30)));
        second.start();
        await().until(() -> first.participants().size() == 2);

        first.close();
        assertTrue(second.await(Duration.ofSeconds(30)));
        await().until(() -> seen.contains("second"));
        assertFalse(first.hasLeadership());
        assertEquals(Optional.of("second"), observer.leader().map(Participant::id));
        second.close();
        await().until(() -> observer.leader().isEmpty());
        observer.close();
        assertNoLeaks(observing, path);
    }

    @Test
    void aQueueSaysItNeedsANewerServerAndLosesNothing() throws Exception {
        String path = "/old/queue";
        CuratorFramework client = client(null);
        DistributedQueue<String> queue =
                DistributedQueue.builder(client, path, QueueSerializer.utf8()).build();
        queue.putAll(List.of("a", "b"));

        CoordinationException refused =
                assertThrows(CoordinationException.class, () -> queue.poll(Duration.ofSeconds(30)));
        assertEquals(
                "the queue at " + path + "/items needs ZooKeeper 3.6 or later (persistent watches);"
                        + " the server answered UNIMPLEMENTED",
                refused.getMessage());
        await().until(() -> client.getZookeeperClient().isConnected());
        assertEquals(2, client.getChildren().forPath(path + "/items").size());
    }

    private CuratorFramework client(RequestCounter counter) throws InterruptedException {
        CuratorFramework client = server.newClient(counter);
        clients.add(client);
        return client;
    }

    private void assertNoLeaks(CuratorFramework reader, String path) {
        await().atMost(Duration.ofSeconds(15))
                .until(() -> reader.getChildren().forPath(path).isEmpty());
        await("no watches left on the old server")
                .atMost(Duration.ofSeconds(15))
                .until(() -> ZooKeeperFixture.watchCount(server.connectString()) == 0);
    }
}
