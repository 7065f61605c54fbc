package io.coord.queue;

import io.coord.core.SequenceNode;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The item names the consumers of one path in one client still have to try, in sequence order, and the names held
 * out of play. Each name is handed to one local consumer at a time. A name is held out while a local consumer tries
 * it, while another client's claim on it is watched, while a claim of ours holds it, and while our claim on it is
 * being deleted; a children read never brings such a name back.
 */
final class NameCache {
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private final TreeSet<SequenceNode> candidates = new TreeSet<>();
    private final Set<String> attempting = new HashSet<>();
    private final Set<String> claimedElsewhere = new HashSet<>();
    private final Map<String, Long> heldHere = new HashMap<>();
    private final Set<String> releasing = new HashSet<>();
    private final Set<String> seenClaimed = new HashSet<>();
    private final Set<String> deferred = new HashSet<>();

    /** Reserves the first name for the caller until {@link #attempted}; null when none is cached. */
    String next() {
        lock.lock();
        try {
            SequenceNode head = candidates.pollFirst();
            if (head == null) {
                return null;
            }
            attempting.add(head.name());
            return head.name();
        } finally {
            lock.unlock();
        }
    }

    /** The first name, left in place (for peek). */
    String head() {
        lock.lock();
        try {
            return candidates.isEmpty() ? null : candidates.first().name();
        } finally {
            lock.unlock();
        }
    }

    boolean isEmpty() {
        lock.lock();
        try {
            return candidates.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    /** An attempt on {@code name} is over; names that stepped aside for it come back. */
    void attempted(String name) {
        lock.lock();
        try {
            attempting.remove(name);
            for (Iterator<String> it = deferred.iterator(); it.hasNext(); ) {
                String stepped = it.next();
                if (!stepped.equals(name)) {
                    candidates.add(Layout.node(stepped));
                    it.remove();
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** The item is gone. */
    void forget(String name) {
        lock.lock();
        try {
            candidates.remove(Layout.node(name));
        } finally {
            lock.unlock();
        }
    }

    /**
     * A claim attempt found the name claimed. The first time, while other names remain, the claim most likely
     * belongs to a consumer taking the item right now: the name steps aside for one attempt on the next name, then
     * comes back at the head. Returns false if the caller should ask who holds the claim instead.
     */
    boolean deferOnFirstSighting(String name) {
        lock.lock();
        try {
            if (seenClaimed.add(name) && !candidates.isEmpty()) {
                deferred.add(name);
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** The name was taken, by us or by someone else: forget that it was ever seen claimed. */
    void settled(String name) {
        lock.lock();
        try {
            seenClaimed.remove(name);
        } finally {
            lock.unlock();
        }
    }

    /** Holds a name out before asking, with a watch, who holds its claim; the watch brings it back. */
    void watchClaim(String name) {
        lock.lock();
        try {
            candidates.remove(Layout.node(name));
            claimedElsewhere.add(name);
        } finally {
            lock.unlock();
        }
    }

    /** The claim is gone, or turned out ours. Returns true if the name came back into play. */
    boolean unwatchClaim(String name, boolean requeue) {
        lock.lock();
        try {
            boolean requeued = claimedElsewhere.remove(name) && requeue;
            if (requeued) {
                candidates.add(Layout.node(name));
            }
            return requeued;
        } finally {
            lock.unlock();
        }
    }

    void holdHere(String name, long session) {
        lock.lock();
        try {
            heldHere.put(name, session);
        } finally {
            lock.unlock();
        }
    }

    void dropHeld(String name) {
        lock.lock();
        try {
            heldHere.remove(name);
        } finally {
            lock.unlock();
        }
    }

    /** Our claim on the name is being deleted: it comes back only once the delete is confirmed. */
    void releasing(String name) {
        lock.lock();
        try {
            heldHere.remove(name);
            releasing.add(name);
        } finally {
            lock.unlock();
        }
    }

    void released(String name) {
        lock.lock();
        try {
            if (releasing.remove(name)) {
                candidates.add(Layout.node(name));
            }
        } finally {
            lock.unlock();
        }
    }

    /** Adds the listed names not held out. Returns true if any was new. */
    boolean merge(List<String> children, long session) {
        boolean added = false;
        lock.lock();
        try {
            seenClaimed.retainAll(children); // forget items that are gone
            deferred.clear(); // listed ones come back below, the others are gone
            for (String child : children) {
                if (attempting.contains(child) || claimedElsewhere.contains(child) || releasing.contains(child)) {
                    continue;
                }
                Long holder = heldHere.get(child);
                if (holder != null && holder == session) {
                    continue; // a claim of an older session died with it: the name is free again
                }
                added |= Layout.parse(child).map(candidates::add).orElse(false);
            }
        } finally {
            lock.unlock();
        }
        return added;
    }

    /** The session ended: the watches on other clients' claims and our own claims died with it. */
    void sessionEnded() {
        lock.lock();
        try {
            requeue(claimedElsewhere);
            requeue(releasing);
            requeue(heldHere.keySet());
        } finally {
            lock.unlock();
        }
    }

    // Guarded by lock.
    private void requeue(Set<String> names) {
        names.forEach(n -> candidates.add(Layout.node(n)));
        names.clear();
    }
}
