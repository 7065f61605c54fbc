package io.coord.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.mutex.ReentrantMutex;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Mutual exclusion, fencing and progress of {@link ReentrantMutex} while servers die and sessions expire: five
 * clients with two worker threads each take turns on one path, and a chaos thread injects one fault at a time.
 */
class MutexSafetyIT {
    private static final int CLIENTS = 5;
    private static final int THREADS_PER_CLIENT = 2;
    private static final int MAX_TURNS_PER_WORKER = 5_000;
    private static final Duration ACQUIRE_TIMEOUT = Duration.ofSeconds(5);
    private static final long WORK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    private final Timeline timeline = new Timeline();

    @ParameterizedTest(name = "{0}")
    @EnumSource(EngineMode.class)
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void atMostOneValidHolderWithRisingTokensWhileServersDieAndSessionsExpire(EngineMode mode, TestReporter report)
            throws Exception {
        cluster.mode(mode);
        String path = ZooKeeperFixture.uniquePath("mutex-safety");
        ChaosRun run = new ChaosRun(cluster, timeline, ChaosRun.LENGTH);
        // The referee's client is no target of the faults.
        ExclusionChecker checker = new ExclusionChecker(
                timeline, Integer.MAX_VALUE, StaleHolders.Referee.readingThrough(cluster.newClient()));
        Turns turns = new Turns(checker, timeline, ACQUIRE_TIMEOUT);
        Map<String, ChaosRun.Turn> afterFaults = new LinkedHashMap<>();
        for (int c = 0; c < CLIENTS; c++) {
            CuratorFramework client = run.newClient("client-" + c);
            // The threads of a client share one mutex: they contend like two processes.
            ReentrantMutex mutex = new ReentrantMutex(client, path, "client-" + c);
            afterFaults.put("client-" + c, ChaosRun.Turn.of(mutex));
            for (int t = 0; t < THREADS_PER_CLIENT; t++) {
                String name = "client-" + c + "/worker-" + t;
                run.addWorker(name, deadline -> work(turns, name, client, mutex, deadline));
            }
        }
        run.run();

        String summary = run.describe() + ", " + checker.entries() + " turns, " + checker.refusals()
                + " refused for an invalid lease, " + checker.staleHolders() + " stale holders (longest "
                + checker.longestStale().toMillis() + " ms), " + turns.timeouts() + " timeouts, " + turns.lostOnGrant()
                + " holds lost as soon as granted, " + turns.describeLongHolds();
        report.publishEntry("run", summary);
        assertEquals(0, checker.violationCount(), () -> summary + checker.report());
        assertEquals(List.of(), turns.errors(), summary);
        assertTrue(checker.entries() > 33, "too few turns to mean anything: " + summary);
        assertTrue(run.chaos().kills() >= 1, "no server was killed: " + summary);
        assertTrue(run.chaos().serverExpiries() >= 1, "no session expired: " + summary);
        run.assertNoStall(checker, summary);
        run.assertEveryClientIsGrantedAfterTheFaults(afterFaults, summary);

        // Idle clients first: every released or withdrawn node is gone and no watch is left behind.
        cluster.assertNoLeaks(run.clients().get(0), path);
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    private static void work(Turns turns, String name, CuratorFramework client, ReentrantMutex mutex, long deadline)
            throws InterruptedException {
        for (int turn = 0; turn < MAX_TURNS_PER_WORKER && System.nanoTime() - deadline < 0; turn++) {
            turns.take(name, client, mutex, ExclusionChecker.Mode.EXCLUSIVE, WORK_NANOS);
        }
    }
}
