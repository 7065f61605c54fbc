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
    private final Set<String> pruned = new HashSet<>(); // every node seen gone during the attempt
    private SequenceNode[] nodes;
    private boolean[] gone; // by index into nodes: pruned, or deleted as another contender of this client saw
    private int goneCount;
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
        this.gone = new boolean[read.length];
        this.goneCount = 0;
        this.staleHits = 0;
        if (!pruned.isEmpty()) {
            for (int i = 0; i < ourIndex; i++) {
                if (pruned.contains(read[i].name())) {
                    markGone(i);
                }
            }
        }
        pinned = read[0].sequence();
        shared.pin(pinned);
    }

    /** Forgets the snapshot, for a new generation or the end of the attempt. */
    void clear() {
        nodes = null;
        gone = null;
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

    /**
     * Our live predecessors, as far as we know, then {@code ours}. Evaluated on every wake-up, so it costs a lookup
     * per deletion known, not per node: with hundreds of contenders the snapshot is long and little of it is gone.
     */
    List<SequenceNode> livePrefix(SequenceNode ours) {
        if (ourIndex > 0) {
            shared.knownDeletions(nodes[0].sequence(), ours.sequence()).forEach((sequence, name) -> {
                int index = indexOf(sequence, name);
                if (index >= 0) {
                    markGone(index);
                }
            });
        }
        if (goneCount == 0) {
            return Arrays.asList(nodes).subList(0, ourIndex + 1);
        }
        List<SequenceNode> live = new ArrayList<>(ourIndex + 1 - goneCount);
        for (int i = 0; i < ourIndex; i++) {
            if (!gone[i]) {
                live.add(nodes[i]);
            }
        }
        live.add(ours);
        return live;
    }

    /** The node is gone; every contender of this client on the path learns it too. Returns false if known. */
    boolean prune(SequenceNode node) {
        shared.noteDeleted(node);
        if (nodes != null) {
            int index = indexOf(node.sequence(), node.name());
            if (index >= 0 && index < ourIndex) {
                markGone(index);
            }
        }
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

    private void markGone(int index) {
        if (!gone[index]) {
            gone[index] = true;
            goneCount++;
        }
    }

    /** Where the node with this sequence and name sits among our predecessors, or -1. */
    private int indexOf(long sequence, String name) {
        int low = 0;
        int high = ourIndex - 1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            SequenceNode node = nodes[mid];
            int order = SequenceOrder.compare(node.sequence(), sequence);
            if (order == 0) {
                order = node.name().compareTo(name);
            }
            if (order < 0) {
                low = mid + 1;
            } else if (order > 0) {
                high = mid - 1;
            } else {
                return mid;
            }
        }
        return -1;
    }
}
