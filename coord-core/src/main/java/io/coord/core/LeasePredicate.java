package io.coord.core;

import java.util.List;
import java.util.Objects;

/** Decides, from the ordered queue of sequence nodes, whether a contender is granted and what it must watch. */
@FunctionalInterface
public interface LeasePredicate {

    /**
     * @param children the queue sorted by sequence, holding at least every live predecessor of ours and our own node
     * @param ourIndex our position in {@code children}
     */
    Decision evaluate(List<SequenceNode> children, int ourIndex);

    /** Granted iff fewer than {@code maxLeases} nodes precede ours; otherwise watch the {@code maxLeases} nearest. */
    static LeasePredicate maxLeases(int maxLeases) {
        if (maxLeases < 1) {
            throw new IllegalArgumentException("maxLeases must be >= 1: " + maxLeases);
        }
        return (children, ourIndex) -> {
            Objects.checkIndex(ourIndex, children.size());
            if (ourIndex < maxLeases) {
                return Decision.grant();
            }
            // Permits come back out of order, so any of the k nearest can free ours; farther ones cannot on their own.
            return Decision.waitFor(children.subList(ourIndex - maxLeases, ourIndex));
        };
    }

    /**
     * @param granted whether the contender holds the lease now
     * @param watch the nodes whose deletion can change the answer; empty when granted
     */
    record Decision(boolean granted, List<SequenceNode> watch) {
        public Decision {
            watch = List.copyOf(watch);
            if (granted && !watch.isEmpty()) {
                throw new IllegalArgumentException("a granted decision watches nothing: " + watch);
            }
            if (!granted && watch.isEmpty()) {
                throw new IllegalArgumentException("a refused decision must watch at least one node");
            }
        }

        public static Decision grant() {
            return new Decision(true, List.of());
        }

        public static Decision waitFor(List<SequenceNode> watch) {
            return new Decision(false, watch);
        }
    }
}
