package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The sequence children of one path as a view knows them: a read, then every create and delete since, applied in the
 * server's order. Guarded by the view's lock.
 *
 * <p>Creates are counted. ZooKeeper names a sequential child after the number of children created under its parent so
 * far, and a delete does not change that count. So after a read, the next child created is numbered exactly the count
 * the read implies, the one after it one more, and so on. A create numbered above the count means the view missed
 * one: typically a child it may not read, whose events the server keeps from it. One numbered below it, and already
 * held, is an event delivered twice; below it and not held, the view has lost count and must read again.
 *
 * <p>The count is not the parent's {@code cversion} as a Stat reports it: the server keeps the number of creates, but
 * reports it as a number of changes, creates plus deletes, computed as {@code 2 * creates - numChildren} in 32 bits.
 * So the count is {@code (cversion + numChildren) / 2}, computed unsigned: past 2<sup>30</sup> creates the reported
 * cversion overflows. The count itself ends at 2147483647 (see {@link SequenceNode}): a node numbered at the end is
 * counted as any other, and one numbered the same after it is below the count, so the view reads again.
 */
final class ViewNodes {
    /** What a child's NodeCreated event told the view. */
    enum Created {
        /** The next child, now in the view. */
        ADDED,
        /** Counted and held already: a repeated event. Nothing changes. */
        KNOWN,
        /** At least one create went unseen: the view can no longer tell what precedes a node. */
        MISSED,
        /** A child the count cannot place (not a sequence node, counted but not held, parent unknown): read again. */
        UNCOUNTED
    }

    private final List<SequenceNode> sorted = new ArrayList<>();
    private final Map<String, SequenceNode> byName = new HashMap<>();
    // Protection id -> nodes, so that an attempt finds stray copies of its own creates without a scan.
    private final Map<String, List<SequenceNode>> byId = new HashMap<>();
    // Listed by a read but never seen created: nobody knows yet whether this client may read them, and so whether
    // their deletion will reach it.
    private final Set<String> unconfirmed = new HashSet<>();
    private boolean parentExists;
    // The zxid that created the parent, as a read reported it: which of the paths of this name that were ever made
    // the view shows. 0 while unknown: the parent is missing, or was created since the read.
    private long parentCzxid;
    private long nextSequence; // the count of creates, unsigned; meaningless while the parent is missing

    /**
     * Replaces everything with a read of the parent, whose Stat reported {@code czxid}, {@code cversion} and {@code
     * numChildren}.
     */
    void reset(List<String> children, long czxid, int cversion, int numChildren) {
        clear();
        parentExists = true;
        parentCzxid = czxid;
        nextSequence = (cversion + numChildren) >>> 1; // 2 * creates in 32 bits, halved without its sign
        for (String child : children) {
            SequenceNode.parse(child).ifPresent(node -> {
                sorted.add(node);
                remember(node);
                unconfirmed.add(node.name());
            });
        }
        Collections.sort(sorted);
    }

    /** Replaces everything with a read that found no parent. */
    void resetMissingParent() {
        clear();
    }

    Created created(String child) {
        Optional<SequenceNode> parsed = SequenceNode.parse(child);
        if (!parentExists || parsed.isEmpty()) {
            return Created.UNCOUNTED;
        }
        SequenceNode node = parsed.get();
        long sequence = node.sequence() & 0xFFFF_FFFFL; // past the end, negative numbers come after it
        if (sequence < nextSequence) {
            return contains(node) ? Created.KNOWN : Created.UNCOUNTED;
        }
        if (sequence > nextSequence) {
            return Created.MISSED;
        }
        nextSequence++;
        index(node);
        return Created.ADDED;
    }

    /** Forgets the child; returns its node, or empty if the view did not hold it. */
    Optional<SequenceNode> deleted(String child) {
        SequenceNode node = byName.remove(child);
        if (node == null) {
            return Optional.empty();
        }
        int i = Collections.binarySearch(sorted, node);
        if (i >= 0) {
            sorted.remove(i);
        }
        node.protectionId().ifPresent(id -> {
            List<SequenceNode> same = byId.get(id);
            if (same != null && same.remove(node) && same.isEmpty()) {
                byId.remove(id);
            }
        });
        unconfirmed.remove(child);
        return Optional.of(node);
    }

    /** The parent was created: sequences start at 0. False if the view thought it existed (read again). */
    boolean parentCreated() {
        if (parentExists) {
            return false;
        }
        clear();
        parentExists = true;
        nextSequence = 0;
        return true;
    }

    /** The parent was deleted, and every child with it: returns the children the view held. */
    List<SequenceNode> parentDeleted() {
        List<SequenceNode> gone = List.copyOf(sorted);
        clear();
        return gone;
    }

    /** The zxid that created the parent, if a read told it and no event since said the parent went; else 0. */
    long parentCzxid() {
        return parentCzxid;
    }

    boolean contains(SequenceNode node) {
        return node.equals(byName.get(node.name()));
    }

    /** Where {@code node} sits in sequence order, or -1 if the view does not hold it. */
    int indexOf(SequenceNode node) {
        int i = Collections.binarySearch(sorted, node);
        return i >= 0 ? i : -1;
    }

    /** The nodes up to and including index {@code last}: a live view, valid until the next change. */
    List<SequenceNode> upTo(int last) {
        return Collections.unmodifiableList(sorted.subList(0, last + 1));
    }

    /** Every node named with {@code _c_<id>-}. */
    List<SequenceNode> withId(String id) {
        return List.copyOf(byId.getOrDefault(id, List.of()));
    }

    /** How many nodes are named with {@code _c_<id>-}. */
    int countWithId(String id) {
        return byId.getOrDefault(id, List.of()).size();
    }

    int size() {
        return sorted.size();
    }

    /** The lowest node, if any. */
    Optional<SequenceNode> first() {
        return sorted.isEmpty() ? Optional.empty() : Optional.of(sorted.get(0));
    }

    boolean isConfirmed(String name) {
        return !unconfirmed.contains(name);
    }

    /** This client may read the node, so its deletion will reach the view. */
    void confirm(String name) {
        unconfirmed.remove(name);
    }

    /** The nodes held whose readability is not known yet. */
    List<SequenceNode> unconfirmed() {
        List<SequenceNode> list = new ArrayList<>(unconfirmed.size());
        for (String name : unconfirmed) {
            list.add(byName.get(name));
        }
        return list;
    }

    /** Adds a node created after the read: last, unless named the same as one at the count's end. */
    private void index(SequenceNode node) {
        int at = Collections.binarySearch(sorted, node);
        sorted.add(at < 0 ? -at - 1 : at, node);
        remember(node);
    }

    private void remember(SequenceNode node) {
        byName.put(node.name(), node);
        node.protectionId()
                .ifPresent(
                        id -> byId.computeIfAbsent(id, k -> new ArrayList<>(1)).add(node));
    }

    private void clear() {
        parentCzxid = 0;
        sorted.clear();
        byName.clear();
        byId.clear();
        unconfirmed.clear();
        parentExists = false;
        nextSequence = 0;
    }

    /** For diagnostics. */
    @Override
    public String toString() {
        return "ViewNodes[" + sorted.size() + " nodes, next=" + nextSequence + ", unconfirmed=" + unconfirmed.size()
                + "]";
    }

    /** Names of every node held, for tests and diagnostics. */
    Set<String> names() {
        return new HashSet<>(byName.keySet());
    }
}
