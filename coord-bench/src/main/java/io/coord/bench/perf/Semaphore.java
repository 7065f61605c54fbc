package io.coord.bench.perf;

import io.coord.bench.Safety;
import io.coord.core.Lease;
import io.coord.semaphore.DistributedSemaphore;
import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;

/**
 * Scenario 5: 16 sessions share 4 permits. InterProcessSemaphoreV2 serializes every acquisition through an internal
 * mutex and reads the lease children again on every wake-up; coord queues each permit like a mutex waiter.
 */
final class Semaphore implements Scenario {
    private static final int SESSIONS = 16;
    private static final int PERMITS = 4;

    @Override
    public String id() {
        return "5";
    }

    @Override
    public String title() {
        return "semaphore, 4 permits (vs InterProcessSemaphoreV2)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        List<CuratorFramework> sessions = ctx.sessions(SESSIONS);
        Safety.Guard coordGuard = ctx.safety().guard("5 coord DistributedSemaphore", PERMITS);
        Safety.Guard curatorGuard = ctx.safety().guard("5 Curator InterProcessSemaphoreV2", PERMITS);
        List<Load.Op> coordOps = new ArrayList<>();
        List<Load.Op> curatorOps = new ArrayList<>();
        for (CuratorFramework session : sessions) {
            DistributedSemaphore coordSemaphore = new DistributedSemaphore(session, ctx.path("s5", "coord"), PERMITS);
            InterProcessSemaphoreV2 curatorSemaphore =
                    new InterProcessSemaphoreV2(session, ctx.path("s5", "curator"), PERMITS);
            coordOps.add(() -> {
                try (Lease permit = coordSemaphore.acquire()) {
                    ctx.safety().check(permit.isValid(), "5 coord DistributedSemaphore: granted a permit not HELD");
                    coordGuard.enter();
                    coordGuard.exit();
                }
            });
            curatorOps.add(() -> {
                org.apache.curator.framework.recipes.locks.Lease permit = curatorSemaphore.acquire();
                try {
                    curatorGuard.enter();
                    curatorGuard.exit();
                } finally {
                    curatorSemaphore.returnLease(permit);
                }
            });
        }
        Sample coord = new Sample("coord DistributedSemaphore");
        Sample curator = new Sample("Curator InterProcessSemaphoreV2");
        Rounds.run(
                ctx,
                "5 semaphore, " + SESSIONS + " sessions",
                ctx.plan().rounds(),
                List.of(
                        () -> Load.concurrent(ctx, coord, coordOps, ctx.plan().loadRun()),
                        () -> Load.concurrent(
                                ctx, curator, curatorOps, ctx.plan().loadRun())));
        return List.of(new Row(
                id(),
                title(),
                SESSIONS + " sessions, " + PERMITS + " permits",
                coord.figures(),
                List.of(curator.figures())));
    }
}
