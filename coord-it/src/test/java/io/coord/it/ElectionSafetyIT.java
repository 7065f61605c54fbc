package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.core.Participant;
import io.coord.election.LeaderLatch;
import io.coord.election.LeaderListener;
import io.coord.it.ExclusionChecker.Holder;
import io.coord.it.ExclusionChecker.Mode;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * One valid leader at a time, rising epochs and a settled outcome for {@link LeaderLatch} sharing an election with
 * Curator's latch, while servers die and sessions expire. Leaders also step down on their own now and then, so that
 * leadership changes hands often enough to mean something.
 */
class ElectionSafetyIT {
    private static final int COORD_PARTICIPANTS = 5;
    private static final int CURATOR_PARTICIPANTS = 2;
    private static final Mode TERM = Mode.exclusive("leader");
    // A leader leads this long, at random, before it steps down by itself.
    private static final int MIN_TERM_MILLIS = 150;
    private static final int MAX_TERM_MILLIS = 600;
    private static final Duration SETTLE = Duration.ofSeconds(30);

    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    private final Timeline timeline = new Timeline();
    private final Set<Long> coordEpochs = ConcurrentHashMap.newKeySet();
    private final AtomicInteger curatorTerms = new AtomicInteger();
    private ExclusionChecker checker;
    private ScheduledExecutorService stepDowns;

    @BeforeEach
    void startStepDowns() {
        stepDowns = Executors.newSingleThreadScheduledExecutor();
    }

    @AfterEach
    void closeClients() {
        stepDowns.shutdownNow();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(EngineMode.class)
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void oneValidLeaderWithRisingEpochsWhileServersDieAndSessionsExpire(EngineMode mode, TestReporter report)
            throws Exception {
        cluster.mode(mode);
        String path = ZooKeeperFixture.uniquePath("election-safety");
        ChaosRun run = new ChaosRun(cluster, timeline, ChaosRun.LENGTH);
        // A leader holds for long, so it is often the one whose session the servers end before it hears so. The
        // referee, whose client is no target of the faults, tells such a stale leader from a second true one.
        CuratorFramework referee = cluster.newClient();
        checker = new ExclusionChecker(timeline, Integer.MAX_VALUE, StaleHolders.Referee.readingThrough(referee));
        List<LeaderLatch> latches = new ArrayList<>();
        List<CuratorLatchSeat> seats = new ArrayList<>();
        for (int i = 0; i < COORD_PARTICIPANTS; i++) {
            String id = "coord-" + i;
            CuratorFramework client = run.newClient(id);
            LeaderLatch latch = new LeaderLatch(client, path, id);
            latch.addListener(new TermTracker(id, client), Runnable::run);
            latches.add(latch);
        }
        for (int i = 0; i < CURATOR_PARTICIPANTS; i++) {
            String id = "curator-" + i;
            seats.add(new CuratorLatchSeat(
                    run.newClient(id), path, id, timeline, curatorTerms::incrementAndGet, this::stepDownLater));
        }
        latches.forEach(LeaderLatch::start);
        seats.forEach(CuratorLatchSeat::start);
        run.run();
        // No more stepping down: from here on, leadership only has to settle.
        stepDowns.shutdownNow();
        assertTrue(stepDowns.awaitTermination(10, TimeUnit.SECONDS), "a step-down is stuck");

        String summary = run.describe() + ", " + coordEpochs.size() + " coord terms, " + curatorTerms.get()
                + " Curator terms, " + checker.refusals() + " terms lost before they were seen, "
                + checker.staleHolders()
                + " stale leaders (longest " + checker.longestStale().toMillis() + " ms)";
        report.publishEntry("run", summary);
        assertEquals(0, checker.violationCount(), () -> summary + checker.report());
        assertTrue(coordEpochs.size() >= 7, "too few coord terms to mean anything: " + summary);
        assertTrue(curatorTerms.get() >= 1, "Curator's latch never led: " + summary);
        assertTrue(run.chaos().kills() >= 1, "no server was killed: " + summary);
        assertTrue(run.chaos().serverExpiries() >= 1, "no session expired: " + summary);
        try {
            assertOneLeader(latches, seats);
        } catch (AssertionError | ConditionTimeoutException e) {
            throw new AssertionError(
                    summary + "\n" + e.getMessage() + "\n" + state(referee, path, latches, seats)
                            + timeline.around(System.nanoTime(), SETTLE.plusSeconds(5), 80),
                    e);
        }

        latches.forEach(LeaderLatch::close);
        seats.forEach(CuratorLatchSeat::close);
        cluster.assertNoLeaks(run.clients().get(0), path);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void mixedLatchesElectOneLeaderAndHandOverInQueueOrderOnClose() throws Exception {
        String path = ZooKeeperFixture.uniquePath("election-interop");
        CuratorFramework reader = cluster.newClient();
        LeaderLatch first = new LeaderLatch(cluster.newClient(), path, "coord-first");
        org.apache.curator.framework.recipes.leader.LeaderLatch second =
                new org.apache.curator.framework.recipes.leader.LeaderLatch(
                        cluster.newClient(), path, "curator-second");
        LeaderLatch third = new LeaderLatch(cluster.newClient(), path, "coord-third");
        List<String> firstEvents = new CopyOnWriteArrayList<>();
        first.addListener(
                new LeaderListener() {
                    @Override
                    public void isLeader(Lease term) {
                        firstEvents.add("isLeader");
                    }

                    @Override
                    public void notLeader() {
                        firstEvents.add("notLeader");
                    }
                },
                Runnable::run);

        // One at a time, so that the queue order is the start order.
        first.start();
        await().until(() -> ClusterFixture.describeChildren(reader, path).size() == 1);
        second.start();
        await().until(() -> ClusterFixture.describeChildren(reader, path).size() == 2);
        third.start();
        await().until(() -> ClusterFixture.describeChildren(reader, path).size() == 3);

        assertTrue(first.await(Duration.ofSeconds(10)), "the first in the queue leads");
        long firstEpoch = first.term().orElseThrow().fencingToken();
        assertFalse(second.hasLeadership());
        assertFalse(third.hasLeadership());
        assertEquals("coord-first", third.leader().orElseThrow().id());

        first.close();
        assertTrue(second.await(10, TimeUnit.SECONDS), "Curator's latch, next in the queue, takes over");
        assertFalse(first.hasLeadership());
        assertFalse(third.hasLeadership(), "the coord latch behind Curator's must wait");
        assertEquals("curator-second", third.leader().orElseThrow().id());
        await("the closed leader heard it lost").until(() -> firstEvents.equals(List.of("isLeader", "notLeader")));

        second.close();
        assertTrue(third.await(Duration.ofSeconds(10)), "the last one takes over once Curator's latch left");
        long thirdEpoch = third.term().orElseThrow().fencingToken();
        assertTrue(thirdEpoch > firstEpoch, "epoch " + thirdEpoch + " after " + firstEpoch);
        assertEquals("coord-third", third.leader().orElseThrow().id());

        third.close();
        cluster.assertNoLeaks(reader, path);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    /** Waits until exactly one participant leads, and it is the first in the queue, for a while. */
    private static void assertOneLeader(List<LeaderLatch> latches, List<CuratorLatchSeat> seats) {
        await("exactly one leader")
                .atMost(SETTLE)
                .pollInterval(Duration.ofMillis(100))
                .untilAsserted(() -> {
                    List<String> leaders = leaders(latches, seats);
                    assertEquals(1, leaders.size(), "leaders " + leaders);
                    assertEquals(
                            leaders.get(0),
                            latches.get(0).leader().map(Participant::id).orElse("nobody"),
                            "the leader is not first in the queue "
                                    + latches.get(0).participants());
                });
        await("the same leader, alone")
                .during(Duration.ofSeconds(1))
                .atMost(Duration.ofSeconds(5))
                .until(() -> leaders(latches, seats).size() == 1);
        for (LeaderLatch latch : latches) {
            try {
                latch.await(Duration.ZERO); // throws if the latch left the election
            } catch (RuntimeException | InterruptedException e) {
                throw new AssertionError(latch + " is no longer in the election", e);
            }
        }
    }

    /** The queue as the server has it, and what each participant believes, for a failure message. */
    private static String state(
            CuratorFramework reader, String path, List<LeaderLatch> latches, List<CuratorLatchSeat> seats) {
        StringBuilder state = new StringBuilder("queue:");
        try {
            ClusterFixture.describeChildren(reader, path)
                    .forEach(child -> state.append("\n  ").append(child));
        } catch (Exception e) {
            state.append(" unreadable: ").append(e);
        }
        for (LeaderLatch latch : latches) {
            state.append("\n").append(latch.id()).append(": leads ").append(latch.hasLeadership());
            state.append(", term ").append(latch.term().map(Object::toString).orElse("none"));
        }
        for (CuratorLatchSeat seat : seats) {
            state.append("\n").append(seat.id()).append(": leads ").append(seat.hasLeadership());
        }
        return state.append("\n").toString();
    }

    private static List<String> leaders(List<LeaderLatch> latches, List<CuratorLatchSeat> seats) {
        List<String> leaders = new ArrayList<>();
        latches.stream().filter(LeaderLatch::hasLeadership).forEach(l -> leaders.add(l.id()));
        seats.stream().filter(CuratorLatchSeat::hasLeadership).forEach(s -> leaders.add(s.id()));
        return leaders;
    }

    /** Runs {@code stepDown} after a random term length, unless the run is over by then. */
    private void stepDownLater(Runnable stepDown) {
        try {
            stepDowns.schedule(
                    stepDown,
                    ThreadLocalRandom.current().nextLong(MIN_TERM_MILLIS, MAX_TERM_MILLIS),
                    TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException over) {
            // leadership is left to settle
        }
    }

    /** Follows one coord latch's terms through the checker, and makes each term end by itself after a while. */
    private final class TermTracker implements LeaderListener {
        private final String id;
        private final CuratorFramework client;
        private final AtomicReference<Holder> inside = new AtomicReference<>();

        TermTracker(String id, CuratorFramework client) {
            this.id = id;
            this.client = client;
        }

        @Override
        public void isLeader(Lease term) {
            coordEpochs.add(term.fencingToken());
            Optional<Holder> holder = checker.enter(id, TERM, term, ClusterFixture.sessionId(client));
            holder.ifPresent(inside::set);
            if (holder.isPresent()) {
                // Closing the term gives it up; the latch queues again at the back. A term already gone ignores it.
                stepDownLater(() -> {
                    timeline.add(id + " steps down from " + term);
                    term.close();
                });
            }
        }

        @Override
        public void notLeader() {
            Holder holder = inside.getAndSet(null);
            if (holder != null) {
                checker.exit(holder);
            }
        }
    }
}
