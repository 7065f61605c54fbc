package io.coord.core.internal;

import io.coord.core.LeasePredicate.Decision;
import java.util.List;

/**
 * How an attempt learns its queue between its create and its grant: from a read of its own, pruned as it learns of
 * deletions ({@link SnapshotWaiting}), or from the client's view of the path ({@link ViewWaiting}). One per
 * generation of the attempt. Every method runs under the attempt's lock, and adds the requests it wants sent to
 * {@code todo}.
 */
interface Waiting {
    /** A new generation is entering: whatever should go out right behind the create. */
    void entering(int generation, List<Runnable> todo);

    /** Our create answered, so our nodes are known. */
    void created(List<Runnable> todo);

    /** Decides if the queue is known: the attempt is then granted, refused (one look) or told to wait. */
    void evaluate(List<Runnable> todo, boolean woken);

    /**
     * The queue was learnt from an older path of this name than the one the path's record was checked on, or from one
     * the view cannot name: learn it again, deciding nothing meanwhile (see {@link Attempt#decided}).
     */
    void refresh(List<Runnable> todo);

    /** Not granted: wait for what {@code decision} names. {@code woken}: a node we waited on was just deleted. */
    void await(Decision decision, boolean woken, List<Runnable> todo);

    /** Granted on {@code names}: whatever should follow the lease from now on. */
    void granted(LeaseImpl lease, List<String> names, List<Runnable> todo);

    /** Stops waiting on anything, for good: granted, withdrawn, or replaced by a new generation or mode. */
    void stop();
}
