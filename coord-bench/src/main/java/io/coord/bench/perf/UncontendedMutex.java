package io.coord.bench.perf;

import io.coord.bench.Safety;
import io.coord.mutex.ReentrantMutex;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

/**
 * Scenario 1: one session takes and returns a free mutex, back to back. coord sends its create and getChildren
 * together and so waits one round trip where InterProcessMutex waits two; both then delete.
 */
final class UncontendedMutex implements Scenario {
    private static final int WARM_UP = 30;

    @Override
    public String id() {
        return "1";
    }

    @Override
    public String title() {
        return "uncontended mutex acquire+release (vs InterProcessMutex)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        CuratorFramework client = ctx.sessions(1).get(0);
        ReentrantMutex coordLock = new ReentrantMutex(client, ctx.path("s1", "coord"));
        InterProcessMutex curatorLock = new InterProcessMutex(client, ctx.path("s1", "curator"));
        Safety.Guard coordGuard = ctx.safety().guard("1 coord ReentrantMutex", 1);
        Safety.Guard curatorGuard = ctx.safety().guard("1 Curator InterProcessMutex", 1);
        Load.Op coordOp = () -> {
            coordLock.acquire();
            try {
                coordGuard.enter(coordLock.lease().fencingToken());
                coordGuard.exit();
            } finally {
                coordLock.release();
            }
        };
        Load.Op curatorOp = () -> {
            curatorLock.acquire();
            try {
                curatorGuard.enter();
                curatorGuard.exit();
            } finally {
                curatorLock.release();
            }
        };
        // Unmeasured: creates the parents and lets the JIT see both code paths before the clock runs.
        Sample discard = new Sample("warm-up");
        Load.sequential(ctx, discard, coordOp, WARM_UP);
        Load.sequential(ctx, discard, curatorOp, WARM_UP);

        Sample coord = new Sample("coord ReentrantMutex");
        Sample curator = new Sample("Curator InterProcessMutex");
        // Short windows, many turns: drift hits both sides alike. --quick keeps it short.
        int rounds = ctx.plan().quick() ? ctx.plan().rounds() : ctx.plan().rounds() * 2;
        for (int round = 1; round <= rounds; round++) {
            ctx.progress("1 uncontended mutex: round " + round + "/" + rounds);
            Load.sequential(ctx, coord, coordOp, ctx.plan().uncontendedOps());
            Load.sequential(ctx, curator, curatorOp, ctx.plan().uncontendedOps());
        }
        return List.of(new Row(id(), title(), "1 session", coord.figures(), List.of(curator.figures())));
    }
}
