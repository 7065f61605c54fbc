package io.coord.bench.perf;

import io.coord.mutex.ReentrantMutex;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorWatcher;

/** Waits for waiters to be fully queued: their znodes exist and the watches they set are set. */
final class Znodes {
    // Watches are another library's inner state and no event announces them, so they are polled, briefly.
    private static final long WATCH_POLL_MILLIS = 20;

    private Znodes() {}

    /**
     * Returns once {@code path} has at least {@code waiters + 1} children (the holder and the waiters) and the servers
     * hold {@code watches} watches on the nodes under it: one per waiter, on the node it waits for, for Curator; none
     * for coord waiters on a primed view, which hear every deletion through the one watch the client already has on
     * the path itself. Only then has every waiter finished queueing, so nothing of the queueing leaks into what is
     * measured next. If the servers refuse {@code wchp}, only the children are awaited.
     */
    static void awaitQueued(
            BenchContext ctx, CuratorFramework client, String path, int waiters, int watches, Duration timeout)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        awaitChildren(client, path, waiters + 1, deadline, timeout);
        OptionalLong now;
        while ((now = ctx.counters().watchesUnder(path)).isPresent() && now.getAsLong() < watches) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("servers hold " + now.getAsLong() + " watches under " + path + ", expected "
                        + watches + " within " + timeout);
            }
            TimeUnit.MILLISECONDS.sleep(WATCH_POLL_MILLIS);
        }
    }

    /**
     * Two acquisitions by {@code lock}'s client, before anybody else holds: the first counts the path, the second adds
     * the client's view of it. The waiters that client queues next then decide on the view and set no watch of their
     * own. A long pause would let the view lapse (coord.view.linger), so queue right after.
     */
    static void primeView(ReentrantMutex lock) throws InterruptedException {
        for (int i = 0; i < 2; i++) {
            lock.acquire();
            lock.release();
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
