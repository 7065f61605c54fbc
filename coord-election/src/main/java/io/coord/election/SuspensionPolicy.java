package io.coord.election;

import io.coord.core.LeaseState;
import io.coord.core.internal.ClientContext;
import org.apache.curator.framework.CuratorFramework;

/**
 * Whether a term still leads while its lease is SUSPECT, as the client's {@code ConnectionStateErrorPolicy} decides.
 * The lease reports SUSPECT either way; only what leadership makes of it differs.
 */
enum SuspensionPolicy {
    /** Curator's default, {@code StandardConnectionStateErrorPolicy}: leadership pauses on SUSPENDED. */
    PAUSES_LEADERSHIP,
    /** {@code SessionConnectionStateErrorPolicy}: leadership lasts through SUSPENDED and ends only when LOST. */
    KEEPS_LEADERSHIP;

    /** Read when an election object starts: a client's policy is fixed when the client is built. */
    static SuspensionPolicy of(CuratorFramework client) {
        return ClientContext.of(client).holdsThroughSuspension() ? KEEPS_LEADERSHIP : PAUSES_LEADERSHIP;
    }

    /** Whether a term whose lease is in {@code state} leads. */
    boolean leads(LeaseState state) {
        return state == LeaseState.HELD || (state == LeaseState.SUSPECT && this == KEEPS_LEADERSHIP);
    }
}
