package io.coord.core.internal;

import io.coord.core.LeaseState;
import java.util.Locale;

/**
 * Hears what coord's primitives do: acquisitions, holds, lease states, leadership and queue operations. This is how
 * coord-micrometer keeps its meters, and how coord's Flight Recorder events are made; register one with {@link
 * Observations#add}. <b>Not API</b>, like the rest of this package.
 *
 * <p>Each method is called on the thread where the thing happened, right after it happened. That may be ZooKeeper's
 * event thread, a thread of the caller, or one of coord's, sometimes while coord holds a lock of its own. So an
 * observer must be quick and must never block, wait, or call back into coord: updating counters and timers in memory
 * is what it is for. Anything slower belongs on an executor of the observer's own. An observer that throws, an
 * {@code Error} included, is logged and otherwise ignored: a report never stops the lease or the session change it
 * reports. Strings passed in are never null; the path is the primitive's path, as given to its
 * constructor.
 */
public interface Observer {
    /** How an acquisition ended. */
    enum AcquireOutcome {
        GRANTED,
        /** Its deadline passed first; a one-look attempt ({@code Duration.ZERO}) that was refused counts here too. */
        TIMED_OUT,
        /** Withdrawn by the caller: an interrupt, or a cancelled or otherwise completed future. */
        CANCELLED,
        /** ZooKeeper refused it, or the client was closed. */
        FAILED;

        private final String tag = name().toLowerCase(Locale.ROOT);

        /** The lower-case name, as events and meters report it. */
        public String tag() {
            return tag;
        }
    }

    /** How a hold ended. */
    enum HoldEnd {
        /** The holder let go. */
        RELEASED,
        /** Its session ended, or the client was closed. */
        LOST,
        /** Somebody else deleted its node while its session lived: a forced revocation, or an operator. */
        REVOKED;

        private final String tag = name().toLowerCase(Locale.ROOT);

        public String tag() {
            return tag;
        }
    }

    /** What a queue call did. */
    enum QueueOperation {
        /** {@code offer}, {@code put} or {@code putAll}. */
        OFFER,
        /** {@code poll}, {@code take} or {@code remove}: one item at most. */
        POLL,
        /** {@code drainTo}, whatever its {@code maxItems}. */
        DRAIN,
        /** {@code claim}. */
        CLAIM;

        private final String tag = name().toLowerCase(Locale.ROOT);

        public String tag() {
            return tag;
        }
    }

    /**
     * An acquisition started. An observer hears the end of exactly the acquisitions it heard start, even if it was
     * removed in between; one that started before the observer was added, it never hears of.
     */
    default void acquisitionStarted(String path, String primitive) {}

    /** An acquisition ended after {@code waitNanos}. */
    default void acquisitionEnded(
            String path, String primitive, String participant, long waitNanos, AcquireOutcome outcome) {}

    /** A hold ended after {@code holdNanos}, counted from its grant. */
    default void holdEnded(
            String path, String primitive, String participant, long fencingToken, long holdNanos, HoldEnd end) {}

    /**
     * A held lease changed state: to SUSPECT, to HELD again, or to LOST. The end of a hold, LOST included, is also
     * told to {@link #holdEnded}; RELEASED is told only there.
     */
    default void leaseStateChanged(
            String path, String primitive, String participant, long fencingToken, LeaseState from, LeaseState to) {}

    /** A latch or selector ({@code primitive}) gained or lost leadership. */
    default void leadershipChanged(String path, String primitive, String participant, boolean gained) {}

    /** A queue call returned or threw, having moved {@code items} of the {@code requested}, after {@code nanos}. */
    default void queueOperation(String path, QueueOperation operation, int requested, int items, long nanos) {}
}
