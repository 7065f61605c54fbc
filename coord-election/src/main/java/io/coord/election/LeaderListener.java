package io.coord.election;

import io.coord.core.Lease;

/**
 * Hears a {@link LeaderLatch} win and lose leadership. Calls come on the executor given to
 * {@link LeaderLatch#addListener}, in the order the changes happened, after the latch's own state has changed.
 */
public interface LeaderListener {

    /**
     * This latch leads. {@code term.fencingToken()} is the leader epoch: pass it along with every write to the
     * resource you guard, and have the resource refuse epochs older than one it has seen.
     */
    void isLeader(Lease term);

    /**
     * This latch no longer leads: its term turned LOST, or SUSPECT under the standard connection error policy, or the
     * latch was closed. Stop acting as leader.
     */
    void notLeader();
}
