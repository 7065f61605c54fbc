package io.coord.bench.perf;

import java.util.List;

/**
 * The A/B rounds of a timed scenario. Each round runs every side once, one after another, and each round starts one
 * side further along: coord first in odd rounds, Curator first in even ones. On this kind of machine the servers'
 * and clients' code keeps warming up for tens of seconds, so the side that always ran second always ran on warmer
 * code: scenario 9 run alone measured 0.76 of Curator's throughput with coord first in every round, and 1.01–1.03
 * with alternating rounds after a warm-up of both sides.
 */
final class Rounds {

    /** One side's measured window in a round. */
    @FunctionalInterface
    interface Side {
        void run() throws Exception;
    }

    private Rounds() {}

    /** Runs {@code rounds} rounds of {@code sides}, reporting each as "{@code what}: round i/n". */
    static void run(BenchContext ctx, String what, int rounds, List<Side> sides) throws Exception {
        for (int round = 1; round <= rounds; round++) {
            ctx.progress(what + ": round " + round + "/" + rounds);
            for (int i = 0; i < sides.size(); i++) {
                sides.get((round - 1 + i) % sides.size()).run();
            }
        }
    }
}
