package io.coord.bench.perf;

import java.time.Duration;
import java.util.List;

/**
 * How much work each scenario does. Every size the issue names is kept in the full plan; {@code --quick} shortens the
 * timed runs and rounds, and shrinks only scenarios 3 and 8, which the run's notes then say.
 *
 * @param quick whether this is the {@code --quick} plan
 * @param rounds A/B rounds for the timed scenarios (see {@link Rounds}: coord first in odd rounds, Curator in even)
 * @param uncontendedOps acquire+release pairs per side per round in scenario 1
 * @param loadRun how long each side runs per round in scenarios 2, 4 and 5
 * @param handOffWaiters queue lengths of scenario 3
 * @param handOffsPerSize hand-offs to measure per side at each queue length (whole queues, at least one)
 * @param queueItems the offer-then-drain sizes of scenario 6
 * @param failovers leader changes per side per round in scenario 7
 * @param asyncCoordWaiters coord's pending acquisitions in scenario 8
 * @param asyncCuratorWaiters Curator's blocked waiter threads in scenario 8
 */
public record Plan(
        boolean quick,
        int rounds,
        int uncontendedOps,
        Duration loadRun,
        List<Integer> handOffWaiters,
        int handOffsPerSize,
        List<Integer> queueItems,
        int failovers,
        int asyncCoordWaiters,
        int asyncCuratorWaiters) {

    public static final int ASYNC_WAITERS_NAMED = 10_000;

    public Plan {
        handOffWaiters = List.copyOf(handOffWaiters);
        queueItems = List.copyOf(queueItems);
    }

    /** The plan for {@code bench}, or for {@code bench --quick}. */
    public static Plan of(boolean quick) {
        return quick ? shortened() : standard();
    }

    private static Plan standard() {
        return new Plan(
                false,
                4, // rounds
                500, // uncontended ops per side per round
                Duration.ofSeconds(4), // each side's load per round
                List.of(10, 100, 1_000), // hand-off queue lengths
                1_000, // hand-offs per side and length
                List.of(1_000, 10_000), // queue items
                50, // failovers per side per round
                ASYNC_WAITERS_NAMED,
                1_000); // Curator's blocked waiter threads
    }

    private static Plan shortened() {
        return new Plan(
                true,
                2,
                250,
                Duration.ofMillis(750),
                List.of(10, 100, 1_000),
                100,
                List.of(1_000, 10_000),
                20,
                ASYNC_WAITERS_NAMED,
                300);
    }
}
