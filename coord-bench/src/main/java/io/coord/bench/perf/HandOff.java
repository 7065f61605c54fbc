package io.coord.bench.perf;

import io.coord.bench.Safety;
import io.coord.core.Lease;
import io.coord.mutex.ReentrantMutex;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

/**
 * Scenario 3: the cost of one hand-off, from the holder's release to the next waiter's grant, with 10, 100 and 1,000
 * waiters queued. Each measured queue drains completely, so the figures average over every position in it. coord's
 * waiter is granted by the delete notification alone, so its cost should not grow with the queue; InterProcessMutex
 * reads every child name at each hand-off, so its cost grows with the queue.
 *
 * <p>coord's waiters are {@code acquireAsync} calls from one session; Curator needs a parked thread per waiter, all
 * of them on one session too, each with its own InterProcessMutex: threads sharing one instance share its monitor, and
 * every hand-off would wake them all, a cost of that usage rather than of the protocol.
 *
 * <p>The clock starts only once every waiter is fully queued, node and watch, so queueing never leaks into it.
 */
final class HandOff implements Scenario {
    private static final Duration QUEUE_TIMEOUT = Duration.ofMinutes(3);

    private record Grant(Lease lease, long atNanos, Throwable error) {}

    @Override
    public String id() {
        return "3";
    }

    @Override
    public String title() {
        return "mutex hand-off cost with queued waiters (vs InterProcessMutex)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        List<CuratorFramework> sessions = ctx.sessions(2);
        CuratorFramework holder = sessions.get(0);
        CuratorFramework waiters = sessions.get(1);
        List<Row> rows = new ArrayList<>();
        for (int size : ctx.plan().handOffWaiters()) {
            int queues = Math.max(1, ctx.plan().handOffsPerSize() / size);
            Sample coord = new Sample("coord ReentrantMutex");
            Sample curator = new Sample("Curator InterProcessMutex");
            Safety.Guard coordGuard = ctx.safety().guard("3 coord ReentrantMutex, " + size + " waiters", 1);
            Safety.Guard curatorGuard = ctx.safety().guard("3 Curator InterProcessMutex, " + size + " waiters", 1);
            for (int q = 1; q <= queues; q++) {
                ctx.progress("3 hand-off, " + size + " waiters: queue " + q + "/" + queues);
                coordQueue(ctx, holder, waiters, size, coord, coordGuard);
                curatorQueue(ctx, holder, waiters, size, curator, curatorGuard);
            }
            rows.add(new Row(id(), title(), size + " waiters", coord.figures(), List.of(curator.figures())));
        }
        if (ctx.plan().quick()) {
            ctx.note("scenario 3 measures " + ctx.plan().handOffsPerSize() + " hand-offs per side at 10 and 100 waiters"
                    + " and one full queue at 1,000 (a full run: 1,000 at each length)");
        }
        return rows;
    }

    private static void coordQueue(
            BenchContext ctx,
            CuratorFramework holder,
            CuratorFramework waiters,
            int size,
            Sample sample,
            Safety.Guard guard)
            throws Exception {
        String path = ctx.path("s3", "coord", String.valueOf(size));
        ReentrantMutex waiterLock = new ReentrantMutex(waiters, path);
        Znodes.primeView(waiterLock);
        Lease head = new ReentrantMutex(holder, path).acquireAsync().get(30, TimeUnit.SECONDS);
        guard.enter(head.fencingToken());
        BlockingQueue<Grant> grants = new LinkedBlockingQueue<>();
        List<CompletableFuture<Lease>> pending = new ArrayList<>(size);
        boolean headHeld = true;
        try {
            for (int i = 0; i < size; i++) {
                pending.add(waiterLock.acquireAsync().whenComplete((lease, error) -> {
                    long at = System.nanoTime();
                    if (error == null) {
                        guard.enter(lease.fencingToken()); // on the grant itself, so two grants at once would show
                    }
                    grants.add(new Grant(lease, at, error));
                }));
            }
            Znodes.awaitQueued(ctx, holder, path, size, 0, QUEUE_TIMEOUT);

            Sample.Window window = sample.open(ctx.counters());
            long releasedAt = System.nanoTime();
            guard.exit();
            headHeld = false;
            head.close();
            for (int i = 0; i < size; i++) {
                Grant grant = grants.poll(QUEUE_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                if (grant == null) {
                    throw new TimeoutException("coord waiter " + i + " of " + size + " was never granted on " + path);
                }
                if (grant.error() != null) {
                    throw new IllegalStateException("coord waiter failed on " + path, grant.error());
                }
                sample.record(grant.atNanos() - releasedAt);
                guard.exit();
                releasedAt = System.nanoTime();
                grant.lease().close();
            }
            window.close(size);
        } finally {
            // After a failure: withdraw whoever still waits, so nothing is granted behind the guard's back later.
            pending.forEach(f -> f.cancel(false));
            if (headHeld) {
                guard.exit();
                head.close();
            }
        }
    }

    private static void curatorQueue(
            BenchContext ctx,
            CuratorFramework holder,
            CuratorFramework waiters,
            int size,
            Sample sample,
            Safety.Guard guard)
            throws Exception {
        String path = ctx.path("s3", "curator", String.valueOf(size));
        InterProcessMutex holderLock = new InterProcessMutex(holder, path);
        holderLock.acquire();
        guard.enter();
        boolean headHeld = true;
        AtomicLong releasedAt = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        CountDownLatch finished = new CountDownLatch(size);
        Threads.WaiterPool pool = new Threads.WaiterPool("curator-waiter", size);
        try {
            for (int i = 0; i < size; i++) {
                InterProcessMutex waiterLock = new InterProcessMutex(waiters, path);
                pool.execute(() -> {
                    try {
                        waiterLock.acquire();
                        long at = System.nanoTime();
                        guard.enter();
                        sample.record(at - releasedAt.get());
                        guard.exit();
                        releasedAt.set(System.nanoTime());
                        waiterLock.release();
                    } catch (Exception e) {
                        failure.compareAndSet(null, e);
                    } finally {
                        finished.countDown();
                    }
                });
            }
            Znodes.awaitQueued(ctx, holder, path, size, size, QUEUE_TIMEOUT);

            Sample.Window window = sample.open(ctx.counters());
            guard.exit();
            headHeld = false;
            releasedAt.set(System.nanoTime());
            holderLock.release();
            if (!finished.await(QUEUE_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                throw new TimeoutException("Curator waiters on " + path + " did not all finish");
            }
            window.close(size);
            if (failure.get() != null) {
                throw failure.get();
            }
        } finally {
            pool.shutdown(); // interrupted waiters delete their nodes
            if (headHeld) {
                guard.exit();
                holderLock.release();
            }
        }
    }
}
