package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.election.LeaderLatch;
import io.coord.election.LeaderSelector;
import io.coord.mutex.ReentrantMutex;
import io.coord.queue.DistributedQueue;
import io.coord.queue.QueueSerializer;
import io.coord.testkit.ZooKeeperFixture;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Records a scripted run with Flight Recorder, reads the file back, and finds each kind of coord event with the fields
 * the run implies: acquisitions granted, timed out, cancelled and failed; holds released, revoked and lost; a lease
 * turning SUSPECT, HELD again and LOST; leadership gained and lost by a latch and a selector; queue offers, polls and
 * drains.
 */
@Timeout(120)
class FlightRecorderEventsTest {
    private static final List<String> EVENTS = List.of(
            "io.coord.Acquire", "io.coord.Hold", "io.coord.LeaseState", "io.coord.Leadership", "io.coord.Queue");

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @TempDir
    Path dir;

    @Test
    void recordingHoldsEveryKindOfEventWithItsFields() throws Exception {
        String locks = ZooKeeperFixture.uniquePath("jfr-locks");
        String election = ZooKeeperFixture.uniquePath("jfr-election");
        String jobs = ZooKeeperFixture.uniquePath("jfr-queue");
        Path file = dir.resolve("coord.jfr");
        try (Recording recording = new Recording()) {
            EVENTS.forEach(name -> recording.enable(name).withoutStackTrace());
            recording.start();
            runLocks(locks);
            runElection(election);
            runQueue(jobs);
            recording.stop();
            recording.dump(file);
        }
        zk.assertNoLeaks(locks);
        zk.assertNoLeaks(election);
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);

        List<RecordedEvent> acquires = of(events, "io.coord.Acquire", locks);
        assertEquals(
                Map.of("granted", 6L, "timed_out", 1L, "cancelled", 1L, "failed", 1L),
                count(acquires, "outcome"),
                "acquisitions by outcome");
        RecordedEvent timedOut = only(acquires, e -> e.getString("outcome").equals("timed_out"));
        assertEquals("mutex", timedOut.getString("primitive"));
        assertEquals("waiter", timedOut.getString("participant"));
        assertTrue(timedOut.getDuration("waitTime").toNanos() > 0, "a wait time");

        List<RecordedEvent> holds = of(events, "io.coord.Hold", locks);
        assertEquals(Map.of("released", 4L, "revoked", 1L, "lost", 1L), count(holds, "end"), "holds by end");
        RecordedEvent revoked = only(holds, e -> e.getString("end").equals("revoked"));
        assertEquals("mutex", revoked.getString("primitive"));
        assertEquals("waiter", revoked.getString("participant"));
        assertTrue(revoked.getLong("fencingToken") > 0, "a fencing token");
        assertTrue(revoked.getDuration("holdTime").toNanos() > 0, "a hold time");
        assertEquals(
                "waiter", only(holds, e -> e.getString("end").equals("lost")).getString("participant"));

        List<RecordedEvent> states = of(events, "io.coord.LeaseState", locks);
        List<String> changes = states.stream()
                .map(e -> e.getString("participant") + " " + e.getString("from") + ">" + e.getString("to"))
                .toList();
        // The server's restart; then the revocation, and the expiry (which may pass through SUSPECT).
        assertEquals(List.of("holder HELD>SUSPECT", "holder SUSPECT>HELD"), changes.subList(0, 2), "" + changes);
        assertEquals(
                2, states.stream().filter(e -> e.getString("to").equals("LOST")).count(), "two LOST: " + changes);

        List<RecordedEvent> leadership = of(events, "io.coord.Leadership", election);
        assertEquals(
                List.of("leader-latch gained", "leader-latch lost", "leader-selector gained", "leader-selector lost"),
                leadership.stream()
                        .map(e -> e.getString("primitive") + " " + e.getString("change"))
                        .toList());
        assertEquals("candidate", leadership.get(0).getString("participant"));

        List<RecordedEvent> queue = of(events, "io.coord.Queue", jobs);
        assertEquals(
                List.of("offer 1/1", "offer 3/3", "poll 1/1", "drain 3/10", "poll 0/1"),
                queue.stream()
                        .map(e -> e.getString("operation") + " " + e.getInt("items") + "/" + e.getInt("requested"))
                        .toList());
    }

    /** Nine acquisitions, six holds, a lease through a restart; one revoked by a delete, one lost by expiry. */
    private void runLocks(String path) throws Exception {
        CuratorFramework one = zk.newOutageProofClient(); // both hold on to their sessions through the restart
        CuratorFramework two = zk.newOutageProofClient();
        ReentrantMutex holder = new ReentrantMutex(one, path, "holder");
        ReentrantMutex waiter = new ReentrantMutex(two, path, "waiter");

        holder.acquire(); // granted
        assertFalse(waiter.acquire(Duration.ofMillis(200))); // timed out
        CompletableFuture<Lease> cancelled = waiter.acquireAsync();
        cancelled.cancel(true); // cancelled
        CuratorFramework doomed = zk.newClient();
        CompletableFuture<Lease> failed = new ReentrantMutex(doomed, path, "doomed").acquireAsync();
        await().until(() -> holder.participants().size() == 2);
        doomed.close(); // failed
        ExecutionException closed = assertThrows(ExecutionException.class, failed::get);
        assertTrue(
                closed.getCause().getMessage().contains(path), closed.getCause().getMessage());

        Lease held = holder.lease();
        zk.stopServer();
        await().until(() -> held.state() == LeaseState.SUSPECT);
        zk.restartServer();
        await().atMost(Duration.ofSeconds(20)).until(() -> held.state() == LeaseState.HELD);
        holder.release(); // released

        // A client that has seen no restart, and whose view of the path is primed by two turns, so that it learns
        // of its node's deletion from its view at once.
        CuratorFramework three = zk.newClient();
        ReentrantMutex later = new ReentrantMutex(three, path, "waiter");
        for (int i = 0; i < 2; i++) {
            later.acquire(); // granted
            later.release(); // released
        }
        Lease revoked = later.acquireAsync().get(10, TimeUnit.SECONDS); // granted
        one.delete().forPath(revoked.path());
        assertEquals(LeaseState.LOST, revoked.ended().get(10, TimeUnit.SECONDS)); // revoked

        Lease lost = later.acquireAsync().get(10, TimeUnit.SECONDS); // granted
        zk.expireSession(three);
        assertEquals(LeaseState.LOST, lost.ended().get(20, TimeUnit.SECONDS)); // lost
        assertTrue(holder.acquire(Duration.ofSeconds(10))); // granted
        holder.release();
    }

    private void runElection(String path) throws Exception {
        CuratorFramework client = zk.newClient();
        try (LeaderLatch latch = new LeaderLatch(client, path, "candidate")) {
            latch.start();
            assertTrue(latch.await(Duration.ofSeconds(10)));
        }
        CountDownLatch led = new CountDownLatch(1);
        try (LeaderSelector selector = new LeaderSelector(client, path, "candidate", term -> led.countDown())) {
            selector.start();
            assertTrue(led.await(10, TimeUnit.SECONDS));
            await().until(() -> !selector.hasLeadership());
        }
    }

    private void runQueue(String path) throws Exception {
        DistributedQueue<String> queue = DistributedQueue.builder(zk.newClient(), path, QueueSerializer.utf8())
                .build();
        assertTrue(queue.offer("a"));
        queue.putAll(List.of("b", "c", "d"));
        assertEquals("a", queue.poll());
        List<String> sink = new ArrayList<>();
        assertEquals(3, queue.drainTo(sink, 10, Duration.ofSeconds(5)));
        assertEquals(null, queue.poll(Duration.ofMillis(50)));
    }

    private static List<RecordedEvent> of(List<RecordedEvent> events, String name, String path) {
        return events.stream()
                .filter(e -> e.getEventType().getName().equals(name))
                .filter(e -> path.equals(e.getString("path")))
                .sorted((a, b) -> a.getEndTime().compareTo(b.getEndTime()))
                .toList();
    }

    private static Map<String, Long> count(List<RecordedEvent> events, String field) {
        return events.stream().collect(Collectors.groupingBy(e -> e.getString(field), Collectors.counting()));
    }

    private static RecordedEvent only(List<RecordedEvent> events, Predicate<RecordedEvent> which) {
        List<RecordedEvent> found = events.stream().filter(which).toList();
        assertEquals(1, found.size(), () -> "one event expected: " + found);
        return found.get(0);
    }
}
