package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The queue as one read saw it, less every node known to be gone since. Nodes before ours can only leave after the
 * read, never join, so what remains stays a superset of our live predecessors, and each predicate that grants on a
 * superset grants on the real queue too. Guarded by the attempt's lock.
 */
final class QueueSnapshot {
    private final SharedPath shared;
    private final Set<String> pruned = new HashSet<>();
    private SequenceNode[] nodes;
    private int ourIndex;
    private Long pinned;
    private int staleHits;

    QueueSnapshot(SharedPath shared) {
        this.shared = shared;
    }

    /** Takes {@code read}, where our node sits at {@code ourIndex}, and keeps the deletions it may contain. */
    void take(SequenceNode[] read, int ourIndex) {
        unpin();
        this.nodes = read;
        this.ourIndex = ourIndex;
        this.staleHits = 0;
        pinned = read[0].sequence();
        shared.pin(pinned);
    }

    /** Forgets the snapshot, for a new generation or the end of the attempt. */
    void clear() {
        nodes = null;
        staleHits = 0;
        unpin();
    }

    boolean isTaken() {
        return nodes != null;
    }

    /** The nodes before ours in the read as it was taken, pruned or not. */
    List<SequenceNode> before() {
        return Arrays.asList(nodes).subList(0, ourIndex);
    }

    /** Our live predecessors, as far as we know, then {@code ours}. */
    List<SequenceNode> livePrefix(SequenceNode ours) {
        if (pruned.isEmpty() && !shared.hasKnownDeletions()) {
            return Arrays.asList(nodes).subList(0, ourIndex + 1);
        }
        List<SequenceNode> live = new ArrayList<>(ourIndex + 1);
        for (int i = 0; i < ourIndex; i++) {
            SequenceNode node = nodes[i];
            if (!pruned.contains(node.name()) && !shared.isKnownDeleted(node)) {
                live.add(node);
            }
        }
        live.add(ours);
        return live;
    }

    /** The node is gone; every contender of this client on the path learns it too. Returns false if known. */
    boolean prune(SequenceNode node) {
        shared.noteDeleted(node);
        return pruned.add(node.name());
    }

    /** A watched node turned out gone already. One is a race with its owner; a second means the read is stale. */
    boolean foundStale() {
        return ++staleHits > 1;
    }

    void unpin() {
        if (pinned != null) {
            shared.unpin(pinned);
            pinned = null;
        }
    }
}
