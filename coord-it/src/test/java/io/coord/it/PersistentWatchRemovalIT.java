package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.Participant;
import io.coord.core.internal.ClientContext;
import io.coord.election.LeaderLatch;
import io.coord.election.LeaderObserver;
import io.coord.mutex.ReentrantMutex;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.client.FourLetterWordMain;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * coord on a 3.8 server, which adds persistent watches but cannot remove one on its own: it knows only the removal
 * types from before them, and answers the newer ones MARSHALLINGERROR. A client that meets that answer takes no more
 * views, so that no more watches stay behind; the ones it has set stay until its session ends, and go with it.
 */
@Timeout(120)
class PersistentWatchRemovalIT {
    private static OldServer server;
    private final List<CuratorFramework> clients = new ArrayList<>();

    @BeforeAll
    static void startServer() throws Exception {
        server = OldServer.start("zookeeper-38.lib");
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
    void aClientWhoseViewsWatchCannotBeRemovedTakesNoMoreViewsAndStaysExclusive() throws Exception {
        CuratorFramework mine = client();
        ZooKeeperFixture.lingerViews(mine, Duration.ofMillis(200));
        ReentrantMutex first = new ReentrantMutex(mine, "/v38/first");
        for (int i = 0; i < 3; i++) { // from the second acquisition on, the client follows the path with a view
            assertTrue(first.acquire(Duration.ofSeconds(30)));
            if (i == 2) { // while the view is in use, so that it cannot linger out
                assertTrue(ClientContext.of(mine).usesViews(), "the server adds persistent watches");
            }
            first.release();
        }
        await("the view lingered out, and its removal was refused")
                .atMost(Duration.ofSeconds(30))
                .until(() -> !ClientContext.of(mine).usesViews());

        // A path used from now on waits with predecessor watches, and leaves no watch behind.
        ReentrantMutex mutex = new ReentrantMutex(mine, "/v38/second");
        ReentrantMutex theirs = new ReentrantMutex(client(), "/v38/second");
        for (int i = 0; i < 3; i++) {
            assertTrue(mutex.acquire(Duration.ofSeconds(30)));
            Lease held = mutex.lease();
            CompletableFuture<Lease> waiting = theirs.acquireAsync();
            await().until(() -> mutex.participants().size() == 2);
            assertFalse(waiting.isDone(), "granted while another client holds the lock");
            mutex.release();
            Lease granted = waiting.get(30, TimeUnit.SECONDS);
            assertTrue(granted.fencingToken() > held.fencingToken());
            granted.close();
        }
        String session =
                "0x" + Long.toHexString(mine.getZookeeperClient().getZooKeeper().getSessionId());
        // The other client, which has not met the refusal yet, follows the path with a view of its own.
        await().atMost(Duration.ofSeconds(15))
                .until(() -> watchers("/v38/second").stream().noneMatch(session::equals));
        assertEquals(List.of(session), watchers("/v38/first"), "the view's watch stays while its session lives");

        mine.close();
        await("the watch went with the session")
                .atMost(Duration.ofSeconds(15))
                .until(() -> watchers("/v38").stream().noneMatch(session::equals));
    }

    @Test
    void anObserverStartedOnceTheClientTakesNoViewsFollowsThroughTheViewItHasOfThePath() throws Exception {
        String path = "/v38/election";
        CuratorFramework mine = client();
        ZooKeeperFixture.lingerViews(mine, Duration.ofMillis(200));
        String session =
                "0x" + Long.toHexString(mine.getZookeeperClient().getZooKeeper().getSessionId());
        LeaderObserver early = new LeaderObserver(mine, path); // its view watches a path not made yet
        early.start();
        await("the view's watch is on").until(() -> watchers(path).contains(session));
        meetTheRefusal(mine);

        // On this server an exists watch of the client on the missing path would take the place of the view's watch,
        // and firing once the path is made, leave the view deaf: the observer joins the view instead.
        LeaderObserver late = new LeaderObserver(mine, path);
        late.start();
        LeaderLatch latch = new LeaderLatch(client(), path, "the-leader");
        latch.start();
        Optional<String> leading = Optional.of("the-leader");
        await().atMost(Duration.ofSeconds(30))
                .until(() -> early.leader().map(Participant::id).equals(leading)
                        && late.leader().map(Participant::id).equals(leading));
        latch.close();
        await().atMost(Duration.ofSeconds(30))
                .until(() -> early.leader().isEmpty() && late.leader().isEmpty());
        late.close();
        early.close();
    }

    /** Makes {@code client} meet a refused removal of a view's watch, on a path of its own: it takes no more views. */
    private static void meetTheRefusal(CuratorFramework client) throws Exception {
        ReentrantMutex mutex = new ReentrantMutex(client, "/v38/refusal-" + System.nanoTime());
        for (int i = 0; i < 2; i++) { // the second acquisition follows the path with a view
            assertTrue(mutex.acquire(Duration.ofSeconds(30)));
            mutex.release();
        }
        await("the view lingered out, and its removal was refused")
                .atMost(Duration.ofSeconds(30))
                .until(() -> !ClientContext.of(client).usesViews());
    }

    @Test
    void aQueueWaitsAndDeliversThoughItsWatchOutlivesItsWaiters() throws Exception {
        String path = "/v38/queue";
        CuratorFramework consuming = client();
        DistributedQueue<String> consumer = DistributedQueue.builder(consuming, path, QueueSerializer.utf8())
                .build();
        DistributedQueue<String> producer =
                DistributedQueue.builder(client(), path, QueueSerializer.utf8()).build();
        for (int round = 0; round < 3; round++) {
            String item = "item-" + round;
            AtomicReference<Thread> polling = new AtomicReference<>();
            CompletableFuture<String> taken = CompletableFuture.supplyAsync(() -> {
                polling.set(Thread.currentThread());
                try {
                    return consumer.poll(Duration.ofSeconds(30));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            await("the consumer waits")
                    .until(() -> polling.get() != null
                            && polling.get().getState() == Thread.State.TIMED_WAITING
                            && watchesUnder(path + "/items") == 1);
            producer.put(item);
            assertEquals(item, taken.get(30, TimeUnit.SECONDS));
        }
        assertEquals(1, watchesUnder(path + "/items"), "one watch however often the consumer waited");
        consuming.close();
        await("the watch went with the session").atMost(Duration.ofSeconds(15)).until(() -> watchesUnder(path) == 0);
    }

    private static int watchesUnder(String path) throws Exception {
        return watchers(path).size();
    }

    /** The sessions watching at or under {@code path}, one entry per session and path ({@code wchp}). */
    private static List<String> watchers(String path) throws Exception {
        String[] hostPort = server.connectString().split(":");
        String reply = FourLetterWordMain.send4LetterWord(hostPort[0], Integer.parseInt(hostPort[1]), "wchp");
        List<String> sessions = new ArrayList<>();
        boolean counting = false;
        for (String line : reply.split("\n")) {
            String trimmed = line.trim();
            if (trimmed.startsWith("/")) {
                counting = trimmed.equals(path) || trimmed.startsWith(path + "/");
            } else if (counting && trimmed.startsWith("0x")) {
                sessions.add(trimmed);
            }
        }
        return sessions;
    }

    private CuratorFramework client() throws InterruptedException {
        CuratorFramework client = server.newClient(null);
        clients.add(client);
        return client;
    }
}
