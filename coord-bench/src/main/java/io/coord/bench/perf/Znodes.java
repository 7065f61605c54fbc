package io.coord.bench.perf;

import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorWatcher;

/** Waits for waiters to be fully queued: their znodes exist and their watches are set. */
final class Znodes {
    // Watches are another library's inner state and no event announces them, so they are polled, briefly.
    private static final long WATCH_POLL_MILLIS = 20;

    private Znodes() {}

    /**
     * Returns once {@code path} has at least {@code waiters + 1} children (the holder and the waiters) and the servers
     * hold a watch for each waiter on the node it waits for. Only then has
     * every waiter finished queueing, so nothing of the queueing leaks into what is measured next.
     *
     * @param watchesBefore the servers' watch count before the waiters queued; empty if it cannot be read, and then
     *     only the children are awaited
     */
    static void awaitQueued(
            BenchContext ctx,
            CuratorFramework client,
            String path,
            int waiters,
            OptionalLong watchesBefore,
            Duration timeout)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        awaitChildren(client, path, waiters + 1, deadline, timeout);
        if (watchesBefore.isEmpty()) {
            return;
        }
        // One data watch per waiter, on the node it waits for; wchs counts data watches only, so not the child watch
        // that the last read above left on the path.
        long wanted = watchesBefore.getAsLong() + waiters;
        OptionalLong now;
        while ((now = ctx.counters().watches()).isPresent() && now.getAsLong() < wanted) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException(
                        "servers hold " + now.getAsLong() + " watches, expected " + wanted + " within " + timeout);
            }
            TimeUnit.MILLISECONDS.sleep(WATCH_POLL_MILLIS);
        }
    }

    /** Each read re-arms a child watch, so the loop wakes on changes only; one read covers many new children. */
    private static void awaitChildren(CuratorFramework client, String path, int count, long deadline, Duration timeout)
            throws Exception {
        while (true) {
            CountDownLatch changed = new CountDownLatch(1);
            int now = client.getChildren()
                    .usingWatcher((CuratorWatcher) event -> changed.countDown())
                    .forPath(path)
                    .size();
            if (now >= count) {
                return;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0 || !changed.await(left, TimeUnit.NANOSECONDS)) {
                throw new TimeoutException(
                        path + " has " + now + " children, expected " + count + " within " + timeout);
            }
        }
    }
}
