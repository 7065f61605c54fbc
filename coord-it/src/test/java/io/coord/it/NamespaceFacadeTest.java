package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.DistributedLock;
import io.coord.core.Lease;
import io.coord.core.Participant;
import io.coord.election.LeaderLatch;
import io.coord.election.LeaderListener;
import io.coord.election.LeaderObserver;
import io.coord.election.LeaderSelector;
import io.coord.mutex.ReentrantMutex;
import io.coord.queue.Claim;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import io.coord.rwlock.ReadWriteMutex;
import io.coord.semaphore.DistributedSemaphore;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every primitive works on a namespace facade ({@code client.usingNamespace(...)}): each public operation, with a
 * second client contending through a facade of its own, its nodes under the namespace, and nothing left behind.
 */
@Timeout(120)
class NamespaceFacadeTest {
    private static final String NAMESPACE = "facade-ns";

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    /** One primitive's whole public surface, run on two facades of two clients, at {@code path} in the namespace. */
    @FunctionalInterface
    interface Exercise {
        void run(CuratorFramework one, CuratorFramework two, String path) throws Exception;
    }

    enum Primitive {
        MUTEX((one, two, path) -> exerciseLock(new ReentrantMutex(one, path), new ReentrantMutex(two, path))),
        READ_LOCK((one, two, path) -> {
            ReadWriteMutex mine = new ReadWriteMutex(one, path);
            DistributedLock writer = new ReadWriteMutex(two, path).writeLock();
            DistributedLock otherReader = new ReadWriteMutex(two, path).readLock();
            mine.readLock().acquire();
            assertTrue(otherReader.acquire(Duration.ZERO), "readers share");
            assertFalse(writer.acquire(Duration.ZERO));
            otherReader.release();
            mine.readLock().release();
            exerciseLock(new ReadWriteMutex(one, path).readLock(), writer);
        }),
        WRITE_LOCK((one, two, path) ->
                exerciseLock(new ReadWriteMutex(one, path).writeLock(), new ReadWriteMutex(two, path).writeLock())),
        SEMAPHORE((one, two, path) -> {
            DistributedSemaphore mine = new DistributedSemaphore(one, path, 2);
            DistributedSemaphore theirs = new DistributedSemaphore(two, path, 2);
            assertEquals(2, mine.maxLeases());
            Lease one1 = mine.acquire();
            Lease two1 = mine.tryAcquire(1, Duration.ofSeconds(10)).orElseThrow();
            assertEquals(2, theirs.participants().size());
            CompletableFuture<Lease> both = theirs.acquireAsync(2);
            await().until(() -> mine.participants().size() == 4);
            assertEquals(Optional.empty(), theirs.tryAcquire(1, Duration.ZERO));
            one1.close();
            two1.close();
            both.get(10, TimeUnit.SECONDS).close();
            mine.acquire(2).close();
        }),
        QUEUE((one, two, path) -> {
            // The queue's whole surface on a facade is covered in coord-queue; here it meets a second client.
            DistributedQueue<String> mine = DistributedQueue.builder(one, path, QueueSerializer.utf8())
                    .capacity(3)
                    .build();
            DistributedQueue<String> theirs = DistributedQueue.builder(two, path, QueueSerializer.utf8())
                    .capacity(3)
                    .build();
            assertTrue(mine.offer("a"));
            mine.put("b");
            mine.putAll(List.of("c"));
            assertFalse(theirs.offer("d", Duration.ZERO));
            assertEquals(3, theirs.size());
            assertEquals("a", theirs.peek());
            Claim<String> claim = theirs.claim(Duration.ofSeconds(10)).orElseThrow();
            assertEquals("a", claim.item());
            assertEquals("b", mine.poll());
            claim.close();
            // The released item is back for the other client once it hears of the release, which may come after
            // its next poll: both items come out, once each.
            Set<String> rest = new HashSet<>();
            rest.add(mine.poll(Duration.ofSeconds(10)));
            rest.add(theirs.take());
            assertEquals(Set.of("a", "c"), rest);
            assertEquals(null, mine.poll());
        }),
        LATCH((one, two, path) -> {
            List<String> heard = new CopyOnWriteArrayList<>();
            LeaderLatch first = new LeaderLatch(one, path, "first");
            try (LeaderLatch second = new LeaderLatch(two, path, "second")) {
                first.addListener(listener(heard), Runnable::run);
                first.start();
                assertTrue(first.await(Duration.ofSeconds(10)));
                first.await();
                second.start();
                await().until(() -> first.participants().size() == 2);
                assertTrue(first.hasLeadership());
                assertEquals("first", first.id());
                assertTrue(first.term().orElseThrow().isValid());
                assertEquals("first", second.leader().orElseThrow().id());
                assertFalse(second.await(Duration.ZERO));
                first.close();
                assertTrue(second.await(Duration.ofSeconds(10)));
                await().until(() -> heard.equals(List.of("isLeader", "notLeader")));
            }
        }),
        SELECTOR((one, two, path) -> {
            CompletableFuture<Lease> led = new CompletableFuture<>();
            CompletableFuture<Void> done = new CompletableFuture<>();
            try (LeaderSelector first = new LeaderSelector(one, path, "first", term -> {
                        led.complete(term);
                        done.get(); // lead until interrupted
                    });
                    LeaderSelector second = new LeaderSelector(two, path, "second", term -> {})) {
                first.start();
                Lease term = led.get(10, TimeUnit.SECONDS);
                assertTrue(term.isValid());
                await().until(first::hasLeadership);
                second.start();
                await().until(() -> second.participants().size() == 2);
                assertEquals("first", second.leader().orElseThrow().id());
                first.interruptLeadership();
                await().until(() -> !first.hasLeadership());
                await().until(() -> second.participants().size() <= 1);
            }
        }),
        OBSERVER((one, two, path) -> {
            List<Optional<Participant>> seen = new CopyOnWriteArrayList<>();
            LeaderLatch latch = new LeaderLatch(two, path, "leader");
            try (LeaderObserver observer = new LeaderObserver(one, path)) {
                observer.addListener(seen::add, Runnable::run);
                observer.start();
                latch.start();
                latch.await();
                await().until(() -> observer.leader().map(Participant::id).equals(Optional.of("leader")));
                latch.close();
                await().until(() -> observer.leader().isEmpty());
                // Listeners are told in order, on another thread, after the observer's own answer has changed.
                await().until(() -> seen.get(seen.size() - 1).isEmpty());
                assertTrue(seen.stream().anyMatch(Optional::isPresent));
            }
            // A closed observer's watch stays on the server until the path next changes: change it.
            try (LeaderLatch after = new LeaderLatch(two, path, "after")) {
                after.start();
                after.await();
            }
        });

        final Exercise exercise;

        Primitive(Exercise exercise) {
            this.exercise = exercise;
        }
    }

    @ParameterizedTest
    @EnumSource(Primitive.class)
    void everyOperationWorksOnANamespaceFacade(Primitive primitive) throws Exception {
        String path = ZooKeeperFixture.uniquePath(primitive.name().toLowerCase());
        CuratorFramework base = zk.newClient();
        CuratorFramework one = base.usingNamespace(NAMESPACE);
        CuratorFramework two = zk.newClient().usingNamespace(NAMESPACE);

        primitive.exercise.run(one, two, path);

        String full = "/" + NAMESPACE + path;
        assertNotNull(base.checkExists().forPath(full), "nodes live under the namespace");
        if (primitive == Primitive.QUEUE) {
            // The queue's three parents are persistent: what must be gone is what lives beneath them.
            zk.assertNoLeaks(full + "/items");
            zk.assertNoLeaks(full + "/claims");
        } else {
            zk.assertNoLeaks(full);
        }
    }

    private static void exerciseLock(DistributedLock mine, DistributedLock theirs) throws Exception {
        mine.acquire();
        mine.acquire();
        assertEquals(2, mine.holdCount());
        assertTrue(mine.isHeldByCurrentThread());
        assertTrue(mine.isAcquiredInThisProcess());
        assertTrue(
                mine.lease().path().startsWith(mine.path() + "/"), mine.lease().path());
        assertEquals(1, theirs.participants().size());
        assertFalse(theirs.acquire(Duration.ZERO));
        CompletableFuture<Lease> waiting = theirs.acquireAsync();
        await().until(() -> mine.participants().size() == 2);
        mine.release();
        mine.release();
        // The waiter is woken by its watch, which a facade reports under the namespace-free path.
        waiting.get(10, TimeUnit.SECONDS).close();
        assertTrue(mine.acquire(Duration.ofSeconds(10)));
        mine.release();
        Lock lock = mine.asLock();
        assertTrue(lock.tryLock(10, TimeUnit.SECONDS));
        lock.unlock();
    }

    private static LeaderListener listener(List<String> heard) {
        return new LeaderListener() {
            @Override
            public void isLeader(Lease term) {
                heard.add("isLeader");
            }

            @Override
            public void notLeader() {
                heard.add("notLeader");
            }
        };
    }
}
