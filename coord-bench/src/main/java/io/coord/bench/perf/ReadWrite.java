package io.coord.bench.perf;

import io.coord.bench.Safety;
import io.coord.core.DistributedLock;
import io.coord.rwlock.ReadWriteMutex;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;

/** Scenario 4: 16 sessions on one read/write lock, each operation a read with probability 0.9, else a write. */
final class ReadWrite implements Scenario {
    private static final int SESSIONS = 16;
    private static final int READS_IN_TEN = 9;

    @Override
    public String id() {
        return "4";
    }

    @Override
    public String title() {
        return "read/write lock, 90% reads (vs InterProcessReadWriteLock)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        List<CuratorFramework> sessions = ctx.sessions(SESSIONS);
        Safety.ReadWriteGuard coordGuard = ctx.safety().readWriteGuard("4 coord ReadWriteMutex");
        Safety.ReadWriteGuard curatorGuard = ctx.safety().readWriteGuard("4 Curator InterProcessReadWriteLock");
        List<Load.Op> coordOps = new ArrayList<>();
        List<Load.Op> curatorOps = new ArrayList<>();
        for (int i = 0; i < sessions.size(); i++) {
            ReadWriteMutex coordLock = new ReadWriteMutex(sessions.get(i), ctx.path("s4", "coord"));
            InterProcessReadWriteLock curatorLock =
                    new InterProcessReadWriteLock(sessions.get(i), ctx.path("s4", "curator"));
            // The same seed per session on both sides: both run the same sequence of reads and writes.
            SplittableRandom coordDice = new SplittableRandom(i);
            SplittableRandom curatorDice = new SplittableRandom(i);
            coordOps.add(() -> {
                if (coordDice.nextInt(10) < READS_IN_TEN) {
                    hold(coordLock.readLock(), coordGuard::enterRead, coordGuard::exitRead);
                } else {
                    hold(coordLock.writeLock(), coordGuard::enterWrite, coordGuard::exitWrite);
                }
            });
            curatorOps.add(() -> {
                if (curatorDice.nextInt(10) < READS_IN_TEN) {
                    hold(curatorLock.readLock(), curatorGuard::enterRead, curatorGuard::exitRead);
                } else {
                    hold(curatorLock.writeLock(), curatorGuard::enterWrite, curatorGuard::exitWrite);
                }
            });
        }
        Sample coord = new Sample("coord ReadWriteMutex");
        Sample curator = new Sample("Curator InterProcessReadWriteLock");
        Rounds.run(
                ctx,
                "4 read/write, " + SESSIONS + " sessions",
                ctx.plan().rounds(),
                List.of(
                        () -> Load.concurrent(ctx, coord, coordOps, ctx.plan().loadRun()),
                        () -> Load.concurrent(
                                ctx, curator, curatorOps, ctx.plan().loadRun())));
        return List.of(new Row(id(), title(), SESSIONS + " sessions", coord.figures(), List.of(curator.figures())));
    }

    private static void hold(DistributedLock lock, Runnable enter, Runnable exit) throws InterruptedException {
        lock.acquire();
        try {
            enter.run();
            exit.run();
        } finally {
            lock.release();
        }
    }

    private static void hold(InterProcessMutex lock, Runnable enter, Runnable exit) throws Exception {
        lock.acquire();
        try {
            enter.run();
            exit.run();
        } finally {
            lock.release();
        }
    }
}
