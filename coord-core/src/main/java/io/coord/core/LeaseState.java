package io.coord.core;

/**
 * Where a {@link Lease} stands.
 *
 * <p>{@code HELD -> SUSPECT -> HELD} while the connection drops and comes back within the session; {@code LOST}
 * and {@code RELEASED} are final.
 */
public enum LeaseState {
    /** The znode is ours and the connection is up: act on the lease. */
    HELD,
    /** The connection is down and the session may still be alive: stop acting until it is HELD again. */
    SUSPECT,
    /** The session expired, the znode vanished, or ownership could not be confirmed. Final. */
    LOST,
    /** The holder closed the lease. Final. */
    RELEASED
}
