package io.coord.election;

import io.coord.core.Lease;

/** The work a {@link LeaderSelector} does while it leads. */
@FunctionalInterface
public interface LeadershipTask {

    /**
     * Runs on the selector's own thread for one term, which lasts until this method returns. The thread is
     * interrupted when the term turns LOST, or SUSPECT unless the client uses {@code SessionConnectionStateErrorPolicy}
     * (see {@link LeaderSelector}), when the task closes the term itself (the next leader may then start), on
     * {@link LeaderSelector#interruptLeadership()} and on {@link LeaderSelector#close()}: return promptly when it is.
     * An exception ends the term and is logged.
     *
     * @param term the leadership term; its {@link Lease#fencingToken()} is the leader epoch
     */
    void takeLeadership(Lease term) throws Exception;
}
