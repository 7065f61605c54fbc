package io.coord.bench.perf;

import io.coord.core.Lease;
import io.coord.mutex.ReentrantMutex;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

/**
 * Scenario 8: many acquisitions waiting at once in one JVM, behind a holder that never lets go. The figure is how many
 * live threads that adds: coord's {@code acquireAsync} parks none, InterProcessMutex parks one per waiter. The
 * window's time and requests are those of queueing every waiter.
 */
final class AsyncScale implements Scenario {
    private static final Duration QUEUE_TIMEOUT = Duration.ofMinutes(5);

    @Override
    public String id() {
        return "8";
    }

    @Override
    public String title() {
        return "acquisitions pending from one JVM: threads added (vs InterProcessMutex)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        CuratorFramework holder = ctx.sessions(1).get(0);
        int coordWaiters = ctx.plan().asyncCoordWaiters();
        int curatorWaiters = ctx.plan().asyncCuratorWaiters();
        Sample coord = new Sample("coord ReentrantMutex.acquireAsync");
        Sample curator = new Sample("Curator InterProcessMutex");
        ctx.progress("8 pending acquisitions: coord, " + Format.count(coordWaiters) + " acquireAsync calls");
        coord.extra(coordSide(ctx, holder, coordWaiters, coord));
        ctx.progress("8 pending acquisitions: Curator, " + Format.count(curatorWaiters) + " blocked threads");
        double curatorThreads = curatorSide(ctx, holder, curatorWaiters, curator);
        curator.extra(curatorThreads);
        if (coordWaiters < Plan.ASYNC_WAITERS_NAMED) {
            ctx.note("scenario 8 pends " + Format.count(coordWaiters) + " coord acquisitions, not "
                    + Format.count(Plan.ASYNC_WAITERS_NAMED) + ", to fit --quick");
        }
        ctx.note(String.format(
                Locale.ROOT,
                "scenario 8: Curator was measured with %s real waiters (%s threads added, %.2f per waiter);"
                        + " it parks one thread per waiter, so %s waiters would need about %s threads",
                Format.count(curatorWaiters),
                Format.count(Math.round(curatorThreads)),
                curatorThreads / curatorWaiters,
                Format.count(Plan.ASYNC_WAITERS_NAMED),
                Format.count(Math.round(curatorThreads / curatorWaiters * Plan.ASYNC_WAITERS_NAMED))));
        String variant = Format.count(coordWaiters) + " coord / " + Format.count(curatorWaiters) + " Curator waiters";
        return List.of(new Row(id(), title(), variant, coord.figures(), List.of(curator.figures()), "threads added"));
    }

    /** Returns the live threads added while every waiter is queued. */
    private static double coordSide(BenchContext ctx, CuratorFramework holder, int waiters, Sample sample)
            throws Exception {
        String path = ctx.path("s8", "coord");
        // A session of its own: closing it withdraws all the waiters in one request instead of one delete each.
        CuratorFramework client = ctx.newClient();
        ReentrantMutex lock = new ReentrantMutex(client, path);
        Znodes.primeView(lock);
        Lease head = new ReentrantMutex(holder, path).acquireAsync().get(30, TimeUnit.SECONDS);
        try {
            int before = Threads.live();
            List<CompletableFuture<Lease>> pending = new ArrayList<>(waiters);
            Sample.Window window = sample.open(ctx.counters());
            for (int i = 0; i < waiters; i++) {
                pending.add(lock.acquireAsync());
            }
            Znodes.awaitQueued(ctx, holder, path, waiters, 0, QUEUE_TIMEOUT);
            window.close(waiters);
            int during = Threads.live();
            ctx.safety()
                    .check(
                            pending.stream().noneMatch(CompletableFuture::isDone),
                            "8 coord: a waiter completed while the holder still held " + path);
            return during - before;
        } finally {
            client.close();
            head.close();
        }
    }

    private static double curatorSide(BenchContext ctx, CuratorFramework holder, int waiters, Sample sample)
            throws Exception {
        String path = ctx.path("s8", "curator");
        InterProcessMutex holderLock = new InterProcessMutex(holder, path);
        holderLock.acquire();
        CuratorFramework client = ctx.newClient();
        Threads.WaiterPool pool = new Threads.WaiterPool("curator-pending", waiters);
        try {
            int before = Threads.live();
            Sample.Window window = sample.open(ctx.counters());
            for (int i = 0; i < waiters; i++) {
                InterProcessMutex lock = new InterProcessMutex(client, path); // one per thread, as in scenario 3
                pool.execute(() -> {
                    try {
                        lock.acquire();
                        // Only reachable if exclusion failed: the holder never releases while waiters are counted.
                        ctx.safety().check(false, "8 Curator: a waiter acquired while the holder still held " + path);
                        lock.release();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt(); // the end of the run: Curator deletes the waiter's node
                    } catch (Exception e) {
                        ctx.safety().check(false, "8 Curator waiter failed: " + e);
                    }
                });
            }
            Znodes.awaitQueued(ctx, holder, path, waiters, waiters, QUEUE_TIMEOUT);
            window.close(waiters);
            return Threads.live() - before;
        } finally {
            pool.shutdown(); // interrupted waiters delete their nodes
            client.close();
            holderLock.release();
        }
    }
}
