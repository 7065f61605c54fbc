package io.coord.it;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The books of an at-least-once queue run. Every delivery of an item through a claim is counted, and so is every
 * time a consumer gave one up without acking it (it released the claim, or died holding it). It records a breach the
 * moment it happens: an item handed out while a live claim still holds it, an item handed out after its ack, an ack
 * that failed on a live claim, or one that succeeded on a dead one. All checks run under one lock.
 */
final class QueueClaimLedger {
    private final Timeline timeline;
    private final Set<String> items;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private final Map<String, String> holders = new HashMap<>();
    private final Map<String, Integer> deliveries = new HashMap<>();
    private final Map<String, Integer> givenUp = new HashMap<>();
    private final Map<String, Integer> acks = new HashMap<>();
    private final List<String> violations = new ArrayList<>();

    /** {@code items}: everything the producer will put, each exactly once. */
    QueueClaimLedger(Timeline timeline, List<String> items) {
        this.timeline = timeline;
        this.items = Set.copyOf(items);
    }

    void delivered(String consumer, String item) {
        lock.lock();
        try {
            String holder = holders.get(item);
            if (holder != null) {
                breach(item + " was claimed by " + consumer + " while " + holder + " still held it");
            }
            if (acks.containsKey(item)) {
                breach(item + " was claimed by " + consumer + " after it had been acked");
            }
            if (!items.contains(item)) {
                breach(item + " was claimed by " + consumer + " but never produced");
            }
            holders.put(item, consumer);
            deliveries.merge(item, 1, Integer::sum);
        } finally {
            lock.unlock();
        }
    }

    /** Called before the consumer releases the claim or dies holding it: from here on another may get the item. */
    void givingUp(String consumer, String item, String how) {
        lock.lock();
        try {
            holders.remove(item);
            givenUp.merge(item, 1, Integer::sum);
            timeline.add(consumer + " gives up " + item + ": " + how);
        } finally {
            lock.unlock();
        }
    }

    /** The answer of ack() on a claim that is still alive: it must be true. */
    void acked(String consumer, String item, boolean answer) {
        lock.lock();
        try {
            if (!answer) {
                breach("ack of " + item + " by " + consumer + " returned false on a live claim");
                return;
            }
            holders.remove(item);
            acks.merge(item, 1, Integer::sum);
        } finally {
            lock.unlock();
        }
    }

    /** The answer of ack() after the claimer died: it must be false. */
    void ackedAfterDeath(String consumer, String item, boolean answer, String how) {
        if (answer) {
            breach("ack of " + item + " by " + consumer + " returned true after " + how);
        }
    }

    void failed(String consumer, Exception e) {
        breach(consumer + " failed: " + e);
    }

    boolean allAcked() {
        lock.lock();
        try {
            return acks.size() == items.size();
        } finally {
            lock.unlock();
        }
    }

    int ackedCount() {
        lock.lock();
        try {
            return acks.size();
        } finally {
            lock.unlock();
        }
    }

    /** Deliveries beyond the first of each item. */
    int redeliveries() {
        lock.lock();
        try {
            return deliveries.values().stream().mapToInt(n -> n - 1).sum();
        } finally {
            lock.unlock();
        }
    }

    int givenUpCount() {
        lock.lock();
        try {
            return givenUp.values().stream().mapToInt(Integer::intValue).sum();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The breaches recorded while running, then per item: acked exactly once, and delivered once more for each time
     * it was given up, never again without that.
     */
    List<String> violations() {
        lock.lock();
        try {
            List<String> all = new ArrayList<>(violations);
            for (String item : items) {
                int acked = acks.getOrDefault(item, 0);
                int delivered = deliveries.getOrDefault(item, 0);
                int dropped = givenUp.getOrDefault(item, 0);
                if (acked != 1) {
                    all.add(item + " was acked " + acked + " times (delivered " + delivered + ", given up " + dropped
                            + ")");
                } else if (delivered != dropped + 1) {
                    all.add(item + " was delivered " + delivered + " times but given up only " + dropped);
                }
            }
            return all;
        } finally {
            lock.unlock();
        }
    }

    private void breach(String what) {
        lock.lock();
        try {
            violations.add(timeline.at(System.nanoTime()) + " " + what);
            timeline.add("VIOLATION: " + what);
        } finally {
            lock.unlock();
        }
    }
}
