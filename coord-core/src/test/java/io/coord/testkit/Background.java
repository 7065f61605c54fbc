package io.coord.testkit;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** Runs a blocking call on a thread of its own, so that a test can act while the call waits. */
public final class Background {
    private Background() {}

    /** The call's result, or its failure (checked ones wrapped in CompletionException). */
    public static <T> CompletableFuture<T> call(Callable<T> call) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                result.complete(call.call());
            } catch (Throwable e) {
                result.completeExceptionally(e instanceof RuntimeException ? e : new CompletionException(e));
            }
        });
        thread.setDaemon(true);
        thread.start();
        return result;
    }
}
