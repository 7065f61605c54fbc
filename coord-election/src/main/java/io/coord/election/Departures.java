package io.coord.election;

import io.coord.core.internal.LeaseEngine;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.slf4j.Logger;

/** How an election object reports leaving the election on a failure. */
final class Departures {
    private Departures() {}

    /** A closed client is an ordinary way to leave an election: say so quietly, and loudly for anything else. */
    static void logDeparture(Logger log, LeaseEngine engine, String name, Throwable error) {
        if (engine.client().getState() == CuratorFrameworkState.STOPPED) {
            log.info("{} left the election: its client was closed", name);
        } else {
            log.warn("{} left the election", name, error);
        }
    }
}
