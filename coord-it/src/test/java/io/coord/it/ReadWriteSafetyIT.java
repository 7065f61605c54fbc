package io.coord.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.it.ExclusionChecker.Mode;
import io.coord.rwlock.ReadWriteMutex;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Exclusion, sharing, fencing and progress of {@link ReadWriteMutex} while servers die and sessions expire: four
 * clients with three worker threads each read four times as often as they write on one path, and a chaos thread
 * injects one fault at a time.
 */
class ReadWriteSafetyIT {
    private static final int CLIENTS = 4;
    private static final int THREADS_PER_CLIENT = 3;
    private static final double WRITE_SHARE = 0.2;
    private static final int MAX_TURNS_PER_WORKER = 5_000;
    private static final Duration ACQUIRE_TIMEOUT = Duration.ofSeconds(5);
    // Readers linger a little longer than writers, so that readers granted together are seen together.
    private static final long READ_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    private static final long WRITE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final Mode READ = Mode.shared("read", 1);
    private static final Mode WRITE = Mode.exclusive("write");

    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    private final Timeline timeline = new Timeline();

    @ParameterizedTest(name = "{0}")
    @EnumSource(EngineMode.class)
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void writersExcludeValidHoldersAndReadersShareWhileServersDieAndSessionsExpire(EngineMode mode, TestReporter report)
            throws Exception {
        cluster.mode(mode);
        String path = ZooKeeperFixture.uniquePath("rwlock-safety");
        ChaosRun run = new ChaosRun(cluster, timeline, ChaosRun.LENGTH);
        // The referee's client is no target of the faults.
        ExclusionChecker checker = new ExclusionChecker(
                timeline, Integer.MAX_VALUE, StaleHolders.Referee.readingThrough(cluster.newClient()));
        Turns turns = new Turns(checker, timeline, ACQUIRE_TIMEOUT);
        Map<String, ChaosRun.Turn> afterFaults = new LinkedHashMap<>();
        for (int c = 0; c < CLIENTS; c++) {
            CuratorFramework client = run.newClient("client-" + c);
            // The threads of a client share one lock: each thread holds its own turns, as another process would.
            ReadWriteMutex lock = new ReadWriteMutex(client, path, "client-" + c);
            afterFaults.put("client-" + c, ChaosRun.Turn.of(lock.writeLock()));
            for (int t = 0; t < THREADS_PER_CLIENT; t++) {
                String name = "client-" + c + "/worker-" + t;
                run.addWorker(name, deadline -> work(turns, name, client, lock, deadline));
            }
        }
        run.run();

        String summary = run.describe() + ", " + checker.describeEntries() + ", at most " + checker.peak(READ)
                + " readers at once, " + checker.refusals() + " refused for an invalid lease, " + checker.staleHolders()
                + " stale holders (longest " + checker.longestStale().toMillis() + " ms), " + turns.timeouts()
                + " timeouts, " + turns.lostOnGrant() + " holds lost as soon as granted, " + turns.describeLongHolds();
        report.publishEntry("run", summary);
        assertEquals(0, checker.violationCount(), () -> summary + checker.report());
        assertEquals(List.of(), turns.errors(), summary);
        assertTrue(checker.entries(READ) > 333, "too few reads to mean anything: " + summary);
        assertTrue(checker.entries(WRITE) > 66, "too few writes to mean anything: " + summary);
        assertTrue(checker.peak(READ) >= 2, "readers never shared the lock: " + summary);
        assertTrue(run.chaos().kills() >= 1, "no server was killed: " + summary);
        assertTrue(run.chaos().serverExpiries() >= 1, "no session expired: " + summary);
        run.assertNoStall(checker, summary);
        run.assertEveryClientIsGrantedAfterTheFaults(afterFaults, summary);

        // Idle clients first: every released or withdrawn node is gone and no watch is left behind.
        cluster.assertNoLeaks(run.clients().get(0), path);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    private static void work(Turns turns, String name, CuratorFramework client, ReadWriteMutex lock, long deadline)
            throws InterruptedException {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int turn = 0; turn < MAX_TURNS_PER_WORKER && System.nanoTime() - deadline < 0; turn++) {
            if (random.nextDouble() < WRITE_SHARE) {
                turns.take(name, client, lock.writeLock(), WRITE, WRITE_NANOS);
            } else {
                turns.take(name, client, lock.readLock(), READ, READ_NANOS);
            }
        }
    }
}
