package io.coord.bench.perf;

import java.util.List;
import java.util.OptionalLong;
import org.apache.curator.framework.CuratorFramework;

/**
 * Scenario 9, the herd check: one mutex, 256 sessions, one waiter each, every session looping acquire-release. With a
 * view in every client, each create and delete would be sent to all 256 of them: O(N²) notifications a round. coord's
 * herd bound sends a path that crowded back to predecessor watches, one notification per hand-off, as Curator has.
 * The extra column is what the servers sent per acquisition (the {@code Sent} counter of {@code srvr}: replies and
 * notifications alike), which is where a herd would show.
 */
final class HerdCheck implements Scenario {
    static final int SESSIONS = 256;

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
        Sent coordSent = new Sent();
        Sent curatorSent = new Sent();
        turns.warmUp(ctx, "9 herd check, " + SESSIONS + " sessions");
        Rounds.run(
                ctx,
                "9 herd check, " + SESSIONS + " sessions",
                ctx.plan().rounds(),
                List.of(
                        () -> coordSent.measure(ctx, coord, turns.coord()),
                        () -> curatorSent.measure(ctx, curator, turns.curator())));
        coord.extra(coordSent.perOp());
        curator.extra(curatorSent.perOp());
        return List.of(new Row(
                id(), title(), SESSIONS + " sessions", coord.figures(), List.of(curator.figures()), "packets sent/op"));
    }

    /** The servers' packets sent over one side's windows, and the operations they carried. */
    private static final class Sent {
        private long packets;
        private long ops;
        private boolean known = true;

        void measure(BenchContext ctx, Sample sample, List<Load.Op> work) throws Exception {
            long opsBefore = sample.figures().ops();
            OptionalLong before = ctx.counters().packetsSent();
            Load.concurrent(ctx, sample, work, ctx.plan().loadRun());
            OptionalLong after = ctx.counters().packetsSent();
            if (before.isPresent() && after.isPresent()) {
                packets += after.getAsLong() - before.getAsLong();
                ops += sample.figures().ops() - opsBefore;
            } else {
                known = false;
            }
        }

        double perOp() {
            return known && ops > 0 ? (double) packets / ops : Double.NaN;
        }
    }
}
