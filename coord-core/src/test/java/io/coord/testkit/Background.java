package io.coord.testkit;

import static org.awaitility.Awaitility.await;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;

/**
 * Runs a blocking call on a thread of its own, so that a test can act while the call waits, or on ZooKeeper's event
 * thread, where a call that waits must refuse.
 */
public final class Background {
    private Background() {}

    /** The call's result, or its failure (checked ones wrapped in CompletionException). */
    public static <T> CompletableFuture<T> call(Callable<T> call) {
        CompletableFuture<T> result = new CompletableFuture<>();
        start(call, result);
        return result;
    }

    /**
     * Like {@link #call}, returning once the call's thread sleeps in a timed wait: inside Curator's retries, say,
     * past the checks a call makes before it sends anything.
     */
    public static <T> CompletableFuture<T> callUntilItSleeps(Callable<T> call) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread thread = start(call, result);
        await().until(() -> result.isDone() || thread.getState() == Thread.State.TIMED_WAITING);
        return result;
    }

    /**
     * Runs {@code call} on ZooKeeper's event thread of {@code client}, inside a background callback as a watcher or a
     * callback of the application would, and returns what it threw, or null if it returned.
     */
    public static Throwable thrownOnEventThread(CuratorFramework client, Callable<?> call) throws Exception {
        CompletableFuture<Throwable> thrown = new CompletableFuture<>();
        client.checkExists()
                .inBackground((c, event) -> {
                    try {
                        call.call();
                        thrown.complete(null);
                    } catch (Throwable e) {
                        thrown.complete(e);
                    }
                })
                .forPath("/");
        return thrown.get(10, TimeUnit.SECONDS);
    }

    private static <T> Thread start(Callable<T> call, CompletableFuture<T> result) {
        Thread thread = new Thread(() -> {
            try {
                result.complete(call.call());
            } catch (Throwable e) {
                result.completeExceptionally(e instanceof RuntimeException ? e : new CompletionException(e));
            }
        });
        thread.setDaemon(true);
        thread.start();
        return thread;
    }
}
