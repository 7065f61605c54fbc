package io.coord.bench.perf;

import io.coord.bench.Safety;
import io.coord.mutex.ReentrantMutex;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

/**
 * One mutex turn per session, through coord and through Curator, each checked by a guard that allows one holder:
 * the work of the contended scenarios (2 and 9).
 *
 * @param coord one turn on coord's {@code ReentrantMutex} per session
 * @param curator one turn on Curator's {@code InterProcessMutex} per session
 */
record MutexTurns(List<Load.Op> coord, List<Load.Op> curator) {
    /**
     * Unmeasured load per side before the rounds, in slices of this length. coord's contended path (a view hearing
     * other sessions' nodes, grants by event, or predecessor watches past the herd bound) shares little code with
     * scenario 1's, which warmed the uncontended one; measured cold, scenario 2's first quick window ran at about half
     * the speed of its fourth.
     */
    private static final Duration WARM_UP_SLICE = Duration.ofSeconds(2);
    /** The most a side warms up, however few turns it has taken. */
    private static final Duration WARM_UP_CAP = Duration.ofSeconds(40);

    /**
     * Runs every turn of both sides, unmeasured: one slice each, and more until the side has taken {@code minTurns}
     * turns (or {@link #WARM_UP_CAP} has passed). The JIT compiles a method after some thousands of calls, so a side's
     * per-turn code is warm after a number of turns, not of seconds. {@code what} names the progress line.
     */
    void warmUp(BenchContext ctx, String what, int minTurns) throws Exception {
        ctx.progress(what + ": warming up");
        for (List<Load.Op> side : List.of(coord, curator)) {
            long turns = 0;
            long started = System.nanoTime();
            do {
                Sample slice = new Sample("warm-up");
                Load.concurrent(ctx, slice, side, WARM_UP_SLICE);
                turns += slice.figures().ops();
            } while (turns < minTurns && System.nanoTime() - started < WARM_UP_CAP.toNanos());
        }
    }

    /**
     * Turns for every session on the two paths; {@code label} names the guards, e.g. "2" or "9". Both paths are
     * created first: otherwise every session's first turn would race to make them, its create failing and its client
     * making the parents, one exists and one create per level, with calls no tracer sees.
     */
    static MutexTurns of(
            BenchContext ctx, List<CuratorFramework> sessions, String label, String coordPath, String curatorPath)
            throws Exception {
        for (String path : List.of(coordPath, curatorPath)) {
            sessions.get(0).create().creatingParentsIfNeeded().forPath(path);
        }
        int n = sessions.size();
        Safety.Guard coordGuard = ctx.safety().guard(label + " coord ReentrantMutex, " + n + " sessions", 1);
        Safety.Guard curatorGuard = ctx.safety().guard(label + " Curator InterProcessMutex, " + n + " sessions", 1);
        List<Load.Op> coordOps = new ArrayList<>();
        List<Load.Op> curatorOps = new ArrayList<>();
        for (CuratorFramework session : sessions) {
            ReentrantMutex coordLock = new ReentrantMutex(session, coordPath);
            InterProcessMutex curatorLock = new InterProcessMutex(session, curatorPath);
            coordOps.add(() -> {
                coordLock.acquire();
                try {
                    coordGuard.enter(coordLock.lease().fencingToken());
                    coordGuard.exit();
                } finally {
                    coordLock.release();
                }
            });
            curatorOps.add(() -> {
                curatorLock.acquire();
                try {
                    curatorGuard.enter();
                    curatorGuard.exit();
                } finally {
                    curatorLock.release();
                }
            });
        }
        return new MutexTurns(coordOps, curatorOps);
    }
}
