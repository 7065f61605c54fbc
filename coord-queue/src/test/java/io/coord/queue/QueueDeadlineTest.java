package io.coord.queue;

import static io.coord.queue.TestQueues.queue;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.Deadline;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Timed calls end by their deadline whatever the connection does, and any non-negative timeout is accepted. */
@Timeout(90)
class QueueDeadlineTest {
    private static final Duration SHORT = Duration.ofMillis(300);
    // Well inside the 35 s or more that Curator's retries (20 tries, 2 s connection timeout) take to give up. The
    // clients' sessions outlast the outage: once a session timeout has passed disconnected, Curator replaces the
    // handle on the thread of the next request it is given, closing the old one there, which no deadline bounds.
    private static final long BOUND_SECONDS = 10;

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @FunctionalInterface
    private interface Call<V> {
        V call() throws InterruptedException;
    }

    /**
     * Runs a timed call on a thread of its own (not a shared pool's, which a call left blocked by an earlier test would
     * hold up), and fails the test with the call's stack if it is still running long after its deadline.
     */
    private static <V> V endsByItsDeadline(Call<V> call) throws Exception {
        CompletableFuture<V> result = new CompletableFuture<>();
        Thread calling = new Thread(() -> {
            try {
                result.complete(call.call());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        calling.start();
        try {
            return result.get(BOUND_SECONDS, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            StringBuilder stack = new StringBuilder();
            for (StackTraceElement frame : calling.getStackTrace()) {
                stack.append("\n\tat ").append(frame);
            }
            throw new AssertionError("the call still runs " + BOUND_SECONDS + " s after it began:" + stack, e);
        }
    }

    private static CountDownLatch suspension(CuratorFramework client) {
        return ZooKeeperFixture.latchOn(client, ConnectionState.SUSPENDED);
    }

    /**
     * Waits for the suspension, and until coord has heard of it too: Curator calls its connection listeners in no set
     * order, and a call made between the test's and coord's would be sent on a connection coord still believes up.
     */
    private static void awaitSuspended(CuratorFramework client, CountDownLatch suspended) throws InterruptedException {
        assertTrue(suspended.await(10, TimeUnit.SECONDS));
        await().until(() -> !ClientContext.of(client).isConnected());
    }

    @Test
    void timedCallsReturnByTheirDeadlineWhileTheServerIsDown() throws Exception {
        String path = ZooKeeperFixture.uniquePath("deadline-down");
        CuratorFramework client = zk.newOutageProofClient();
        DistributedQueue<String> queue = queue(client, path);
        queue.putAll(List.of("a", "b"));
        assertEquals("a", queue.poll()); // the consumer now caches "b"
        DistributedQueue<String> fresh =
                queue(zk.newOutageProofClient(), ZooKeeperFixture.uniquePath("deadline-fresh"));
        CountDownLatch suspended = suspension(client);

        zk.stopServer();
        awaitSuspended(client, suspended);

        assertFalse(endsByItsDeadline(() -> queue.offer("c", SHORT)), "nothing could be written");
        assertNull(endsByItsDeadline(() -> queue.poll(SHORT)), "nothing could be taken");
        assertEquals(Optional.empty(), endsByItsDeadline(() -> queue.claim(SHORT)));
        assertFalse(endsByItsDeadline(() -> fresh.offer("c", SHORT)));
        assertNull(endsByItsDeadline(() -> fresh.poll(SHORT)));
        assertEquals(Optional.empty(), endsByItsDeadline(() -> fresh.claim(SHORT)));

        zk.restartServer();
        assertEquals("b", queue.poll(Duration.ofSeconds(30)), "the cached item was left in place");
        assertNull(queue.poll(), "the offer that timed out wrote nothing");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void callsThatNeverWaitAnswerAtOnceWhileTheServerIsDownAndWriteOrTakeNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("never-wait-down");
        CuratorFramework client = zk.newOutageProofClient();
        DistributedQueue<String> queue = queue(client, path);
        queue.putAll(List.of("a", "b"));
        assertEquals("a", queue.poll()); // the consumer now caches "b", and the producer knows the count
        CountDownLatch suspended = suspension(client);

        zk.stopServer();
        awaitSuspended(client, suspended);

        assertFalse(endsByItsDeadline(() -> queue.offer("c", Duration.ZERO)), "nothing could be written");
        assertNull(endsByItsDeadline(() -> queue.poll(Duration.ZERO)), "nothing could be taken");
        assertEquals(Optional.empty(), endsByItsDeadline(() -> queue.claim(Duration.ZERO)));
        // Untimed calls that never wait say false or null only for a full or empty queue: they fail instead.
        String notConnected = ": the client is not connected to ZooKeeper, and this call does not wait";
        assertEquals(
                "not offering to " + path + "/items" + notConnected,
                endsByItsDeadline(() -> assertThrows(CoordinationException.class, () -> queue.offer("c")))
                        .getMessage());
        assertEquals(
                "not polling " + path + "/items" + notConnected,
                endsByItsDeadline(() -> assertThrows(CoordinationException.class, queue::poll))
                        .getMessage());
        assertEquals(
                "not draining " + path + "/items" + notConnected,
                endsByItsDeadline(() ->
                                assertThrows(CoordinationException.class, () -> queue.drainTo(new ArrayList<>(), 10)))
                        .getMessage());
        for (Call<?> peek : List.<Call<?>>of(queue::peek, queue::element)) {
            assertEquals(
                    "not peeking at " + path + "/items" + notConnected,
                    endsByItsDeadline(() -> assertThrows(CoordinationException.class, peek::call))
                            .getMessage());
        }
        for (Call<?> count : List.<Call<?>>of(queue::size, queue::isEmpty)) {
            assertEquals(
                    "not counting the items of " + path + "/items" + notConnected,
                    endsByItsDeadline(() -> assertThrows(CoordinationException.class, count::call))
                            .getMessage());
        }

        zk.restartServer();
        assertEquals("b", queue.poll(Duration.ofSeconds(30)), "the cached item was left in place");
        assertNull(queue.poll(), "the offers wrote nothing");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aPutWhileTheServerIsDownWaitsForTheConnectionInterruptiblyAndWritesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("put-down");
        CuratorFramework client = zk.newOutageProofClient();
        DistributedQueue<String> queue = queue(client, path);
        queue.put("a"); // the producer knows the count: the next put needs no read
        CountDownLatch suspended = suspension(client);
        zk.stopServer();
        awaitSuspended(client, suspended);

        CompletableFuture<Boolean> interrupted = new CompletableFuture<>();
        Thread putting = new Thread(() -> {
            try {
                queue.put("b");
                interrupted.complete(false);
            } catch (InterruptedException e) {
                interrupted.complete(true);
            } catch (RuntimeException e) {
                interrupted.completeExceptionally(e);
            }
        });
        putting.start();
        await().until(() -> putting.getState() == Thread.State.WAITING);
        putting.interrupt();
        assertTrue(interrupted.get(BOUND_SECONDS, TimeUnit.SECONDS), "the put gave up on its interrupt");

        zk.restartServer();
        assertEquals("a", queue.poll(Duration.ofSeconds(30)));
        assertNull(queue.poll(), "the interrupted put wrote nothing");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aTimeoutShorterThanARoundTripStillGetsTheLookOfTheCallThatNeverWaits() throws Exception {
        String path = ZooKeeperFixture.uniquePath("tiny-timeout");
        String small = ZooKeeperFixture.uniquePath("tiny-timeout-full");
        DistributedQueue<String> filler = queue(zk.newClient(), path);
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // Every answer takes far longer than the timeout, and each instance starts knowing nothing: no count, no
        // names, no write slot, no watch.
        proxy.delay(Duration.ofMillis(40));
        CuratorFramework slowClient = slowClient(proxy);
        DistributedQueue<String> slow = queue(slowClient, path);
        Duration tiny = Duration.ofNanos(1);

        // Timeouts up to the five round trips a fresh instance's poll takes here (the watch, the children, a write
        // slot, the item, its removal): the deadline may pass before any read answers, or between them.
        for (Duration timeout : List.of(
                tiny, Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(150), Duration.ofMillis(200))) {
            DistributedQueue<String> fresh = queue(slowClient(proxy), path);
            assertTrue(fresh.offer("x", timeout), () -> "offer with room, timeout " + timeout);
            assertEquals("x", queue(slowClient(proxy), path).poll(timeout), () -> "poll, timeout " + timeout);
        }

        assertTrue(slow.offer("a", tiny), "a queue with room takes the item, as offer(item) would");
        filler.putAll(List.of("b", "c", "d"));
        assertEquals("a", slow.poll(tiny), "the head is taken, as poll() would");
        Claim<String> claim = slow.claim(tiny).orElseThrow();
        assertEquals("b", claim.item());
        assertTrue(claim.ack());
        List<String> sink = new ArrayList<>();
        assertEquals(2, slow.drainTo(sink, 10, tiny));
        assertEquals(List.of("c", "d"), sink);
        assertNull(slow.poll(tiny), "empty: one look, then null");
        assertEquals(Optional.empty(), slow.claim(tiny));

        DistributedQueue<String> full = DistributedQueue.builder(slowClient, small, QueueSerializer.utf8())
                .capacity(1)
                .build();
        assertTrue(full.offer("only", tiny));
        assertFalse(full.offer("more", tiny), "full: one look, then false");

        proxy.delay(Duration.ZERO);
        assertEquals("only", queue(zk.newClient(), small).poll());
        slowClient.close();
        proxy.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
        QueueLeaks.assertDrainedAndNoLeaks(zk, small);
    }

    private static CuratorFramework slowClient(ZooKeeperProxy proxy) throws InterruptedException {
        return zk.newCustomClient(builder -> builder.connectString(proxy.connectString()));
    }

    /**
     * A client through {@code proxy} whose requests Curator would retry through a silence for minutes, so that only a
     * look's own bound ends it. Its session is the fixture's short one: the client notices a silence within seconds.
     */
    private static CuratorFramework retryingClient(ZooKeeperProxy proxy) throws InterruptedException {
        return zk.newCustomClient(
                builder -> builder.connectString(proxy.connectString()).retryPolicy(new RetryNTimes(1_000, 100)));
    }

    @Test
    void theLookOfACallThatRanOutWaitsInterruptiblyAndEndsWhenTheConnectionDrops() throws Exception {
        String path = ZooKeeperFixture.uniquePath("look-silent");
        DistributedQueue<String> filler = queue(zk.newClient(), path);
        filler.offer("a");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = retryingClient(proxy);
        DistributedQueue<String> silent = queue(client, path);
        proxy.loseReplies(true);

        CompletableFuture<Boolean> interrupted = new CompletableFuture<>();
        Thread polling = new Thread(() -> {
            try {
                silent.poll(Duration.ofNanos(1));
                interrupted.complete(false);
            } catch (InterruptedException e) {
                interrupted.complete(true);
            } catch (RuntimeException e) {
                interrupted.completeExceptionally(e);
            }
        });
        polling.start();
        await().until(() -> polling.getState() == Thread.State.WAITING); // in the look, for the children read
        polling.interrupt();
        assertTrue(interrupted.get(BOUND_SECONDS, TimeUnit.SECONDS), "the look gave up on its interrupt");

        assertNull(endsByItsDeadline(() -> silent.poll(Duration.ofNanos(1))), "the look ended with the connection");
        proxy.loseReplies(false);
        assertEquals("a", filler.poll(), "the item was left in place");
        client.close();
        proxy.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void theLookOfAClaimWaitingForAnotherCallersSessionMarkerEndsWhenTheConnectionDrops() throws Exception {
        String path = ZooKeeperFixture.uniquePath("look-marker");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = retryingClient(proxy);
        queue(client, path).offer("item"); // the queue's layout
        SharedQueue shared = SharedQueue.of(ClientContext.of(client), path);
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        proxy.loseReplies(true);
        // Taken while the client still believes itself connected: it notices the silence only after a while.
        Deadline look = shared.lookDeadline();
        assertNotNull(look, "the client still believes itself connected");

        // A caller that may wait makes the session's marker, whose answer never comes, for far longer than the bound.
        CompletableFuture<Boolean> interrupted = new CompletableFuture<>();
        Thread patient = new Thread(() -> {
            try {
                shared.marker.of(session, Deadline.after(Duration.ofSeconds(60)));
                interrupted.complete(false);
            } catch (InterruptedException e) {
                interrupted.complete(true);
            } catch (TimeoutException | RuntimeException e) {
                interrupted.completeExceptionally(e);
            }
        });
        patient.start();
        await().until(() -> patient.getState() == Thread.State.TIMED_WAITING); // for the create's answer

        Throwable ended = CompletableFuture.supplyAsync(() -> {
                                    try {
                                        return shared.marker.of(session, look);
                                    } catch (TimeoutException | InterruptedException e) {
                                        return e;
                                    }
                                })
                                .get(BOUND_SECONDS, TimeUnit.SECONDS)
                        instanceof Throwable thrown
                ? thrown
                : null;
        assertInstanceOf(TimeoutException.class, ended, "the look waited until the connection dropped, then gave up");
        assertEquals(
                "the look ended before the session marker under " + path + "/sessions was made: the connection dropped",
                ended.getMessage());
        assertEquals(Thread.State.TIMED_WAITING, patient.getState(), "the other caller still waits for its create");
        patient.interrupt();
        assertTrue(interrupted.get(BOUND_SECONDS, TimeUnit.SECONDS), "the other caller gave up on its interrupt");
        proxy.loseReplies(false);
        client.close();
        proxy.close();
        assertEquals("item", queue(zk.newClient(), path).poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aLookThatHasEndedCreatesNoSessionMarkerNorWriteSlot() throws Exception {
        String path = ZooKeeperFixture.uniquePath("look-ended-creates");
        CuratorFramework client = zk.newClient();
        queue(client, path).offer("item"); // the queue's layout, and one write slot
        SharedQueue shared = SharedQueue.of(ClientContext.of(client), path);
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        Slots.Slot idle = shared.slots.borrowFully();

        Deadline ended = Deadline.lookUntil(CompletableFuture.completedFuture(null));
        assertThrows(TimeoutException.class, () -> shared.marker.of(session, ended));
        assertThrows(TimeoutException.class, () -> shared.slots.borrow(ended));
        assertEquals(List.of(), client.getChildren().forPath(path + "/sessions"), "no marker was created");
        assertEquals(1, client.getChildren().forPath(path + "/slots").size(), "no slot was created");
        assertTrue(shared.marker.of(session).startsWith(path + "/sessions/s-"), "an untimed call then makes it");
        shared.slots.giveBack(idle);
        assertEquals("item", queue(client, path).poll());
        client.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void everyTimeoutUpToForeverIsAccepted() throws Exception {
        String path = ZooKeeperFixture.uniquePath("deadline-forever");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        List<Duration> timeouts = List.of(
                ChronoUnit.FOREVER.getDuration(),
                Duration.ofSeconds(Long.MAX_VALUE),
                Duration.ofNanos(Long.MAX_VALUE),
                Duration.ofNanos(Long.MAX_VALUE).plusNanos(1),
                ChronoUnit.MILLENNIA.getDuration(),
                Duration.ofDays(200 * 365)); // long, but a deadline still

        for (Duration timeout : timeouts) {
            assertTrue(queue.offer("offered", timeout), timeout::toString);
            assertEquals("offered", queue.poll(timeout), timeout::toString);
            assertTrue(queue.offer("claimed"));
            Claim<String> claim = queue.claim(timeout).orElseThrow();
            assertEquals("claimed", claim.item(), timeout::toString);
            assertTrue(claim.ack());
        }
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
