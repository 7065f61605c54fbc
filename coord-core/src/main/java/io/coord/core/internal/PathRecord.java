package io.coord.core.internal;

import java.util.concurrent.CompletableFuture;

/**
 * What a primitive keeps as the data of its path, such as a semaphore's limit: checked before an attempt enters the
 * queue, and written again by whoever makes the path again. The engine then never makes the path as a container, which
 * the server would reap with the record.
 */
public interface PathRecord {
    /**
     * Whether an attempt may enter: null once the record is known to match, else a future that completes with true
     * when it does, with false when {@code oneLook} and the connection dropped first (the check goes on for the next
     * caller), or exceptionally with the primitive's refusal, which the caller gets as it is.
     */
    CompletableFuture<Boolean> check(boolean oneLook);

    /**
     * The {@code czxid} of the path on which the record was found to match, which tells that path from one of the same
     * name made again after a deletion; 0 unless the latest check passed (none yet, one under way, or a refusal).
     */
    long checkedOn();

    /**
     * Checks again, whatever an earlier check found, as {@link #check} does: the path was made again since (a
     * different {@code czxid}).
     */
    CompletableFuture<Boolean> checkAgain(boolean oneLook);

    /** Makes the missing path with the record; an in-doubt failure counts as a lost connection. */
    CompletableFuture<Void> makePath();
}
