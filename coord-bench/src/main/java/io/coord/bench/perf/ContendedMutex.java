package io.coord.bench.perf;

import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;

/**
 * Scenario 2: one mutex, every session looping acquire-release for a fixed time. Throughput is bounded by the
 * hand-off: coord's next waiter is granted by the delete notification alone, InterProcessMutex's reads the children
 * again first.
 */
final class ContendedMutex implements Scenario {
    private static final List<Integer> SESSIONS = List.of(8, 32);

    @Override
    public String id() {
        return "2";
    }

    @Override
    public String title() {
        return "one mutex, contended (vs InterProcessMutex)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        List<Row> rows = new ArrayList<>();
        for (int n : SESSIONS) {
            List<CuratorFramework> sessions = ctx.sessions(n);
            String coordPath = ctx.path("s2", "coord", String.valueOf(n));
            String curatorPath = ctx.path("s2", "curator", String.valueOf(n));
            MutexTurns turns = MutexTurns.of(ctx, sessions, "2", coordPath, curatorPath);
            turns.warmUp(ctx, "2 contended mutex, " + n + " sessions", 0);
            Sample coord = new Sample("coord ReentrantMutex");
            Sample curator = new Sample("Curator InterProcessMutex");
            Rounds.run(
                    ctx,
                    "2 contended mutex, " + n + " sessions",
                    ctx.plan().rounds(),
                    List.of(
                            () -> Load.concurrent(
                                    ctx, coord, turns.coord(), ctx.plan().loadRun()),
                            () -> Load.concurrent(
                                    ctx, curator, turns.curator(), ctx.plan().loadRun())));
            rows.add(new Row(id(), title(), n + " sessions", coord.figures(), List.of(curator.figures())));
        }
        return rows;
    }
}
