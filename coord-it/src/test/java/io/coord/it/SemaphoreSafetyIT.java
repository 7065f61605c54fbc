package io.coord.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Lease;
import io.coord.it.ExclusionChecker.Mode;
import io.coord.semaphore.DistributedSemaphore;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The permit limit, sharing and progress of {@link DistributedSemaphore} while servers die and sessions expire: four
 * clients with three worker threads each ask for one to three of three permits at a time, and a chaos thread injects
 * one fault at a time.
 */
class SemaphoreSafetyIT {
    private static final int MAX_LEASES = 3;
    private static final int CLIENTS = 4;
    private static final int THREADS_PER_CLIENT = 3;
    private static final int MAX_TURNS_PER_WORKER = 5_000;
    private static final Duration ACQUIRE_TIMEOUT = Duration.ofSeconds(5);
    private static final long WORK_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    /** The mode of a grant of n permits is at index n - 1. */
    private static final List<Mode> BY_PERMITS = IntStream.rangeClosed(1, MAX_LEASES)
            .mapToObj(n -> Mode.shared(n + (n == 1 ? " permit" : " permits"), n))
            .toList();

    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    private final Timeline timeline = new Timeline();

    @ParameterizedTest(name = "{0}")
    @EnumSource(EngineMode.class)
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void validLeasesNeverHoldMorePermitsThanTheLimitWhileServersDieAndSessionsExpire(
            EngineMode mode, TestReporter report) throws Exception {
        cluster.mode(mode);
        String path = ZooKeeperFixture.uniquePath("semaphore-safety");
        ChaosRun run = new ChaosRun(cluster, timeline, ChaosRun.LENGTH);
        // The referee's client is no target of the faults.
        ExclusionChecker checker =
                new ExclusionChecker(timeline, MAX_LEASES, StaleHolders.Referee.readingThrough(cluster.newClient()));
        Turns turns = new Turns(checker, timeline, ACQUIRE_TIMEOUT);
        Map<String, ChaosRun.Turn> afterFaults = new LinkedHashMap<>();
        for (int c = 0; c < CLIENTS; c++) {
            CuratorFramework client = run.newClient("client-" + c);
            // The threads of a client share one semaphore: its leases are handles, owned by whoever got them.
            DistributedSemaphore semaphore = new DistributedSemaphore(client, path, MAX_LEASES);
            afterFaults.put("client-" + c, timeout -> {
                Optional<Lease> all = semaphore.tryAcquire(MAX_LEASES, timeout);
                all.ifPresent(Lease::close);
                return all.isPresent();
            });
            for (int t = 0; t < THREADS_PER_CLIENT; t++) {
                String name = "client-" + c + "/worker-" + t;
                run.addWorker(name, deadline -> work(turns, name, client, semaphore, deadline));
            }
        }
        run.run();

        int multiPermitGrants = BY_PERMITS.stream()
                .filter(m -> m.permits() > 1)
                .mapToInt(checker::entries)
                .sum();
        String summary = run.describe() + ", grants of " + checker.describeEntries() + ", at most "
                + checker.peakHolders() + " holders at once, " + checker.refusals() + " refused for an invalid lease, "
                + checker.staleHolders() + " stale holders (longest "
                + checker.longestStale().toMillis() + " ms), "
                + turns.timeouts() + " timeouts, " + turns.describeLongHolds();
        report.publishEntry("run", summary);
        assertEquals(0, checker.violationCount(), () -> summary + checker.report());
        assertEquals(List.of(), turns.errors(), summary);
        assertTrue(checker.entries() > 200, "too few grants to mean anything: " + summary);
        assertTrue(multiPermitGrants >= 1, "no request for several permits was granted: " + summary);
        assertTrue(checker.peakHolders() >= 2, "no two holders ever shared the semaphore: " + summary);
        assertTrue(run.chaos().kills() >= 1, "no server was killed: " + summary);
        assertTrue(run.chaos().serverExpiries() >= 1, "no session expired: " + summary);
        run.assertNoStall(checker, summary);
        run.assertEveryClientIsGrantedAfterTheFaults(afterFaults, summary);

        // The path itself stays, a container holding the maxLeases record; no permit node may be left under it.
        cluster.assertNoLeaks(run.clients().get(0), path);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    private static void work(
            Turns turns, String name, CuratorFramework client, DistributedSemaphore semaphore, long deadline)
            throws InterruptedException {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int turn = 0; turn < MAX_TURNS_PER_WORKER && System.nanoTime() - deadline < 0; turn++) {
            turns.take(name, client, semaphore, BY_PERMITS.get(random.nextInt(MAX_LEASES)), WORK_NANOS);
        }
    }
}
