package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.Comparator;

/**
 * Sequence numbers in the order ZooKeeper gave them, also past the end of its 32-bit counter: the order of
 * {@link SequenceNode#compareTo}, for the maps keyed by sequence alone.
 */
final class SequenceOrder {
    static final Comparator<Long> SERIAL = SequenceOrder::compare;

    private SequenceOrder() {}

    /** Negative if {@code a} was numbered before {@code b}, within 2<sup>31</sup> creates. */
    static int compare(long a, long b) {
        return Integer.signum((int) (a - b));
    }
}
