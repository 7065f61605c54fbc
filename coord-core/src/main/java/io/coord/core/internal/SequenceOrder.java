package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.Comparator;

/**
 * Sequence numbers in the order ZooKeeper gave them, also past the end of its 32-bit counter: the order of
 * {@link SequenceNode#compareTo}, for the maps keyed by sequence alone.
 */
final class SequenceOrder {
    static final Comparator<Long> COUNTED = SequenceOrder::compare;

    private SequenceOrder() {}

    /** Negative if {@code a} was numbered before {@code b}: unsigned, so that numbers past the end come after it. */
    static int compare(long a, long b) {
        return Long.compare(a & 0xFFFF_FFFFL, b & 0xFFFF_FFFFL);
    }
}
