package io.coord.bench.perf;

import java.util.List;
import org.apache.curator.framework.CuratorFramework;

/**
 * Scenario 9, the herd check: one mutex, 256 sessions, one waiter each, every session looping acquire-release. With a
 * view in every client, each create and delete would be sent to all 256 of them: O(N²) notifications a round. coord's
 * herd bound sends a path that crowded back to predecessor watches, one notification per hand-off, as Curator has.
 * The packets the servers sent per acquisition (pkts/op: replies and notifications alike) are where a herd would
 * show.
 */
final class HerdCheck implements Scenario {
    static final int SESSIONS = 256;
    /**
     * Turns each side takes before the rounds. No earlier scenario runs coord's predecessor-watch path, while Curator's
     * InterProcessMutex has run through scenarios 1 to 3: after the 2 s the other contended scenario gives each side,
     * coord's path was still being compiled. With 256 sessions taking turns for 3 s at a time, its throughput rose from
     * 0.90 of Curator's to 1.03-1.21 of it by some 5,000 turns, while the JIT's and the collector's CPU (the process's
     * beyond its threads') fell from about 4.7 ms a turn to under 1 ms.
     */
    static final int WARM_UP_TURNS = 6_000;

    @Override
    public String id() {
        return "9";
    }

    @Override
    public String title() {
        return "the herd check: one mutex, " + SESSIONS + " sessions, one waiter each (vs InterProcessMutex)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        List<CuratorFramework> sessions = ctx.sessions(SESSIONS);
        String coordPath = ctx.path("s9", "coord");
        String curatorPath = ctx.path("s9", "curator");
        MutexTurns turns = MutexTurns.of(ctx, sessions, "9", coordPath, curatorPath);
        Sample coord = new Sample("coord ReentrantMutex");
        Sample curator = new Sample("Curator InterProcessMutex");
        turns.warmUp(ctx, "9 herd check, " + SESSIONS + " sessions", WARM_UP_TURNS);
        Rounds.run(
                ctx,
                "9 herd check, " + SESSIONS + " sessions",
                ctx.plan().rounds(),
                List.of(
                        () -> Load.concurrent(
                                ctx, coord, turns.coord(), ctx.plan().loadRun()),
                        () -> Load.concurrent(
                                ctx, curator, turns.curator(), ctx.plan().loadRun())));
        return List.of(new Row(id(), title(), SESSIONS + " sessions", coord.figures(), List.of(curator.figures()), ""));
    }
}
