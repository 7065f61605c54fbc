package io.coord.testkit;

import static org.awaitility.Awaitility.await;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** Runs a blocking call on a thread of its own, so that a test can act while the call waits. */
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
